# C types for links.py when built by emulator.speedups (see there).
cimport cython

from emulator.sim.engine cimport Component, Engine, Landing
from emulator.targets.builtin.dataplane cimport DataPlane, PortState
from emulator.traffic.agent.nic cimport Nic
from emulator.traffic.agent.timers cimport TimerHeap

cdef class Link


cdef class SwitchNode(Component):
    cdef public DataPlane dataplane

    cpdef double next_time(self) except? -1.0
    cpdef wake(self, double now)


cdef class AgentNode(Component):
    cdef public object agent
    cdef public TimerHeap timers
    cdef public list nics, nic_times
    cdef public object touched

    @cython.locals(nic=Nic, times=list, i=Py_ssize_t)
    cpdef double next_time(self) except? -1.0
    @cython.locals(nic=Nic, times=list, i=Py_ssize_t)
    cpdef wake(self, double now)


cdef class SwitchReceive:
    cdef public DataPlane dataplane
    cdef public PortState port


cdef class _End(Landing):
    cdef public object name
    cdef public Link link
    cdef public Engine engine
    cdef public object peer_receive
    cdef public object pcap, key
    cdef public double delay_s

    @cython.locals(switch=SwitchReceive)
    cpdef land(self, object frame, object epoch, double now)


cdef class PortEnd(_End):
    @cython.locals(link=Link, engine=Engine)
    cpdef bint send(self, object frame) except -1


cdef class NicEnd(_End):
    cdef public double s_per_byte, free_at, queued_s
    cdef public object overhead_bytes

    @cython.locals(n=cython.Py_ssize_t, now=double, start=double, end=double)
    cpdef bint send(self, object frame) except -1


cdef class Link:
    cdef public object name
    cdef public double delay_s
    cdef public bint up
    cdef public long long epoch, lost_in_flight
    cdef public list ends

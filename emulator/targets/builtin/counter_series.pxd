# C types for counter_series.py when built by emulator.speedups (see there).
cimport cython

from emulator.targets.builtin.pfc cimport PauseTimers
from emulator.targets.builtin.ports cimport PortCounters


cdef class CounterSeries:
    cdef public double window_s
    cdef public dict ports, queues, _sig
    cdef public object marks

    @cython.locals(c=PortCounters, pfc=PauseTimers, mask=cython.longlong, horizon=double,
                   first=bint, prio=int, sig=tuple, seen=dict)
    cpdef sample(self, double now, object ports)



cdef _record(dict rings, object key, tuple row, bint first, double horizon)

# C types for nic.py when built by emulator.speedups (see there).
cimport cython

from emulator.traffic.agent.pacing cimport Pacer
from emulator.traffic.agent.pfc cimport PauseState
from emulator.traffic.agent.qp cimport QueuePair
from emulator.traffic.agent.stats cimport NicCounters, SeriesClock


cdef class Nic:
    cdef public object config, io, check_icrc, wall
    cdef public Pacer pacer
    cdef public PauseState pause
    cdef public SeriesClock series_clock
    cdef public NicCounters counters
    cdef public list qps
    cdef public dict qp_by_num
    cdef public Py_ssize_t _rr
    cdef public list _ctrl
    cdef public long long _ctrl_mask
    cdef public object _request_opcodes
    cdef public dict _ext_bytes
    cdef public object _ip_bytes, _flush, storm

    cpdef send_control(self, object frame, int priority)
    @cython.locals(pause=PauseState, pacer=Pacer, counters=NicCounters, qp=QueuePair,
                   qp_pacer=Pacer, paused=cython.longlong, priority=int)
    cpdef int service(self, double now) except -1
    @cython.locals(qps=list, n=Py_ssize_t, paused=cython.longlong, qp=QueuePair,
                   start=Py_ssize_t, i=Py_ssize_t, j=Py_ssize_t)
    cpdef object _pick(self, double now)
    @cython.locals(paused=cython.longlong, qp=QueuePair, pacer=Pacer)
    cpdef object next_tx_time(self)
    @cython.locals(c=NicCounters, n=Py_ssize_t, qp=QueuePair)
    cpdef on_frame(self, object frame, double now)

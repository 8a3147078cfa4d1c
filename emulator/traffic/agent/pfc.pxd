# C types for pfc.py when built by emulator.speedups (see there).

cimport cython

cdef class PauseState:
    cdef public object line_rate_bps, resumed_at
    cdef public long long honoured_mask, mask, resumed_mask
    cdef public list ended, until, since, paused_s, pauses, resumes, intervals
    cdef public object frames, max_intervals, intervals_dropped

    cpdef expire(self, double now)
    @cython.locals(mask=cython.longlong, t=double, until=list, p=int)
    cpdef double next_expiry(self)
    cpdef _resume(self, int priority, object at)
    cpdef double total_paused_s_of(self, int priority, double now) except? -1.0

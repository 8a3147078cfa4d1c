# C types for pfc.py when built by emulator.speedups (see there).

cdef class PauseState:
    cdef public object line_rate_bps, resumed_at
    cdef public long long honoured_mask, mask, resumed_mask
    cdef public list ended, until, since, paused_s, pauses, resumes, intervals
    cdef public object frames, max_intervals, intervals_dropped

    cpdef expire(self, double now)
    cpdef _resume(self, int priority, object at)
    cpdef double total_paused_s_of(self, int priority, double now) except? -1.0

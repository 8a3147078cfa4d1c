# C types for pfc.py when built by emulator.speedups (see there).

cdef class PauseTimers:
    cdef public long long mask
    cdef public list until
    cdef public list since
    cdef public list paused_s

    cpdef bint pause(self, int priority, double until, double now) except -1
    cpdef bint resume(self, int priority, double now) except -1
    cpdef bint expired(self, int priority, double until) except -1

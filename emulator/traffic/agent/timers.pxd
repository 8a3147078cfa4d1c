# C types for timers.py when built by emulator.speedups (see there).

cdef class Timer:
    cdef public object when
    cdef public list _entry


cdef class TimerHeap:
    cdef public list heap
    cdef public long long _seq

    cpdef Timer schedule(self, object when, object callback)
    cpdef object next_time(self)
    cpdef int run_due(self, object now) except -1

# C types for pacing.py when built by emulator.speedups (see there).

cdef class Pacer:
    cdef public object rate_bps, overhead_bytes, max_lag_s, given_up_events
    cdef public double free_at, _s_per_byte, given_up_s, _scheduled

    cpdef double consume(self, object frame_bytes, double now) except? -1.0
    cpdef resume_at(self, double t)

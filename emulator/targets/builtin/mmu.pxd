# C types for mmu.py when built by emulator.speedups (see there).

cdef class PgAccount:
    cdef public object port
    cdef public long long lossless
    cdef public list shared, headroom_used, xoff, xon_offset, alpha, headroom
    cdef public object quanta
    cdef public double refresh_s
    cdef public long long xoff_on
    cdef public list xoff_sent_at, max_bytes, max_headroom, drops, xoff_frames, xon_frames


cdef class SwitchBuffer:
    cdef public object pool_bytes
    cdef public list alpha
    cdef public object shared_bytes, headroom_bytes, total_bytes
    cdef public long long used, headroom_in_use, max_used, max_headroom_in_use

    cpdef int admit_lossless(self, PgAccount acc, int prio, object length) except? -2
    cpdef bint admit_lossy(self, object depth_bytes, object length, int prio,
                           object cap_bytes) except -1
    cpdef charge(self, PgAccount acc, int prio, object length)
    cpdef bint release(self, PgAccount acc, int prio, object length) except -1
    cpdef bint xon_due(self, PgAccount acc, int prio) except -1

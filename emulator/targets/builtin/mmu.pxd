# C types for mmu.py when built by emulator.speedups (see there).
#
# An account's per-priority bytes and thresholds, and the pool's alphas, are
# C arrays of NUM_PRIORITIES (8): one cache line each, no int object per
# update. From Python (uncompiled code, tests) such an attribute reads as a
# new list and is set whole (acc.shared = [...]); an item set on that list
# (acc.shared[3] = x) would change the copy only: only this module's code,
# where they are C arrays, writes their items.
cimport cython

cdef class PgAccount:
    cdef public object port
    cdef public long long lossless
    cdef public long long shared[8]
    cdef public long long headroom_used[8]
    cdef public long long xoff[8]
    cdef public long long xon_offset[8]
    cdef public long long headroom[8]
    cdef public long long max_bytes[8]
    cdef public long long max_headroom[8]
    cdef public long long drops[8]
    cdef public double alpha[8]
    cdef public object quanta
    cdef public double refresh_s
    cdef public long long xoff_on
    cdef public list xoff_sent_at, xoff_frames, xon_frames


cdef class SwitchBuffer:
    cdef public object pool_bytes
    cdef public double alpha[8]
    cdef public object shared_bytes, headroom_bytes, total_bytes
    cdef public long long used, headroom_in_use, max_used, max_headroom_in_use

    @cython.locals(shared=cython.longlong, alpha=cython.double, limit=cython.double,
                   used=cython.longlong, held=cython.longlong, hr=cython.longlong,
                   in_use=cython.longlong)
    cpdef int admit_lossless(self, PgAccount acc, int prio, long long length) except? -2
    @cython.locals(free=cython.longlong, after=cython.longlong)
    cpdef bint admit_lossy(self, object depth_bytes, long long length, int prio,
                           object cap_bytes) except -1
    @cython.locals(used=cython.longlong, held=cython.longlong)
    cpdef charge(self, PgAccount acc, int prio, long long length)
    @cython.locals(hr=cython.longlong, take=cython.longlong)
    cpdef bint release(self, PgAccount acc, int prio, long long length) except -1
    @cython.locals(shared=cython.longlong, alpha=cython.double, limit=cython.double)
    cpdef bint xon_due(self, PgAccount acc, int prio) except -1

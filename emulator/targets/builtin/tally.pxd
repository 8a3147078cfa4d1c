# C types for tally.py when built by emulator.speedups (see there).

cdef class LatenessTally:
    cdef public dict counts
    cdef public long long on_time
    cdef public object _histogram

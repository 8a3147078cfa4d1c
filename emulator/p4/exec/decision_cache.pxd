# C types for decision_cache.py when built by emulator.speedups (see there);
# the compiled driver cimports the cache to read its entries and counts in C.

cdef class DecisionCache:
    cdef public object read, read_key, _make_writer, paths, key_paths
    cdef public dict entries, _writers
    cdef public long long hits, misses

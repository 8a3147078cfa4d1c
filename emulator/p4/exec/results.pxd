# C types for results.py when built by emulator.speedups (see there); the
# data plane and a program's compiled module cimport them. Made and dropped
# once or twice a packet: each keeps a free list (declared in results.py:
# Cython ignores a free list a .pxd declares for a class of a .py).
cimport cython

cdef class Output:
    cdef public object port, data, instance_type, priority


cdef class QueueInfo:
    cdef public long long enq_qdepth, deq_qdepth
    cdef public object enq_timestamp_us
    cdef public int lent_refs


cdef class EgressItem:
    cdef public object port, priority, length, pkt


cdef class ProcessResult:
    cdef public object outputs, dropped, digests, logs, queued, recirculate

# C types for results.py when built by emulator.speedups (see there); the
# data plane and a program's compiled module cimport them. Made and dropped
# once or twice a packet: each keeps a free list.
cimport cython

@cython.freelist(32)
cdef class Output:
    cdef public object port, data, instance_type, priority


@cython.freelist(32)
cdef class QueueInfo:
    cdef public object enq_qdepth, deq_qdepth, enq_timestamp_us


@cython.freelist(32)
cdef class EgressItem:
    cdef public object port, priority, length, pkt


@cython.freelist(32)
cdef class ProcessResult:
    cdef public object outputs, dropped, digests, logs, queued, recirculate

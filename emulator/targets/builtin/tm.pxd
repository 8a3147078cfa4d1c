# C types for tm.py when built by emulator.speedups (see there).
cimport cython


cdef class QueueCounters:
    cdef public long long received, enqueued, tail_dropped, dequeued, egress_out
    cdef public long long egress_dropped, recirculated, tx_packets, tx_bytes, tx_errors
    cdef public long long max_depth_packets, max_depth_bytes, pfc_rx, pfc_tx


cdef class PortQueues:
    cdef public list queues
    cdef public list depth_bytes
    cdef public list counters
    cdef public long long nonempty
    cdef public object buffer_bytes

    cpdef reject(self, int priority)
    @cython.locals(counters=QueueCounters, depth=cython.longlong)
    cpdef enqueue(self, int priority, object length, object item, object pipeline, double enq_t,
                  object enq_us, object account)
    @cython.locals(eligible=cython.longlong, priority=int, qc=QueueCounters)
    cpdef object dequeue(self, long long paused_mask)

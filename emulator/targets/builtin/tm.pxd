# C types for tm.py when built by emulator.speedups (see there).
cimport cython

from emulator.targets.builtin.pfc cimport PauseTimers


cdef class QueueCounters:
    cdef public long long received, enqueued, tail_dropped, dequeued, egress_out
    cdef public long long egress_dropped, recirculated, tx_packets, tx_bytes, tx_errors
    cdef public long long max_depth_packets, max_depth_bytes, pfc_rx, pfc_tx


cdef class QueueEntry:
    cdef public object item, pipeline, enq_us, account
    cdef public double enq_t
    cdef public long long depth, length
    cdef public int priority


cdef class PortQueues:
    cdef public list queues
    cdef public list depth_bytes
    cdef public list counters
    cdef public long long nonempty
    cdef public object buffer_bytes

    cpdef reject(self, int priority)
    @cython.locals(counters=QueueCounters, depth=cython.longlong, entry=QueueEntry)
    cpdef enqueue(self, int priority, object length, object item, object pipeline, double enq_t,
                  object enq_us, object account)
    @cython.locals(eligible=cython.longlong, priority=int, qc=QueueCounters, entry=QueueEntry)
    cpdef QueueEntry dequeue(self, long long paused_mask)


cdef class QueueSeries:
    cdef public double interval_s, window_s, next_t
    cdef public dict series, _seen
    cdef public object buffer, counts

    @cython.locals(tm=PortQueues, qc=QueueCounters, pfc=PauseTimers, mask=cython.longlong,
                   busy_mask=cython.longlong, prio=int, busy=bint, paused=bint, horizon=double,
                   next_t=double)
    cpdef sample(self, double now, object ports, object buffer=*)

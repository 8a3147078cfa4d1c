# C types for dataplane.py when built by emulator.speedups (see there).
cimport cython

from emulator.p4.exec.results cimport EgressItem, Output, ProcessResult, QueueInfo
from emulator.targets.builtin.eventheap cimport EventHeap
from emulator.targets.builtin.mmu cimport PgAccount, SwitchBuffer
from emulator.targets.builtin.pfc cimport PauseTimers
from emulator.targets.builtin.ports cimport PortCounters
from emulator.targets.builtin.tally cimport LatenessTally
from emulator.targets.builtin.tm cimport PortQueues, QueueCounters, QueueEntry

# the kinds of timers: C constants (compared in C in run_due)
cdef int TX_DONE, DELIVER, PAUSE_END, ARRIVE, PFC_REFRESH


cdef class PortState:
    cdef public object number, backend, config
    cdef public PortCounters counters
    cdef public PortQueues tm
    cdef public PauseTimers pfc
    cdef public bint busy, kicking
    cdef public double free_at, delay_s, wait_s, given_up_s, rx_free_at
    cdef public object rate_bps, overhead, rx_link, pfc_src
    cdef public double frame_us
    cdef public long long pfc_enabled, given_up_events, arriving
    cdef public object pcap_in, pcap_out, ctrl
    cdef public LatenessTally lateness
    cdef public PgAccount pg
    cdef public QueueCounters ctrl_qc
    cdef public QueueInfo queue_info


cdef class DataPlane:
    cdef public int priority_queues
    cdef public object clock, log, pipeline, _pipe_clock_us, digest_handler
    cdef object _methods_of, _pipe_ingress, _pipe_egress
    cdef int _lent_refs
    cdef public bint pfc_to_pipeline
    cdef public dict ports
    cdef public dict drops
    cdef public long long digests, errors
    cdef public EventHeap _timers
    cdef public object _recirc
    cdef public SwitchBuffer buffer
    cdef public object series, behind
    cdef public QueueInfo _idle_queue
    cdef public double _behind_scale
    cdef public long long _behind_bin
    cdef public list _behind_row

    @cython.locals(counters=PortCounters, n=cython.Py_ssize_t, start=double, free_at=double,
                   rate=double, nbits=cython.longlong)
    cpdef rx(self, PortState ps, object frame, double now, int lent_refs=*)
    @cython.locals(res=ProcessResult)
    cpdef _ingress(self, PortState ps, object port, object frame, object instance_type,
                   object preserved, double now)
    @cython.locals(ps=PortState, prio=int, tm=PortQueues, buf=SwitchBuffer, acc=PgAccount,
                   got=int, qc=QueueCounters)
    cpdef _enqueue(self, EgressItem item, object pipe, double now, PortState src)
    @cython.locals(tm=PortQueues, pfc=PauseTimers, buf=SwitchBuffer, prio=int, acc=PgAccount,
                   info=QueueInfo, got=QueueEntry, enq_t=double)
    cpdef _kick(self, PortState ps, double t, double now)
    @cython.locals(acc=PgAccount, qc=QueueCounters)
    cpdef _pfc_send(self, PortState ps, int prio, object quanta, double now)
    @cython.locals(res=ProcessResult, first=Output)
    cpdef _start(self, PortState ps, QueueCounters qc, object item, object pipe, QueueInfo info,
                 double t, double now, PortState src)
    @cython.locals(start=double, lag=double, end=double, rate=double, nbits=cython.longlong)
    cpdef _wire(self, PortState ps, QueueCounters qc, object frame, double t, double now)
    @cython.locals(now=double, late_s=double, late_us=cython.longlong, counts=dict, row=list,
                   counters=PortCounters, n=Py_ssize_t, bin_index=cython.longlong)
    cpdef _transmit(self, PortState ps, QueueCounters qc, object frame, double due)
    cpdef _push(self, double when, int kind, PortState ps, object a, object b)
    @cython.locals(timers=EventHeap)
    cpdef object next_deadline(self)
    @cython.locals(timers=EventHeap, when=double, kind=int, ps=PortState, acc=PgAccount)
    cpdef run_due(self, object now=*)

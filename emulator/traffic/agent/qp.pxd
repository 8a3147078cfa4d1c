# C types for qp.py when built by emulator.speedups (see there).
cimport cython

from emulator.traffic.agent.frames cimport QpFrames
from emulator.traffic.agent.pacing cimport Pacer
from emulator.traffic.agent.stats cimport QpCounters, QpSeries
from emulator.traffic.agent.timers cimport TimerHeap


cdef class Message:
    cdef public object id, op, codes, size, npkts, first_seq, posted_at, first_tx_at


cdef class QueuePair:
    cdef public object config, qpn, remote_qpn, priority, cnp_priority, nic, log, wall
    cdef public TimerHeap timers
    cdef public QpCounters counters
    cdef public QpSeries series
    cdef public object mtu, ack_req_every, ack_every, max_outstanding
    cdef public object data_flow, ack_flow, cnp_flow
    cdef public QpFrames frames
    cdef public object _ack_syndrome, psn0, msgs, una, snd, max_sent, end_seq, _tx_index
    cdef public object _next_msg_id, error, srtt, rttvar, base_rto_s, rto_s, rto_at, retries
    cdef public object _rto_timer, _rtt_seq, _last_ack_req, _rtt_sent_at, _rto_paused0, scaled
    cdef public Pacer pacer
    cdef public object _dcqcn_timer, epsn, msn, nak_sent, _since_ack, _rx_msg, cnp_gate
    cdef public object _cnp_timer, rp

    cpdef bint has_tx(self) except -1
    @cython.locals(msg=Message, c=QpCounters, pacer=Pacer)
    cpdef bytes next_frame(self, double now)
    @cython.locals(c=QpCounters)
    cpdef on_ack(self, object psn, object syndrome, double now)
    @cython.locals(c=QpCounters)
    cpdef on_request(self, object opcode, object psn, object ack_req, object ecn,
                     object payload_len, double now)
    @cython.locals(c=QpCounters, msg=Message)
    cpdef _acknowledge(self, object new_una, double now)
    cpdef _arm_rto(self, object at, double now)

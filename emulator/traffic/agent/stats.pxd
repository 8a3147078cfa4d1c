# C types for stats.py when built by emulator.speedups (see there).

cdef class QpCounters:
    cdef public object bytes_posted, messages_posted, messages_completed, messages_failed
    cdef public object packets_sent, first_tx_packets, retransmit_packets, bytes_sent
    cdef public object payload_bytes_sent, payload_bytes_first_tx, bytes_acked
    cdef public object acks_rx, naks_rx, naks_seq_rx, stale_acks_rx, timeouts
    cdef public object retry_exceeded, go_back_n, cnps_rx, rtt_samples
    cdef public object data_packets_rx, accepted_packets, payload_bytes_rx
    cdef public object duplicate_packets, out_of_order_packets, opcode_errors
    cdef public object messages_rx, acks_sent, naks_sent, ce_packets_rx, cnps_sent
    cdef public object cnps_suppressed, cnps_deferred


cdef class NicCounters:
    cdef public object tx_packets, tx_bytes, tx_errors, rx_packets, rx_bytes, roce_rx
    cdef public object pfc_rx, other_rx, not_for_us_rx, unknown_qp_rx, bad_icrc_rx
    cdef public object malformed_rx, mac_control_other_rx, pfc_tx, pfc_storm_frames


cdef class SeriesClock:
    cdef public double t0, bin_s
    cdef public object max_bins, coarsenings
    cdef public list _series


cdef class QpSeries:
    cdef public SeriesClock clock
    cdef public tuple bins

    cpdef add(self, int kind, double now, object amount)


cdef class MessageLog:
    cdef public object max_records, sent, received, dropped, listeners

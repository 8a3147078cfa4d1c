# C types for ports.py when built by emulator.speedups (see there).

cdef class PortCounters:
    cdef public long long rx_packets, rx_bytes, tx_packets, tx_bytes
    cdef public long long pfc_rx_frames, pfc_tx_frames
    cdef public dict drops

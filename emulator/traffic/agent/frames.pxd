# C types for frames.py when built by emulator.speedups (see there).

cdef class QpFrames:
    cdef public object data_flow, dest_qp, mtu, va, rkey
    cdef public dict _shapes, _tables
    cdef public object _ack_head, _ack_state, cnp_frame

    cpdef bytes data(self, object opcode, object psn, object plen, object ack_req,
                     object dma_len=*)
    cpdef bytes ack(self, object psn, object msn, object syndrome)

"""RETH: RDMA extended transport header (virtual address, R_Key, DMA length).

Carried by the first or only packet of an RDMA WRITE and by an RDMA READ
request (IBA vol. 1, chapter 9). 16 bytes.
"""

from __future__ import annotations

from scapy.fields import IntField, XIntField, XLongField
from scapy.packet import Packet

from emulator.traffic.layers.immdt import ImmDt, immdt_follows


class RETH(Packet):
    name = "RETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        IntField("dma_len", 0),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if immdt_follows(self):
            return ImmDt
        return super().guess_payload_class(payload)

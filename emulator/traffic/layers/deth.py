"""DETH: datagram extended transport header (Q_Key, source QP) of UD packets.

8 bytes: Q_Key (32), reserved (8), source QP (24) (IBA vol. 1, chapter 9).
"""

from __future__ import annotations

from scapy.fields import ByteField, XBitField, XIntField
from scapy.packet import Packet

from emulator.traffic.layers.immdt import ImmDt, immdt_follows


class DETH(Packet):
    name = "DETH"
    fields_desc = [
        XIntField("qkey", 0),
        ByteField("reserved", 0),
        XBitField("src_qp", 0, 24),
    ]

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        if immdt_follows(self):
            return ImmDt
        return super().guess_payload_class(payload)

"""ImmDt: the 4-byte immediate data of SEND and RDMA WRITE "with immediate".

It follows the BTH, or the RETH (RDMA WRITE ONLY with immediate), or the DETH
(UD SEND ONLY with immediate). Which one is decided by the BTH opcode, so the
layers it follows look the opcode up with :func:`immdt_follows`.
"""

from __future__ import annotations

from scapy.contrib.roce import BTH
from scapy.fields import XIntField
from scapy.packet import Packet

from emulator.traffic.layers.opcodes import EXT_HEADERS, ExtHeader


class ImmDt(Packet):
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


def immdt_follows(layer: Packet) -> bool:
    """Whether the opcode of the BTH under ``layer`` puts an ImmDt after it.

    Used by the RETH and DETH dissectors: a Scapy binding can only test the
    fields of the layer itself, and the opcode lives in the BTH below.
    """
    under = layer.underlayer
    while under is not None and not isinstance(under, BTH):
        under = under.underlayer
    if under is None:
        return False
    return ExtHeader.IMMDT in EXT_HEADERS.get(under.opcode, ())

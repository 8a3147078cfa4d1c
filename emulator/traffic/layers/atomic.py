"""Atomic operations: AtomicETH (request) and AtomicAckETH (response).

AtomicETH, 28 bytes: virtual address (64), R_Key (32), swap-or-add data (64),
compare data (64); carried by COMPARE SWAP and FETCH ADD. AtomicAckETH,
8 bytes: the original remote data; it follows the AETH of an ATOMIC
ACKNOWLEDGE (IBA vol. 1, chapter 9).
"""

from __future__ import annotations

from scapy.contrib.roce import AETH
from scapy.fields import XIntField, XLongField
from scapy.packet import Packet


class AtomicETH(Packet):
    name = "AtomicETH"
    fields_desc = [
        XLongField("va", 0),
        XIntField("rkey", 0),
        XLongField("swap_data", 0),
        XLongField("cmp_data", 0),
    ]


class AtomicAckETH(Packet):
    name = "AtomicAckETH"
    fields_desc = [XLongField("orig_remote_data", 0)]


class AtomicAckAETH(AETH):
    """Scapy's AETH as it appears in an ATOMIC ACKNOWLEDGE.

    A Scapy binding sees only the AETH's own fields, so it cannot tell an
    atomic ACK (AETH then AtomicAckETH) from a READ response (AETH then data).
    The BTH binds this subclass for the atomic-ACK opcode instead; it matches
    ``pkt[AETH]`` like the parent (``match_subclass``).
    """

    name = "AETH"
    match_subclass = True

    def guess_payload_class(self, payload: bytes) -> type[Packet]:
        return AtomicAckETH

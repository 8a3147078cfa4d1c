"""802.1Qbb priority flow control (PFC) frames, on Scapy's MAC-control layer.

A PFC frame is a MAC control frame (EtherType 0x8808) to 01:80:c2:00:00:01
with opcode 0x0101, a 2-byte priority-enable vector (first byte reserved,
bit n of the second byte enables priority n), eight 2-byte pause times (one
per priority, in quanta of 512 bit times) and zero padding up to the 60-byte
minimum frame (64 with the FCS). An enabled priority with time 0 means XON:
resume at once. ``scapy.contrib.mac_control`` has the layer
(``MACControlClassBasedFlowControl``) and adds the padding itself, but not
the destination address.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping

from scapy.contrib.mac_control import MACControlClassBasedFlowControl
from scapy.layers.l2 import Ether
from scapy.packet import Packet

PFC_DST_MAC = "01:80:c2:00:00:01"
PFC_ETHERTYPE = 0x8808
PFC_OPCODE = 0x0101
PFC_FRAME_BYTES = 60  # without the FCS
NUM_PRIORITIES = 8
MAX_PAUSE_QUANTA = 0xFFFF
BITS_PER_QUANTUM = 512

_BODY = struct.Struct("!HH8H")  # opcode, enable vector, 8 pause times


def pfc_frame(src_mac: str, pause_quanta_by_priority: Mapping[int, int]) -> Ether:
    """A PFC frame from ``src_mac`` that pauses each given priority for its quanta.

    Priorities named in the mapping are enabled in the vector (quanta 0 =
    XON); the others are not enabled and carry time 0.
    """
    if not pause_quanta_by_priority:
        raise ValueError("a PFC frame must name at least one priority")
    fields: dict[str, int] = {}
    for priority, quanta in pause_quanta_by_priority.items():
        if not 0 <= priority < NUM_PRIORITIES:
            raise ValueError(f"PFC priority {priority} is not in 0..7")
        if not 0 <= quanta <= MAX_PAUSE_QUANTA:
            raise ValueError(f"PFC pause time {quanta} quanta is not in 0..65535")
        fields[f"c{priority}_enabled"] = 1
        fields[f"c{priority}_pause_time"] = quanta
    return Ether(dst=PFC_DST_MAC, src=src_mac, type=PFC_ETHERTYPE) / (
        MACControlClassBasedFlowControl(**fields)
    )


def pfc_pause_quanta(frame: Packet | bytes) -> dict[int, int]:
    """Pause time in quanta of each priority the frame enables ({} enables none).

    Takes a dissected Scapy packet or the frame bytes (parsed with struct,
    fast enough for a host's receive loop). Raises ValueError for anything
    that is not a PFC frame.
    """
    if isinstance(frame, Packet):
        layer = frame.getlayer(MACControlClassBasedFlowControl)
        if layer is None:
            raise ValueError("not a PFC frame: no MAC control class-based flow control layer")
        return {
            p: layer.getfieldval(f"c{p}_pause_time")
            for p in range(NUM_PRIORITIES)
            if layer.getfieldval(f"c{p}_enabled")
        }
    if len(frame) < 14 + _BODY.size:
        raise ValueError(f"frame of {len(frame)} bytes is too short for PFC")
    if (frame[12] << 8 | frame[13]) != PFC_ETHERTYPE:
        raise ValueError("not a PFC frame: EtherType is not 0x8808")
    opcode, vector, *times = _BODY.unpack_from(frame, 14)
    if opcode != PFC_OPCODE:
        raise ValueError(f"not a PFC frame: MAC control opcode {opcode:#06x}")
    return {p: times[p] for p in range(NUM_PRIORITIES) if vector >> p & 1}


def pause_duration_s(quanta: int, link_rate_bps: float) -> float:
    """How long ``quanta`` pause quanta last on a link of ``link_rate_bps``."""
    if link_rate_bps <= 0:
        raise ValueError("link rate must be positive")
    return quanta * BITS_PER_QUANTUM / link_rate_bps


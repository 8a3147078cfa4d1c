"""Binds the project's RoCEv2 layers into Scapy, so whole captures dissect.

``scapy.contrib.roce`` already binds UDP destination port 4791 to BTH, the
RC and RD ACKNOWLEDGE opcodes to AETH and the CNP opcode (0x81) to its 16
reserved bytes. This module adds every other RC, UC and UD opcode from
``opcodes.EXT_HEADERS``, so ``Ether(frame)`` gives e.g.
Ether/IP/UDP/BTH/RETH/Raw for an RDMA WRITE FIRST, with the ICRC read as the
BTH's trailer field. Chains of two headers (RETH or DETH then ImmDt, AETH then
AtomicAckETH) are resolved by the first header's dissector.

For building, ``BTH()/RETH()`` and friends get an RC default opcode when none
is given. This also changes Scapy's default for ``BTH()/AETH()`` from RD
ACKNOWLEDGE (0x51, the last binding ``scapy.contrib.roce`` makes) to RC
ACKNOWLEDGE (0x11).

Scapy picks a UDP payload by the first binding that matches either port, so
a RoCEv2 packet whose *source* port is one Scapy knows (53, 4789, ...)
dissects as that protocol. RoCEv2 NICs pick source ports in 0xC000..0xFFFF,
where Scapy binds nothing; so should callers.

Importing ``emulator.traffic.layers`` imports this module.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from scapy.contrib.roce import AETH, BTH, CNPPadding
from scapy.packet import Packet, bind_bottom_up, bind_top_down

# pfc is imported for a side effect: scapy.contrib.mac_control binds
# EtherType 0x8808, so PFC frames in a capture dissect too.
from emulator.traffic.layers import opcodes, pfc  # noqa: F401
from emulator.traffic.layers.atomic import AtomicAckAETH, AtomicETH
from emulator.traffic.layers.deth import DETH
from emulator.traffic.layers.immdt import ImmDt
from emulator.traffic.layers.opcodes import EXT_HEADERS, ExtHeader
from emulator.traffic.layers.reth import RETH

_FIRST_HEADER_LAYER: Mapping[ExtHeader, type[Packet]] = MappingProxyType({
    ExtHeader.RETH: RETH,
    ExtHeader.DETH: DETH,
    ExtHeader.IMMDT: ImmDt,
    ExtHeader.AETH: AETH,
    ExtHeader.ATOMIC_ETH: AtomicETH,
    ExtHeader.CNP_RESERVED: CNPPadding,
})

# The opcode a layer put right after a BTH implies when the user sets none.
_DEFAULT_OPCODE: Mapping[type[Packet], int] = MappingProxyType({
    RETH: opcodes.RC_RDMA_WRITE_ONLY,
    DETH: opcodes.UD_SEND_ONLY,
    ImmDt: opcodes.RC_SEND_ONLY_WITH_IMMEDIATE,
    AETH: opcodes.RC_ACKNOWLEDGE,
    AtomicAckAETH: opcodes.RC_ATOMIC_ACKNOWLEDGE,
    AtomicETH: opcodes.RC_COMPARE_SWAP,
})


def layer_after_bth(opcode: int) -> type[Packet] | None:
    """The Scapy layer that follows the BTH for ``opcode`` (None: payload or nothing)."""
    headers = EXT_HEADERS.get(opcode, ())
    if not headers:
        return None
    if headers == (ExtHeader.AETH, ExtHeader.ATOMIC_ACK_ETH):
        return AtomicAckAETH
    return _FIRST_HEADER_LAYER[headers[0]]


def _bind() -> None:
    for opcode in EXT_HEADERS:
        layer = layer_after_bth(opcode)
        if layer is None or ({"opcode": opcode}, layer) in BTH.payload_guess:
            continue
        bind_bottom_up(BTH, layer, opcode=opcode)
    for layer, opcode in _DEFAULT_OPCODE.items():
        bind_top_down(BTH, layer, opcode=opcode)


_bind()

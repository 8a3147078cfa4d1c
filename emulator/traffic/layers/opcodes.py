"""BTH opcodes of the RC, UC and UD transports, and which headers follow each.

The opcode's top three bits name the transport, the low five the operation
(IBA vol. 1, chapter 9, "BTH OpCode field"). The table ``EXT_HEADERS`` is the
one place that says which extended transport headers sit between the BTH and
the payload; the Scapy bindings, the fast builder and the fast parser all read
it. RD (reliable datagram) is left out: nothing in the project speaks it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from types import MappingProxyType

TRANSPORT_RC = 0x00
TRANSPORT_UC = 0x20
TRANSPORT_UD = 0x60

RC_SEND_FIRST = 0x00
RC_SEND_MIDDLE = 0x01
RC_SEND_LAST = 0x02
RC_SEND_LAST_WITH_IMMEDIATE = 0x03
RC_SEND_ONLY = 0x04
RC_SEND_ONLY_WITH_IMMEDIATE = 0x05
RC_RDMA_WRITE_FIRST = 0x06
RC_RDMA_WRITE_MIDDLE = 0x07
RC_RDMA_WRITE_LAST = 0x08
RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09
RC_RDMA_WRITE_ONLY = 0x0A
RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0B
RC_RDMA_READ_REQUEST = 0x0C
RC_RDMA_READ_RESPONSE_FIRST = 0x0D
RC_RDMA_READ_RESPONSE_MIDDLE = 0x0E
RC_RDMA_READ_RESPONSE_LAST = 0x0F
RC_RDMA_READ_RESPONSE_ONLY = 0x10
RC_ACKNOWLEDGE = 0x11
RC_ATOMIC_ACKNOWLEDGE = 0x12
RC_COMPARE_SWAP = 0x13
RC_FETCH_ADD = 0x14

UC_SEND_FIRST = 0x20
UC_SEND_MIDDLE = 0x21
UC_SEND_LAST = 0x22
UC_SEND_LAST_WITH_IMMEDIATE = 0x23
UC_SEND_ONLY = 0x24
UC_SEND_ONLY_WITH_IMMEDIATE = 0x25
UC_RDMA_WRITE_FIRST = 0x26
UC_RDMA_WRITE_MIDDLE = 0x27
UC_RDMA_WRITE_LAST = 0x28
UC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x29
UC_RDMA_WRITE_ONLY = 0x2A
UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x2B

UD_SEND_ONLY = 0x64
UD_SEND_ONLY_WITH_IMMEDIATE = 0x65

# RoCEv2 Annex A17.9.3: congestion notification packet.
CNP = 0x81


class ExtHeader(enum.Enum):
    """An extended transport header; the value is its Scapy layer name."""

    RETH = "RETH"
    DETH = "DETH"
    IMMDT = "ImmDt"
    AETH = "AETH"
    ATOMIC_ETH = "AtomicETH"
    ATOMIC_ACK_ETH = "AtomicAckETH"
    CNP_RESERVED = "CNPReserved"


EXT_HEADER_BYTES: Mapping[ExtHeader, int] = MappingProxyType(
    {
        ExtHeader.RETH: 16,
        ExtHeader.DETH: 8,
        ExtHeader.IMMDT: 4,
        ExtHeader.AETH: 4,
        ExtHeader.ATOMIC_ETH: 28,
        ExtHeader.ATOMIC_ACK_ETH: 8,
        ExtHeader.CNP_RESERVED: 16,
    }
)

_R, _D, _I, _A = ExtHeader.RETH, ExtHeader.DETH, ExtHeader.IMMDT, ExtHeader.AETH

# Low five bits of the opcode -> (name, extended headers in wire order,
# carries payload). Shared by RC and UC; UC has only the first twelve.
_OPERATIONS: tuple[tuple[str, tuple[ExtHeader, ...], bool], ...] = (
    ("SEND_FIRST", (), True),
    ("SEND_MIDDLE", (), True),
    ("SEND_LAST", (), True),
    ("SEND_LAST_WITH_IMMEDIATE", (_I,), True),
    ("SEND_ONLY", (), True),
    ("SEND_ONLY_WITH_IMMEDIATE", (_I,), True),
    ("RDMA_WRITE_FIRST", (_R,), True),
    ("RDMA_WRITE_MIDDLE", (), True),
    ("RDMA_WRITE_LAST", (), True),
    ("RDMA_WRITE_LAST_WITH_IMMEDIATE", (_I,), True),
    ("RDMA_WRITE_ONLY", (_R,), True),
    ("RDMA_WRITE_ONLY_WITH_IMMEDIATE", (_R, _I), True),
    ("RDMA_READ_REQUEST", (_R,), False),
    ("RDMA_READ_RESPONSE_FIRST", (_A,), True),
    ("RDMA_READ_RESPONSE_MIDDLE", (), True),
    ("RDMA_READ_RESPONSE_LAST", (_A,), True),
    ("RDMA_READ_RESPONSE_ONLY", (_A,), True),
    ("ACKNOWLEDGE", (_A,), False),
    ("ATOMIC_ACKNOWLEDGE", (_A, ExtHeader.ATOMIC_ACK_ETH), False),
    ("COMPARE_SWAP", (ExtHeader.ATOMIC_ETH,), False),
    ("FETCH_ADD", (ExtHeader.ATOMIC_ETH,), False),
)
_UC_OPERATIONS = 12


def _table() -> dict[int, tuple[str, tuple[ExtHeader, ...], bool]]:
    table: dict[int, tuple[str, tuple[ExtHeader, ...], bool]] = {}
    for low, (name, headers, payload) in enumerate(_OPERATIONS):
        table[TRANSPORT_RC | low] = (f"RC_{name}", headers, payload)
        if low < _UC_OPERATIONS:
            table[TRANSPORT_UC | low] = (f"UC_{name}", headers, payload)
    table[UD_SEND_ONLY] = ("UD_SEND_ONLY", (_D,), True)
    table[UD_SEND_ONLY_WITH_IMMEDIATE] = ("UD_SEND_ONLY_WITH_IMMEDIATE", (_D, _I), True)
    table[CNP] = ("CNP", (ExtHeader.CNP_RESERVED,), False)
    return table


_TABLE = MappingProxyType(_table())

OPCODE_NAMES: Mapping[int, str] = MappingProxyType({op: v[0] for op, v in _TABLE.items()})
EXT_HEADERS: Mapping[int, tuple[ExtHeader, ...]] = MappingProxyType(
    {op: v[1] for op, v in _TABLE.items()}
)


def _entry(opcode: int) -> tuple[str, tuple[ExtHeader, ...], bool]:
    try:
        return _TABLE[opcode]
    except KeyError:
        raise ValueError(f"BTH opcode {opcode:#04x} is not an RC, UC, UD or CNP opcode") from None


def is_known(opcode: int) -> bool:
    """True for the RC, UC, UD and CNP opcodes this package handles."""
    return opcode in _TABLE


def opcode_name(opcode: int) -> str:
    """``RC_RDMA_WRITE_FIRST`` style name, as Scapy's BTH shows it."""
    return _entry(opcode)[0]


def ext_headers(opcode: int) -> tuple[ExtHeader, ...]:
    """Extended transport headers between the BTH and the payload, in wire order."""
    return _entry(opcode)[1]


def ext_header_bytes(opcode: int) -> int:
    """Total size of the extended transport headers of ``opcode``."""
    return sum(EXT_HEADER_BYTES[h] for h in _entry(opcode)[1])


def carries_payload(opcode: int) -> bool:
    """Whether packets of ``opcode`` may carry data after their headers."""
    return _entry(opcode)[2]


def transport(opcode: int) -> int:
    """``TRANSPORT_RC``, ``TRANSPORT_UC`` or ``TRANSPORT_UD``; CNP counts as none."""
    _entry(opcode)
    if opcode == CNP:
        raise ValueError("a CNP belongs to no transport")
    return opcode & 0xE0

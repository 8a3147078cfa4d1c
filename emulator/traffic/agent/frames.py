"""The frames of one queue pair, built per packet from prebuilt templates.

The agent's hot path sends and receives tens of thousands of frames a
second, so its frames are not built field by field
(:meth:`RoceFlow.packet <emulator.traffic.roce.RoceFlow.packet>` checks
and packs every header each time). A *shape* (opcode, payload length) is
built once by ``RoceFlow.packet`` itself, the one source of the bytes, and
cut into what never changes for that shape: the 50 bytes before the PSN
word (Ethernet, IPv4 with its length and checksum, UDP, the first 8 BTH
bytes), the zero payload with its pad, and the ICRC state after the masked
part of those headers (RoCEv2 Annex A17.3.3). A packet of that shape is
then the head, the PSN word (and a RETH), the payload, and an ICRC of which
only the PSN word (and RETH) are computed per packet. The bytes are those
``RoceFlow.packet`` gives for the same arguments; the unit tests check it.

The payload's share of the ICRC. A CRC-32 over a fixed run of n bytes,
started from state v, is ``A_n(v) ^ c_n`` with ``A_n`` linear in v (over
GF(2)): for the path-MTU payload (the MIDDLE packets, most of a message)
``A_n`` is kept as four 256-entry tables, one per byte of v, so the
payload is not run through ``zlib.crc32`` for every packet (at 4 KB that is
2 µs here). Other lengths (a message's last packet) run ``zlib.crc32``.

An ACK/NAK is a head and 8 bytes (PSN word, AETH); a CNP of the queue pair
is always the same frame, built once.
"""

from __future__ import annotations

import struct
import zlib

from emulator.traffic.layers.icrc import CRC_AFTER_LRH
from emulator.traffic.layers.opcodes import (
    EXT_HEADER_BYTES, EXT_HEADERS, RC_ACKNOWLEDGE, ExtHeader,
)
from emulator.traffic.roce import RoceFlow

ETH_BYTES = 14
# Ethernet, IPv4, UDP and the BTH up to its PSN word.
HEAD_BYTES = ETH_BYTES + 20 + 8 + 8
_PSN_RETH = struct.Struct("!IQII")
_PSN_AETH = struct.Struct("!II")
_U32 = struct.Struct("!I")
# What data() calls per packet, bound once (no attribute lookup each call).
_pack_psn_reth = _PSN_RETH.pack
_pack_psn = _U32.pack
_pack_icrc = struct.Struct("<I").pack
_crc32 = zlib.crc32
# Shapes kept per queue pair: (opcode, payload length); the last packets of
# messages of many sizes would otherwise grow the cache without end.
MAX_SHAPES = 256
ACK_REQ_BIT = 1 << 31

Tables = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...], int]


def crc_tables(tail: bytes) -> Tables:
    """The four byte tables of ``A_n`` and ``c_n`` for ``tail`` (see the
    module docstring): ``zlib.crc32(tail, v) == c ^ t0[v & 255] ^ t1[v >> 8
    & 255] ^ t2[v >> 16 & 255] ^ t3[v >> 24]``."""
    c = zlib.crc32(tail, 0)
    basis = [zlib.crc32(tail, 1 << bit) ^ c for bit in range(32)]
    tables = []
    for k in range(4):
        cols = basis[8 * k:8 * k + 8]
        t = [0] * 256
        for b in range(1, 256):
            low = b & -b
            t[b] = t[b ^ low] ^ cols[low.bit_length() - 1]
        tables.append(tuple(t))
    return tables[0], tables[1], tables[2], tables[3], c


def _masked_state(frame: bytes) -> int:
    """ICRC state after the LRH stand-in and the masked IPv4, UDP and BTH
    bytes up to the PSN word of ``frame`` (IPv4 without options)."""
    ip = bytearray(frame[ETH_BYTES:ETH_BYTES + 36])
    ip[1] = 0xFF       # TOS
    ip[8] = 0xFF       # TTL
    ip[10:12] = b"\xff\xff"  # IPv4 checksum
    ip[26:28] = b"\xff\xff"  # UDP checksum
    ip[32] = 0xFF      # BTH byte 4: FECN, BECN, reserved
    return zlib.crc32(bytes(ip), CRC_AFTER_LRH)


class QpFrames:
    """Data, ACK/NAK and CNP frames of one queue pair to ``dest_qp``.

    ``data_flow`` carries data, ``ack_flow`` ACKs/NAKs and ``cnp_flow`` CNPs
    (see :class:`~.qp.QueuePair`); ``mtu`` is the payload length whose ICRC
    tables are built up front; ``va``/``rkey`` go in every RETH."""

    __slots__ = ("data_flow", "dest_qp", "mtu", "va", "rkey", "_shapes", "_tables",
                 "_ack_head", "_ack_state", "cnp_frame")

    def __init__(self, data_flow: RoceFlow, ack_flow: RoceFlow, cnp_flow: RoceFlow,
                 dest_qp: int, mtu: int, *, va: int = 0, rkey: int = 0) -> None:
        self.data_flow = data_flow
        self.dest_qp = dest_qp
        self.mtu = mtu
        self.va = va
        self.rkey = rkey
        self._shapes: dict[tuple[int, int], tuple[bytes, int, bytes, Tables | None, bool]] = {}
        self._tables = {len(self._tail(mtu)): crc_tables(self._tail(mtu))}
        ack = ack_flow.packet(RC_ACKNOWLEDGE, dest_qp, 0, aeth=(0, 0))
        self._ack_head = ack[:HEAD_BYTES]
        self._ack_state = _masked_state(ack)
        self.cnp_frame = cnp_flow.cnp(dest_qp)

    @staticmethod
    def _tail(plen: int) -> bytes:
        return bytes(plen + (-plen & 3))

    def _shape(self, opcode: int, plen: int) -> tuple[bytes, int, bytes, Tables | None, bool]:
        headers = EXT_HEADERS[opcode]
        reth = ExtHeader.RETH in headers
        if reth and len(headers) != 1 or not reth and headers:
            raise ValueError(f"opcode {opcode:#04x}: only no extended header or a RETH")
        frame = self.data_flow.packet(opcode, self.dest_qp, 0, bytes(plen),
                                      reth=(0, 0, 0) if reth else None)
        ext = HEAD_BYTES + 4 + (EXT_HEADER_BYTES[ExtHeader.RETH] if reth else 0)
        tail = frame[ext:-4]
        shape = (frame[:HEAD_BYTES], _masked_state(frame), tail, self._tables.get(len(tail)),
                 reth)
        if len(self._shapes) >= MAX_SHAPES:
            self._shapes.clear()
        self._shapes[(opcode, plen)] = shape
        return shape

    def data(self, opcode: int, psn: int, plen: int, ack_req: bool, dma_len: int = 0) -> bytes:
        """A SEND or WRITE packet of ``plen`` zero bytes at ``psn`` (24 bits);
        ``dma_len`` goes in the RETH of a WRITE FIRST/ONLY."""
        shape = self._shapes.get((opcode, plen))
        if shape is None:
            shape = self._shape(opcode, plen)
        head, state, tail, tables, reth = shape
        word = psn | ACK_REQ_BIT if ack_req else psn
        ext = _pack_psn_reth(word, self.va, self.rkey, dma_len) if reth else _pack_psn(word)
        v = _crc32(ext, state)
        if tables is None:
            crc = _crc32(tail, v)
        else:
            t0, t1, t2, t3, c = tables
            crc = c ^ t0[v & 255] ^ t1[v >> 8 & 255] ^ t2[v >> 16 & 255] ^ t3[v >> 24]
        return b"".join((head, ext, tail, _pack_icrc(crc)))

    def ack(self, psn: int, msn: int, syndrome: int) -> bytes:
        """An RC ACKNOWLEDGE (ACK or NAK by ``syndrome``) for ``psn``, ``msn``."""
        ext = _PSN_AETH.pack(psn, syndrome << 24 | msn)
        return b"".join((self._ack_head, ext,
                         zlib.crc32(ext, self._ack_state).to_bytes(4, "little")))

"""RoCEv2 frames as bytes: the fast constructors and parser of the NIC agent.

A host agent sends and receives tens of thousands of packets a second;
building one through Scapy takes about 2 ms here (its BTH rebuilds a copy of
the packet to compute the ICRC), so frames are assembled with ``struct``
from per-flow constants and the ICRC is computed with ``zlib.crc32`` (RoCEv2
Annex A17.3.3, see ``layers.icrc``): some 250 k frames/s of 1 KiB, see
``benchmarks/roce_build.py``. The unit tests check these bytes against
Scapy's ``Ether/IP/UDP/BTH/...`` for many random packets.

Frames are Ether/IPv4/UDP(4791)/BTH/[extended headers]/payload/pad/ICRC. The
IPv4 header has no options, DF set and ID 0 (RFC 6864: an atomic datagram
needs no ID); the UDP checksum is 0, as RoCEv2 senders send it (the ICRC
covers the datagram). The payload is padded to a multiple of 4 bytes and
the BTH PadCnt says by how much (IBA vol. 1, chapter 9, "PadCnt").

- :class:`RoceFlow` holds what is constant for one direction of one
  connection (addresses, UDP source port, DSCP, ECN, TTL) and builds any
  RC/UC/UD/CNP packet of it; the agent keeps one per queue pair.
- :func:`roce_packet`, :func:`ack_packet`, :func:`cnp_packet` are one-shot
  versions of the same (each call parses the addresses again).
- :func:`parse` turns a received frame into a :class:`RoceView`;
  :func:`icrc_ok` (from ``layers.icrc``) checks a frame's ICRC.
"""

from __future__ import annotations

import socket
import struct
import zlib
from collections.abc import Mapping
from types import MappingProxyType
from typing import NamedTuple

from emulator.traffic.layers import icrc as _icrc
from emulator.traffic.layers.aeth import ack_syndrome
from emulator.traffic.layers.icrc import CRC_AFTER_LRH, ETH_P_IPV4, ROCE_UDP_PORT, icrc_ok
from emulator.traffic.layers.opcodes import (
    CNP,
    EXT_HEADER_BYTES,
    EXT_HEADERS,
    RC_ACKNOWLEDGE,
    ExtHeader,
    carries_payload,
)

ECN_NOT_ECT = 0b00
ECN_ECT1 = 0b01
ECN_ECT0 = 0b10
ECN_CE = 0b11

DEFAULT_DSCP = 26
# The DSCP NVIDIA NICs send CNPs with by default (cnp_dscp); Annex A17.9.3
# fixes the CNP's BTH, not its IP header.
CNP_DSCP = 48
DEFAULT_TTL = 64
DEFAULT_PKEY = 0xFFFF
# RoCEv2 NICs draw UDP source ports (flow entropy for ECMP) from here.
UDP_SPORT_MIN = 0xC000
UDP_SPORT_MAX = 0xFFFF

ETH_HEADER_BYTES = 14
IPV4_HEADER_BYTES = 20
UDP_HEADER_BYTES = 8
BTH_BYTES = 12
ICRC_BYTES = 4
# IPv4 + UDP + BTH + ICRC: what every frame adds to its headers and payload.
_FIXED_IP_BYTES = IPV4_HEADER_BYTES + UDP_HEADER_BYTES + BTH_BYTES + ICRC_BYTES
MAX_QPN = 0xFFFFFF
MAX_PSN = 0xFFFFFF

_IP_UDP_BTH = struct.Struct("!BBHHHBBH4s4sHHHHBBHII")
_IP_FLAGS_DF = 0x4000
_IP_PROTO_UDP = 17
_RETH = struct.Struct("!QII")
_DETH = struct.Struct("!II")
_U32 = struct.Struct("!I")
_U64 = struct.Struct("!Q")
_ATOMIC = struct.Struct("!QIQQ")
_CNP_RESERVED = bytes(16)


class RoceFormatError(ValueError):
    """A frame that is not a well-formed RoCEv2-over-IPv4 packet."""


class Reth(NamedTuple):
    va: int
    rkey: int
    dma_len: int


class Aeth(NamedTuple):
    syndrome: int
    msn: int


class Deth(NamedTuple):
    qkey: int
    src_qp: int


class AtomicEth(NamedTuple):
    va: int
    rkey: int
    swap_data: int
    cmp_data: int


class RoceView(NamedTuple):
    """What :func:`parse` reads from a frame. Absent headers are None.

    ``payload_offset``/``payload_len`` locate the data in the frame (pad
    bytes excluded). ``icrc_ok`` is None when the check was skipped.
    """

    opcode: int
    dest_qp: int
    psn: int
    ack_req: bool
    solicited: bool
    fecn: bool
    becn: bool
    pkey: int
    pad_count: int
    ecn: int
    dscp: int
    ttl: int
    src_ip: str
    dst_ip: str
    udp_sport: int
    payload_offset: int
    payload_len: int
    icrc_ok: bool | None
    reth: Reth | None = None
    imm: int | None = None
    aeth: Aeth | None = None
    deth: Deth | None = None
    atomic: AtomicEth | None = None
    atomic_ack: int | None = None


def mac_bytes(mac: str) -> bytes:
    """``"02:00:00:00:00:01"`` -> 6 bytes."""
    raw = bytes.fromhex(mac.replace(":", ""))
    if len(raw) != 6:
        raise ValueError(f"not a MAC address: {mac!r}")
    return raw


def _check_range(name: str, value: int, high: int) -> None:
    if not 0 <= value <= high:
        raise ValueError(f"{name} {value} is not in 0..{high:#x}")


class RoceFlow:
    """Builds the frames of one direction of one RoCEv2 connection.

    Everything below the BTH that does not change from packet to packet is
    fixed here once: MAC and IPv4 addresses, UDP source port, DSCP, ECN, TTL.
    """

    __slots__ = ("src_mac", "dst_mac", "src_ip", "dst_ip", "udp_sport", "dscp", "ecn", "ttl",
                 "_eth", "_src", "_dst", "_tos", "_ip_sum")

    def __init__(
        self,
        src_mac: str,
        dst_mac: str,
        src_ip: str,
        dst_ip: str,
        udp_sport: int,
        *,
        dscp: int = DEFAULT_DSCP,
        ecn: int = ECN_ECT0,
        ttl: int = DEFAULT_TTL,
    ) -> None:
        _check_range("UDP source port", udp_sport, 0xFFFF)
        _check_range("DSCP", dscp, 63)
        _check_range("ECN", ecn, 3)
        _check_range("TTL", ttl, 255)
        self.src_mac, self.dst_mac = src_mac, dst_mac
        self.src_ip, self.dst_ip = src_ip, dst_ip
        self.udp_sport, self.dscp, self.ecn, self.ttl = udp_sport, dscp, ecn, ttl
        self._eth = mac_bytes(dst_mac) + mac_bytes(src_mac) + b"\x08\x00"
        try:
            self._src = socket.inet_pton(socket.AF_INET, src_ip)
            self._dst = socket.inet_pton(socket.AF_INET, dst_ip)
        except OSError:
            raise ValueError(f"not IPv4 addresses: {src_ip!r}, {dst_ip!r}") from None
        self._tos = (dscp << 2) | ecn
        # One's-complement sum of every IPv4 header word but the total length.
        words = struct.unpack("!10H", _IP_UDP_BTH.pack(
            0x45, self._tos, 0, 0, _IP_FLAGS_DF, ttl, _IP_PROTO_UDP, 0,
            self._src, self._dst, 0, 0, 0, 0, 0, 0, 0, 0, 0)[:IPV4_HEADER_BYTES])
        self._ip_sum = sum(words)

    def __repr__(self) -> str:
        return (f"RoceFlow({self.src_mac} {self.src_ip}:{self.udp_sport} -> "
                f"{self.dst_mac} {self.dst_ip}, dscp={self.dscp}, ecn={self.ecn})")

    def packet(
        self,
        opcode: int,
        dest_qp: int,
        psn: int,
        payload: bytes = b"",
        *,
        reth: tuple[int, int, int] | None = None,
        imm: int | None = None,
        aeth: tuple[int, int] | None = None,
        deth: tuple[int, int] | None = None,
        atomic: tuple[int, int, int, int] | None = None,
        atomic_ack: int | None = None,
        ack_req: bool = False,
        solicited: bool = False,
        becn: bool = False,
        pkey: int = DEFAULT_PKEY,
    ) -> bytes:
        """One frame. The extended headers given must be exactly those ``opcode`` takes."""
        headers = EXT_HEADERS.get(opcode)
        if headers is None:
            raise ValueError(f"BTH opcode {opcode:#04x} is not an RC, UC, UD or CNP opcode")
        if not 0 <= dest_qp <= MAX_QPN:
            raise ValueError(f"destination QP {dest_qp} does not fit 24 bits")
        if not 0 <= psn <= MAX_PSN:
            raise ValueError(f"PSN {psn} does not fit 24 bits")
        if not 0 <= pkey <= 0xFFFF:
            raise ValueError(f"P_Key {pkey} does not fit 16 bits")
        given = ((reth is not None) + (imm is not None) + (aeth is not None)
                 + (deth is not None) + (atomic is not None) + (atomic_ack is not None))
        parts: list[bytes] = []
        try:
            for header in headers:
                if header is ExtHeader.RETH and reth is not None:
                    parts.append(_RETH.pack(*reth))
                elif header is ExtHeader.IMMDT and imm is not None:
                    parts.append(_U32.pack(imm))
                elif header is ExtHeader.AETH and aeth is not None:
                    syndrome, msn = aeth
                    _check_range("AETH syndrome", syndrome, 0xFF)
                    _check_range("MSN", msn, 0xFFFFFF)
                    parts.append(_U32.pack(syndrome << 24 | msn))
                elif header is ExtHeader.DETH and deth is not None:
                    qkey, src_qp = deth
                    _check_range("source QP", src_qp, MAX_QPN)
                    parts.append(_DETH.pack(qkey, src_qp))
                elif header is ExtHeader.ATOMIC_ETH and atomic is not None:
                    parts.append(_ATOMIC.pack(*atomic))
                elif header is ExtHeader.ATOMIC_ACK_ETH and atomic_ack is not None:
                    parts.append(_U64.pack(atomic_ack))
                elif header is ExtHeader.CNP_RESERVED:
                    given += 1
                    parts.append(_CNP_RESERVED)
                else:
                    raise ValueError(f"opcode {opcode:#04x} needs a {header.value} header")
        except struct.error as exc:
            raise ValueError(f"extended header field out of range: {exc}") from None
        if given != len(headers):
            raise ValueError(f"opcode {opcode:#04x} takes only the headers "
                             f"{[h.value for h in headers]}")
        pad = -len(payload) & 3
        if payload:
            if not carries_payload(opcode):
                raise ValueError(f"opcode {opcode:#04x} carries no payload")
            parts.append(payload)
            if pad:
                parts.append(bytes(pad))
        body = b"".join(parts)
        return self._frame(opcode, (solicited << 7) | (pad << 4), pkey, becn << 30,
                           dest_qp, (ack_req << 31) | psn, body)

    def ack(self, dest_qp: int, psn: int, msn: int, syndrome: int | None = None) -> bytes:
        """An RC ACKNOWLEDGE; ``syndrome`` defaults to a plain ACK (see ``layers.aeth``)."""
        if syndrome is None:
            syndrome = ack_syndrome()
        return self.packet(RC_ACKNOWLEDGE, dest_qp, psn, aeth=(syndrome, msn))

    def cnp(self, dest_qp: int) -> bytes:
        """A CNP for ``dest_qp`` (Annex A17.9.3: opcode 0x81, BECN set, PSN 0)."""
        return self.packet(CNP, dest_qp, 0, becn=True)

    def _frame(self, opcode: int, flags: int, pkey: int, becn_bit: int, dest_qp: int,
               psn_word: int, body: bytes) -> bytes:
        ip_len = _FIXED_IP_BYTES + len(body)
        if ip_len > 0xFFFF:
            raise ValueError(f"packet of {ip_len} bytes does not fit an IPv4 datagram")
        total = self._ip_sum + ip_len
        total = (total & 0xFFFF) + (total >> 16)
        total = (total & 0xFFFF) + (total >> 16)
        udp_len = ip_len - IPV4_HEADER_BYTES
        header = _IP_UDP_BTH.pack(
            0x45, self._tos, ip_len, 0, _IP_FLAGS_DF, self.ttl, _IP_PROTO_UDP, ~total & 0xFFFF,
            self._src, self._dst, self.udp_sport, ROCE_UDP_PORT, udp_len, 0,
            opcode, flags, pkey, becn_bit | dest_qp, psn_word)
        # Annex A17.3.3: the same header with TOS, TTL, IP and UDP checksums
        # and BTH byte 4 set to ones.
        masked = _IP_UDP_BTH.pack(
            0x45, 0xFF, ip_len, 0, _IP_FLAGS_DF, 0xFF, _IP_PROTO_UDP, 0xFFFF,
            self._src, self._dst, self.udp_sport, ROCE_UDP_PORT, udp_len, 0xFFFF,
            opcode, flags, pkey, 0xFF000000 | dest_qp, psn_word)
        crc = zlib.crc32(body, zlib.crc32(masked, CRC_AFTER_LRH))
        return b"".join((self._eth, header, body, crc.to_bytes(4, "little")))


def roce_packet(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    udp_sport: int,
    opcode: int,
    dest_qp: int,
    psn: int,
    payload: bytes = b"",
    *,
    reth: tuple[int, int, int] | None = None,
    imm: int | None = None,
    ack_req: bool = False,
    ecn: int = ECN_ECT0,
    dscp: int = DEFAULT_DSCP,
    ttl: int = DEFAULT_TTL,
) -> bytes:
    """One RC/UC SEND or RDMA WRITE/READ-request frame (RETH as (va, rkey, dma_len))."""
    flow = RoceFlow(src_mac, dst_mac, src_ip, dst_ip, udp_sport, dscp=dscp, ecn=ecn, ttl=ttl)
    return flow.packet(opcode, dest_qp, psn, payload, reth=reth, imm=imm, ack_req=ack_req)


def ack_packet(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    udp_sport: int,
    dest_qp: int,
    psn: int,
    msn: int,
    syndrome: int | None = None,
    *,
    ecn: int = ECN_ECT0,
    dscp: int = DEFAULT_DSCP,
    ttl: int = DEFAULT_TTL,
) -> bytes:
    """An RC ACKNOWLEDGE frame: BTH + AETH(syndrome, MSN). Default syndrome: plain ACK."""
    flow = RoceFlow(src_mac, dst_mac, src_ip, dst_ip, udp_sport, dscp=dscp, ecn=ecn, ttl=ttl)
    return flow.ack(dest_qp, psn, msn, syndrome)


def cnp_packet(
    src_mac: str,
    dst_mac: str,
    src_ip: str,
    dst_ip: str,
    udp_sport: int,
    dest_qp: int,
    *,
    dscp: int = CNP_DSCP,
    ecn: int = ECN_NOT_ECT,
    ttl: int = DEFAULT_TTL,
) -> bytes:
    """A RoCEv2 CNP frame (Annex A17.9.3): BTH opcode 0x81 with BECN, 16 reserved bytes.

    Sent not ECN-capable by default, so a switch never marks a CNP itself.
    """
    flow = RoceFlow(src_mac, dst_mac, src_ip, dst_ip, udp_sport, dscp=dscp, ecn=ecn, ttl=ttl)
    return flow.cnp(dest_qp)


def _layouts() -> dict[int, tuple[tuple[tuple[ExtHeader, int], ...], int]]:
    """opcode -> ((header, offset after the BTH), ...), total header bytes."""
    layouts = {}
    for opcode, headers in EXT_HEADERS.items():
        offset, placed = 0, []
        for header in headers:
            placed.append((header, offset))
            offset += EXT_HEADER_BYTES[header]
        layouts[opcode] = (tuple(placed), offset)
    return layouts


_LAYOUTS: Mapping[int, tuple[tuple[tuple[ExtHeader, int], ...], int]] = MappingProxyType(
    _layouts())


def parse(frame: bytes, *, check_icrc: bool = True) -> RoceView:
    """Read a RoCEv2-over-IPv4 Ethernet frame (one 802.1Q tag allowed).

    Raises :class:`RoceFormatError` for anything else, truncated frames and
    opcodes outside RC, UC, UD and CNP. Ethernet padding after the IP
    datagram is ignored.
    """
    try:
        ethertype, ip = _icrc.l3_offset(frame)
    except ValueError as exc:
        raise RoceFormatError(str(exc)) from None
    if ethertype != ETH_P_IPV4:
        raise RoceFormatError(f"not IPv4: EtherType {ethertype:#06x}")
    if len(frame) < ip + IPV4_HEADER_BYTES or frame[ip] >> 4 != 4:
        raise RoceFormatError("truncated or malformed IPv4 header")
    ihl = (frame[ip] & 0x0F) * 4
    end = ip + ((frame[ip + 2] << 8) | frame[ip + 3])
    udp = ip + ihl
    bth = udp + UDP_HEADER_BYTES
    if end > len(frame) or end < bth + BTH_BYTES + ICRC_BYTES:
        raise RoceFormatError("IPv4 total length does not fit a RoCEv2 packet in this frame")
    if frame[ip + 9] != _IP_PROTO_UDP or ((frame[udp + 2] << 8) | frame[udp + 3]) != ROCE_UDP_PORT:
        raise RoceFormatError("not UDP to port 4791")
    opcode, flags, pkey, qp_word, psn_word = struct.unpack_from("!BBHII", frame, bth)
    layout = _LAYOUTS.get(opcode)
    if layout is None:
        raise RoceFormatError(f"BTH opcode {opcode:#04x} is not an RC, UC, UD or CNP opcode")
    placed, ext_bytes = layout
    ext = bth + BTH_BYTES
    payload_offset = ext + ext_bytes
    pad_count = (flags >> 4) & 3
    payload_len = end - ICRC_BYTES - payload_offset - pad_count
    if payload_len < 0:
        raise RoceFormatError(f"packet too short for the headers of opcode {opcode:#04x}")
    reth = imm = aeth = deth = atomic = atomic_ack = None
    for header, offset in placed:
        at = ext + offset
        if header is ExtHeader.RETH:
            reth = Reth._make(_RETH.unpack_from(frame, at))
        elif header is ExtHeader.IMMDT:
            imm = _U32.unpack_from(frame, at)[0]
        elif header is ExtHeader.AETH:
            word = _U32.unpack_from(frame, at)[0]
            aeth = Aeth(word >> 24, word & 0xFFFFFF)
        elif header is ExtHeader.DETH:
            qkey, src_qp = _DETH.unpack_from(frame, at)
            deth = Deth(qkey, src_qp & 0xFFFFFF)
        elif header is ExtHeader.ATOMIC_ETH:
            atomic = AtomicEth._make(_ATOMIC.unpack_from(frame, at))
        elif header is ExtHeader.ATOMIC_ACK_ETH:
            atomic_ack = _U64.unpack_from(frame, at)[0]
    tos = frame[ip + 1]
    return RoceView(
        opcode=opcode,
        dest_qp=qp_word & 0xFFFFFF,
        psn=psn_word & 0xFFFFFF,
        ack_req=bool(psn_word >> 31),
        solicited=bool(flags >> 7),
        fecn=bool(qp_word >> 31),
        becn=bool((qp_word >> 30) & 1),
        pkey=pkey,
        pad_count=pad_count,
        ecn=tos & 3,
        dscp=tos >> 2,
        ttl=frame[ip + 8],
        src_ip=socket.inet_ntoa(frame[ip + 12 : ip + 16]),
        dst_ip=socket.inet_ntoa(frame[ip + 16 : ip + 20]),
        udp_sport=(frame[udp] << 8) | frame[udp + 1],
        payload_offset=payload_offset,
        payload_len=payload_len,
        icrc_ok=icrc_ok(frame) if check_icrc else None,
        reth=reth,
        imm=imm,
        aeth=aeth,
        deth=deth,
        atomic=atomic,
        atomic_ack=atomic_ack,
    )


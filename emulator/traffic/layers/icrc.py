"""The RoCEv2 invariant CRC (ICRC), computed straight from frame bytes.

RoCEv2 Annex A17.3.3: a CRC-32 (the Ethernet polynomial, as ``zlib.crc32``)
over 8 bytes of 0xFF standing in for the InfiniBand LRH, then the IP header,
the UDP header, the BTH and everything after it up to the ICRC, with every
field a router may rewrite set to all ones: IPv4 TOS, TTL and header checksum
(IPv6 traffic class, flow label and hop limit), the UDP checksum, and BTH
byte 4 (FECN, BECN, reserved). So ECN marking does not break the ICRC. The
four CRC bytes go on the wire least significant first, as
``scapy.contrib.roce`` packs them.

The ICRC ends the IP datagram, not the frame: Ethernet padding or an FCS
after it is ignored (Scapy's own ``BTH.compute_icrc`` counts Ethernet padding
of a dissected short frame as payload and gets it wrong).
"""

from __future__ import annotations

import zlib

from scapy.compat import raw
from scapy.layers.inet import IP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Ether
from scapy.packet import Packet

ROCE_UDP_PORT = 4791
ETH_P_IPV4 = 0x0800
ETH_P_IPV6 = 0x86DD
ETH_P_8021Q = 0x8100
ICRC_BYTES = 4
BTH_BYTES = 12

# CRC state after the 8 bytes of 0xFF that replace the LRH.
CRC_AFTER_LRH = zlib.crc32(b"\xff" * 8)
_ONES1 = b"\xff"
_ONES2 = b"\xff\xff"


def l3_offset(frame: bytes) -> tuple[int, int]:
    """(EtherType, offset of the L3 header) of an Ethernet frame; skips one 802.1Q tag."""
    if len(frame) < 14:
        raise ValueError(f"frame of {len(frame)} bytes is shorter than an Ethernet header")
    ethertype = (frame[12] << 8) | frame[13]
    if ethertype == ETH_P_8021Q:
        if len(frame) < 18:
            raise ValueError("802.1Q frame too short")
        return (frame[16] << 8) | frame[17], 18
    return ethertype, 14


def _roce_spans(buf: bytes, off: int, version: int) -> tuple[bytes, int, int]:
    """Masked IP header, offset of the UDP header, end of the IP datagram."""
    if version == 4:
        if len(buf) < off + 20 or buf[off] >> 4 != 4:
            raise ValueError("truncated or malformed IPv4 header")
        ihl = (buf[off] & 0x0F) * 4
        end = off + ((buf[off + 2] << 8) | buf[off + 3])
        if buf[off + 9] != 17:
            raise ValueError("not a RoCEv2 packet: IP protocol is not UDP")
        ip = bytearray(buf[off : off + ihl])
        ip[1] = 0xFF  # TOS (DSCP and ECN)
        ip[8] = 0xFF  # TTL
        ip[10:12] = _ONES2  # header checksum
        udp = off + ihl
    else:
        if len(buf) < off + 40 or buf[off] >> 4 != 6:
            raise ValueError("truncated or malformed IPv6 header")
        end = off + 40 + ((buf[off + 4] << 8) | buf[off + 5])
        if buf[off + 6] != 17:
            raise ValueError("not a RoCEv2 packet: IPv6 next header is not UDP")
        ip = bytearray(buf[off : off + 40])
        ip[0] |= 0x0F  # traffic class, flow label
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xFF  # hop limit
        udp = off + 40
    if end > len(buf) or end < udp + 8 + BTH_BYTES + ICRC_BYTES:
        raise ValueError("IP length does not fit a RoCEv2 packet in this frame")
    if ((buf[udp + 2] << 8) | buf[udp + 3]) != ROCE_UDP_PORT:
        raise ValueError("not a RoCEv2 packet: UDP destination port is not 4791")
    return bytes(ip), udp, end


def _icrc_at(buf: bytes, off: int, version: int) -> tuple[int, int]:
    """(computed ICRC, end of the datagram) for the IP datagram at ``off``."""
    ip, udp, end = _roce_spans(buf, off, version)
    view = memoryview(buf)
    bth = udp + 8
    crc = zlib.crc32(ip, CRC_AFTER_LRH)
    crc = zlib.crc32(view[udp : udp + 6], crc)
    crc = zlib.crc32(_ONES2, crc)  # UDP checksum
    crc = zlib.crc32(view[bth : bth + 4], crc)
    crc = zlib.crc32(_ONES1, crc)  # FECN, BECN, reserved
    crc = zlib.crc32(view[bth + 5 : end - ICRC_BYTES], crc)
    return crc, end


def compute_icrc(frame: bytes) -> int:
    """ICRC of a RoCEv2 Ethernet frame (IPv4 or IPv6) as an integer."""
    ethertype, off = l3_offset(frame)
    if ethertype == ETH_P_IPV4:
        return _icrc_at(frame, off, 4)[0]
    if ethertype == ETH_P_IPV6:
        return _icrc_at(frame, off, 6)[0]
    raise ValueError(f"not a RoCEv2 frame: EtherType {ethertype:#06x}")


def icrc_wire_bytes(icrc: int) -> bytes:
    """The four bytes that carry ``icrc`` on the wire (least significant first)."""
    return icrc.to_bytes(4, "little")


def _stored_icrc_ok(buf: bytes, off: int, version: int) -> bool:
    crc, end = _icrc_at(buf, off, version)
    return buf[end - ICRC_BYTES : end] == icrc_wire_bytes(crc)


def icrc_ok(pkt_or_bytes: Packet | bytes) -> bool:
    """Whether the ICRC a RoCEv2 packet carries is the right one.

    Takes an Ethernet frame as bytes, or a Scapy packet rooted at Ether, IP or
    IPv6. Raises ValueError when the input is not a RoCEv2 packet at all.
    """
    if isinstance(pkt_or_bytes, Packet):
        buf = raw(pkt_or_bytes)
        if isinstance(pkt_or_bytes, IP):
            return _stored_icrc_ok(buf, 0, 4)
        if isinstance(pkt_or_bytes, IPv6):
            return _stored_icrc_ok(buf, 0, 6)
        if not isinstance(pkt_or_bytes, Ether):
            raise ValueError(f"cannot check the ICRC of a packet rooted at {pkt_or_bytes.name}")
    else:
        buf = bytes(pkt_or_bytes)
    ethertype, off = l3_offset(buf)
    if ethertype == ETH_P_IPV4:
        return _stored_icrc_ok(buf, off, 4)
    if ethertype == ETH_P_IPV6:
        return _stored_icrc_ok(buf, off, 6)
    raise ValueError(f"not a RoCEv2 frame: EtherType {ethertype:#06x}")

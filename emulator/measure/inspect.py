"""One-line decoding of captured frames.

:func:`read_pcap_frames` reads any classic pcap (micro- or nanosecond
timestamps, as the switches' ``--pcap`` writes them) or pcapng through
Scapy; :func:`decode_frame` turns one Ethernet frame into a
:class:`Decoded` record (RoCEv2 with the BTH/AETH fields, the IP ECN bits
and the ICRC check; CNPs marked as such; 802.1Qbb PFC with the paused
priorities and quanta; anything else as Scapy's ``summary()``);
:func:`inspect_pcap` filters (``only``, ``flow``, ``limit``) and
:func:`format_line` prints. Nothing here needs root or the network.
"""

from __future__ import annotations

import socket
import struct
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator

ONLY_CHOICES = ("roce", "pfc", "cnp", "ecn")
ECN_NAMES = {0: "Not-ECT", 1: "ECT(1)", 2: "ECT(0)", 3: "CE"}
_ETH_P_IPV4 = 0x0800
_ETH_P_8021Q = 0x8100


class InspectError(ValueError):
    """A capture file that cannot be read."""

    exit_code = 2


@dataclass
class Decoded:
    """One frame: ``kind`` is ``roce``, ``cnp``, ``pfc`` or ``other``."""

    index: int
    time: float  # seconds since the epoch (as the capture says)
    rel: float  # seconds since the first frame of the file
    src: str
    dst: str
    kind: str
    length: int
    src_ip: str | None = None
    dst_ip: str | None = None
    ecn: int | None = None  # IPv4 ECN bits, any IPv4 frame
    fields: dict[str, Any] = field(default_factory=dict)
    summary: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mac(raw: bytes) -> str:
    return ":".join(f"{b:02x}" for b in raw)


def read_pcap_frames(path: str | Path) -> list[tuple[int, bytes]]:
    """(timestamp in ns, frame bytes) of every record of ``path``.

    Raises :class:`InspectError` when the file is missing or not a capture."""
    from scapy.utils import RawPcapReader

    p = Path(path)
    if not p.is_file():
        raise InspectError(f"{path}: no such file")
    try:
        reader = RawPcapReader(str(p))
    except Exception as exc:  # Scapy raises Scapy_Exception for a bad magic
        raise InspectError(f"{path}: not a pcap file ({exc})") from None
    out: list[tuple[int, bytes]] = []
    try:
        with reader:
            for data, meta in reader:
                out.append((_timestamp(meta, getattr(reader, "nano", False)), bytes(data)))
    except Exception as exc:
        if not out:
            raise InspectError(f"{path}: unreadable capture ({exc})") from None
        # a truncated last record (capture still being written): keep the rest
    return out


def _timestamp(meta: Any, nano: bool) -> int:
    """Nanoseconds since the epoch."""
    if hasattr(meta, "sec"):  # classic pcap: "usec" holds ns in a nanosecond file
        return meta.sec * 1_000_000_000 + meta.usec * (1 if nano else 1000)
    if hasattr(meta, "tshigh"):  # pcapng
        ticks = (meta.tshigh << 32) | meta.tslow
        return ticks * 1_000_000_000 // getattr(meta, "tsresol", 1_000_000)
    return 0


def decode_frame(frame: bytes, time: float = 0.0, *, index: int = 0,
                 rel: float = 0.0) -> Decoded:
    """Decode one Ethernet frame; never raises for odd frames (they become
    ``other`` with Scapy's summary)."""
    from emulator.traffic import roce
    from emulator.traffic.layers.opcodes import CNP, opcode_name
    from emulator.traffic.layers.pfc import pfc_pause_quanta

    src = _mac(frame[6:12]) if len(frame) >= 12 else "?"
    dst = _mac(frame[0:6]) if len(frame) >= 6 else "?"
    rec = Decoded(index=index, time=time, rel=rel, src=src, dst=dst, kind="other",
                  length=len(frame))
    ip = _ipv4_offset(frame)
    if ip is not None:
        rec.ecn = frame[ip + 1] & 3
        rec.src_ip = socket.inet_ntoa(frame[ip + 12:ip + 16])
        rec.dst_ip = socket.inet_ntoa(frame[ip + 16:ip + 20])
    try:
        view = roce.parse(frame)
    except (ValueError, struct.error):
        view = None
    if view is not None:
        rec.kind = "cnp" if view.opcode == CNP else "roce"
        f: dict[str, Any] = {
            "opcode": view.opcode, "opcode_name": opcode_name(view.opcode),
            "dest_qp": view.dest_qp, "psn": view.psn, "ack_req": view.ack_req,
            "fecn": view.fecn, "becn": view.becn, "dscp": view.dscp,
            "udp_sport": view.udp_sport, "payload_len": view.payload_len,
            "icrc_ok": view.icrc_ok,
        }
        if view.aeth is not None:
            f["aeth_syndrome"] = view.aeth.syndrome
            f["aeth_msn"] = view.aeth.msn
        if view.reth is not None:
            f["reth_dma_len"] = view.reth.dma_len
        rec.fields = f
        return rec
    try:
        quanta = pfc_pause_quanta(frame)
    except (ValueError, struct.error):
        quanta = None
    if quanta is not None:
        rec.kind = "pfc"
        rec.fields = {"quanta": {str(p): q for p, q in sorted(quanta.items())}}
        return rec
    rec.summary = _scapy_summary(frame)
    return rec


def _ipv4_offset(frame: bytes) -> int | None:
    if len(frame) < 14:
        return None
    ethertype, off = (frame[12] << 8) | frame[13], 14
    if ethertype == _ETH_P_8021Q and len(frame) >= 18:
        ethertype, off = (frame[16] << 8) | frame[17], 18
    if ethertype != _ETH_P_IPV4 or len(frame) < off + 20 or frame[off] >> 4 != 4:
        return None
    return off


def _scapy_summary(frame: bytes) -> str:
    import emulator.traffic.layers  # noqa: F401  (bindings)
    from scapy.layers.l2 import Ether

    try:
        return Ether(frame).summary()
    except Exception:
        return f"{len(frame)} bytes (undecodable)"


def matches(rec: Decoded, only: str | None = None,
            flow: tuple[str, str] | None = None) -> bool:
    """Whether ``rec`` passes the ``--only`` and ``--flow`` filters. ``ecn``
    keeps IPv4 frames whose ECN bits say CE (congestion experienced);
    ``flow`` is (source IP, destination IP), one direction."""
    if only is not None:
        if only not in ONLY_CHOICES:
            raise ValueError(f"--only must be one of {', '.join(ONLY_CHOICES)}")
        if only == "ecn":
            if rec.ecn != 3:
                return False
        elif rec.kind != only:
            return False
    if flow is not None and (rec.src_ip, rec.dst_ip) != tuple(flow):
        return False
    return True


def inspect_pcap(path: str | Path, *, only: str | None = None,
                 flow: tuple[str, str] | None = None,
                 limit: int | None = None) -> Iterator[Decoded]:
    """Decoded frames of ``path`` that pass the filters, at most ``limit``."""
    frames = read_pcap_frames(path)
    first = frames[0][0] if frames else 0
    shown = 0
    for i, (ts, frame) in enumerate(frames):
        if limit is not None and shown >= limit:
            return
        rec = decode_frame(frame, ts / 1e9, index=i, rel=(ts - first) / 1e9)
        if matches(rec, only, flow):
            shown += 1
            yield rec


def format_line(rec: Decoded) -> str:
    """``+0.001234 02:..:01 > 02:..:02 RoCE RC_RDMA_WRITE_MIDDLE qp=0x000011 psn=12 ...``"""
    head = f"{rec.rel:+11.6f} {rec.src} > {rec.dst} "
    f = rec.fields
    if rec.kind in ("roce", "cnp"):
        parts = ["CNP" if rec.kind == "cnp" else "RoCE", f"{rec.src_ip} > {rec.dst_ip}",
                 f["opcode_name"], f"qp={f['dest_qp']:#08x}", f"psn={f['psn']}"]
        if f["ack_req"]:
            parts.append("ack_req")
        parts.append(f"ecn={ECN_NAMES.get(rec.ecn or 0, rec.ecn)}")
        if f["fecn"]:
            parts.append("FECN")
        if f["becn"]:
            parts.append("BECN")
        if "aeth_syndrome" in f:
            parts.append(f"aeth=syn:{f['aeth_syndrome']:#04x},msn:{f['aeth_msn']}")
        if f["payload_len"]:
            parts.append(f"len={f['payload_len']}")
        parts.append("icrc=ok" if f["icrc_ok"] else "icrc=BAD")
        return head + " ".join(parts)
    if rec.kind == "pfc":
        q = f["quanta"]
        body = " ".join(f"p{p}={v}" for p, v in q.items()) or "no priority enabled"
        return head + f"PFC {body}"
    extra = f" ecn={ECN_NAMES[rec.ecn]}" if rec.ecn else ""
    return head + rec.summary + extra

"""Per-port packet captures, as BMv2's ``--pcap DIR`` writes them.

One file per port and direction, ``<iface>_in.pcap`` (frames received) and
``<iface>_out.pcap`` (frames sent), in the classic libpcap format with
nanosecond timestamps (magic 0xa1b23c4d, link type Ethernet), which
tcpdump, Wireshark and Scapy read. Timestamps are wall-clock time, or the
writer's ``clock_ns`` (the virtual-time target's simulated clock).
"""

from __future__ import annotations

import struct
import time
from pathlib import Path
from typing import BinaryIO, Callable

PCAP_MAGIC_NS = 0xA1B23C4D
LINKTYPE_ETHERNET = 1
SNAPLEN = 262_144
_HEADER = struct.Struct("<IHHiIII")
_RECORD = struct.Struct("<IIII")


class PcapWriter:
    """Appends frames to one pcap file; buffered, flushed on :meth:`flush`
    and :meth:`close`."""

    def __init__(self, path: str | Path, buffer_bytes: int = 1 << 16, *,
                 clock_ns: Callable[[], int] = time.time_ns) -> None:
        self.path = Path(path)
        self._clock_ns = clock_ns
        self._file: BinaryIO | None = open(self.path, "wb", buffering=buffer_bytes)
        self._file.write(_HEADER.pack(PCAP_MAGIC_NS, 2, 4, 0, 0, SNAPLEN, LINKTYPE_ETHERNET))
        self.packets = 0

    def write(self, frame: bytes, time_ns: int | None = None) -> None:
        if self._file is None:
            return
        ts = self._clock_ns() if time_ns is None else time_ns
        length = len(frame)
        kept = min(length, SNAPLEN)
        self._file.write(_RECORD.pack(ts // 1_000_000_000, ts % 1_000_000_000, kept, length))
        self._file.write(frame[:kept] if kept < length else frame)
        self.packets += 1

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def read_pcap(path: str | Path) -> list[tuple[int, bytes]]:
    """(timestamp in ns, frame) of every record of a file :class:`PcapWriter`
    wrote (for tests and quick looks)."""
    data = Path(path).read_bytes()
    magic = struct.unpack_from("<I", data)[0]
    if magic != PCAP_MAGIC_NS:
        raise ValueError(f"{path}: not a nanosecond pcap (magic {magic:#x})")
    off = _HEADER.size
    out = []
    while off + _RECORD.size <= len(data):
        sec, nsec, kept, _orig = _RECORD.unpack_from(data, off)
        off += _RECORD.size
        out.append((sec * 1_000_000_000 + nsec, data[off:off + kept]))
        off += kept
    return out

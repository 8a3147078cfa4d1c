"""Sizes, durations and queue thresholds as written in scenario files, and back.

- A **size** is a whole number of bytes: ``B``, ``KB`` (or ``kB``), ``MB``,
  ``GB`` are decimal (1000, 10⁶, 10⁹), as link rates are, so ``100Mbps`` moves
  ``12.5MB`` a second; ``KiB``, ``MiB``, ``GiB`` are binary (1024, 1024², 1024³)
  for when a power of two is meant. A plain integer is bytes. ``b`` means
  bits and is refused (``4Mb`` is a rate-style typo for ``4MB``).
- A **duration** is a whole number of nanoseconds written with ``ns``, ``us``,
  ``ms`` or ``s`` (the topology's delay units). A unit is required: ``10``
  would silently be 10 ns. Only ``0`` may stand alone.
- A **threshold** (ECN Kmin/Kmax, PFC XOFF/XON) is a size or a packet count
  ``20pkts`` (also ``1pkt``).

Rates reuse :mod:`emulator.topology.units`. Sizes live here, not there,
because no topology has one. Parsers raise :class:`ValueError` with the text
the caller puts before its hint; they know nothing of files or keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal

from emulator.topology.units import DELAY_UNITS_NS, format_delay, parse_delay_ns

SIZE_UNITS_BYTES: dict[str, int] = {
    "B": 1,
    "KB": 1_000,
    "kB": 1_000,
    "MB": 1_000_000,
    "GB": 1_000_000_000,
    "KiB": 1 << 10,
    "MiB": 1 << 20,
    "GiB": 1 << 30,
}
PACKET_UNITS = ("pkts", "pkt")

SIZE_HINT = "use a number with B, KB, MB or GB (e.g. 4MB), or KiB, MiB, GiB for powers of 1024"
DURATION_HINT = "use a number with ns, us, ms or s (e.g. 10s)"
THRESHOLD_HINT = "use a size (e.g. 20KB) or a packet count (e.g. 16pkts)"

_QUANTITY = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]*)\s*$")
_BITS = re.compile(r"^[KkMmGg]?i?b$")


def _split(value: str) -> tuple[Decimal, str] | None:
    match = _QUANTITY.match(value)
    if match is None:
        return None
    return Decimal(match["number"]), match["unit"]


def _whole(amount: Decimal, value: object, smallest: str) -> int:
    if amount != amount.to_integral_value():
        raise ValueError(f"{value!r} is not a whole number of {smallest}")
    return int(amount)


def parse_size_bytes(value: object) -> int:
    """``"4MB"`` -> 4_000_000, ``"4MiB"`` -> 4_194_304; a plain int is bytes."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        amount = value
    else:
        parts = _split(value)
        if parts is None:
            raise ValueError(f"{value!r} is not a size")
        number, unit = parts
        if unit == "":
            amount = _whole(number, value, "bytes")
        elif unit in SIZE_UNITS_BYTES:
            amount = _whole(number * SIZE_UNITS_BYTES[unit], value, "bytes")
        elif _BITS.match(unit):
            meant = unit[:1].upper() + unit[1:-1] + "B" if len(unit) > 1 else "B"
            raise ValueError(f"{value!r} is not a size: 'b' means bits and sizes are bytes "
                             f"(write {number}{meant})")
        else:
            raise ValueError(f"{value!r} is not a size")
    if amount < 0:
        raise ValueError(f"{value!r} is not a size >= 0")
    return amount


def parse_duration_ns(value: object) -> int:
    """``"10s"`` -> 10_000_000_000. A bare number other than 0 is refused."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, int) or (isinstance(value, str) and value.strip().isdigit()):
        if int(value) == 0:
            return 0
        raise ValueError(f"{value!r} has no unit (write {int(value)}s, {int(value)}ms, "
                         f"{int(value)}us or {int(value)}ns)")
    try:
        duration_ns = parse_delay_ns(value)
    except ValueError as exc:
        raise ValueError(str(exc).replace("a delay", "a duration")) from None
    return duration_ns


@dataclass(frozen=True)
class Threshold:
    """A queue threshold as written: ``amount`` bytes or ``amount`` packets."""

    amount: int
    unit: str  # "bytes" or "pkts"

    def to_bytes(self, frame_bytes: int) -> int:
        """Bytes; a packet count is that many full-size frames."""
        return self.amount if self.unit == "bytes" else self.amount * frame_bytes

    def to_packets(self, frame_bytes: int) -> int:
        """Packets of ``frame_bytes``; bytes round UP to whole frames.

        Rounding up means a queue of full-size frames passes the packet
        threshold only once it holds more than the bytes asked for.
        """
        if self.unit == "pkts":
            return self.amount
        return -(-self.amount // frame_bytes)

    def __str__(self) -> str:
        return f"{self.amount}pkts" if self.unit == "pkts" else format_size(self.amount)


def parse_threshold(value: object) -> Threshold:
    """``"20KB"`` -> 20000 bytes; ``"16pkts"`` -> 16 packets; a plain int is bytes."""
    if isinstance(value, str):
        parts = _split(value)
        if parts is not None and parts[1] in PACKET_UNITS:
            return Threshold(_whole(parts[0], value, "packets"), "pkts")
    try:
        return Threshold(parse_size_bytes(value), "bytes")
    except ValueError as exc:
        raise ValueError(str(exc).replace("is not a size", "is not a threshold")) from None


def format_size(size_bytes: int) -> str:
    """4_000_000 -> ``"4MB"``, 65536 -> ``"64KiB"``, 1500 -> ``"1500B"``.

    The largest decimal unit that keeps it whole, else the largest binary
    unit, else bytes: it always parses back to the same number.
    """
    for unit in ("GB", "MB", "KB", "GiB", "MiB", "KiB"):
        scale = SIZE_UNITS_BYTES[unit]
        if size_bytes >= scale and size_bytes % scale == 0:
            return f"{size_bytes // scale}{unit}"
    return f"{size_bytes}B"


def format_duration(duration_ns: int) -> str:
    """2_000_000_000 -> ``"2s"``; 0 -> ``"0s"``."""
    return format_delay(duration_ns) if duration_ns else "0s"


__all__ = [
    "DELAY_UNITS_NS",
    "DURATION_HINT",
    "SIZE_HINT",
    "SIZE_UNITS_BYTES",
    "THRESHOLD_HINT",
    "Threshold",
    "format_duration",
    "format_size",
    "parse_duration_ns",
    "parse_size_bytes",
    "parse_threshold",
]

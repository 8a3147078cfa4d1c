"""Link rates and delays as written in topology files, and back.

A rate is a whole number of bits per second, written with a unit (``bps``,
``Kbps``, ``Mbps``, ``Gbps``, ``Tbps``, or in bytes per second as data-centre
sheets quote scale-up links: ``KBps``, ``MBps``, ``GBps``, ``TBps``; spelled
exactly so; decimal multiples of 1000) or as a plain integer meaning bps.
Rates are written back in bit units up to ``Gbps``, as files wrote them before. A delay is a whole number of nanoseconds,
written with ``ns``, ``us``, ``ms`` or ``s``, or as a plain integer meaning ns.
Fractions are fine when the result is whole (``2.5Gbps``, ``1.5us``).

Parsers raise :class:`ValueError` with the hint the caller puts into its
one-line error; they know nothing of files or keys.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

RATE_UNITS_BPS: dict[str, int] = {
    "bps": 1,
    "Kbps": 1_000,
    "Mbps": 1_000_000,
    "Gbps": 1_000_000_000,
}
# Units a file may write besides RATE_UNITS_BPS (formatting never picks them).
EXTRA_RATE_UNITS_BPS: dict[str, int] = {
    "Tbps": 1_000_000_000_000,
    "KBps": 8_000,
    "MBps": 8_000_000,
    "GBps": 8_000_000_000,
    "TBps": 8_000_000_000_000,
}
DELAY_UNITS_NS: dict[str, int] = {
    "ns": 1,
    "us": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
}

RATE_HINT = "use a number with bps, Kbps, Mbps or Gbps (e.g. 100Mbps)"
SCALE_UP_RATE_HINT = "use a number with Gbps, Tbps or bytes per second GBps, TBps (e.g. 450GBps)"
DELAY_HINT = "use a number with ns, us, ms or s (e.g. 5us)"

_QUANTITY = re.compile(r"^\s*(?P<number>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z]+)\s*$")


def _parse(value: object, units: dict[str, int], what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not {what}")
    if isinstance(value, int):
        return value
    if not isinstance(value, str):
        raise ValueError(f"{value!r} is not {what}")
    match = _QUANTITY.match(value)
    if match is None or match["unit"] not in units:
        raise ValueError(f"{value!r} is not {what}")
    try:
        amount = Decimal(match["number"]) * units[match["unit"]]
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise ValueError(f"{value!r} is not {what}") from exc
    if amount != amount.to_integral_value():
        smallest = min(units, key=units.__getitem__)
        raise ValueError(f"{value!r} is not a whole number of {smallest}")
    return int(amount)


def parse_rate_bps(value: object) -> int:
    """``"100Mbps"`` -> 100_000_000; a plain int is already bps."""
    rate_bps = _parse(value, {**RATE_UNITS_BPS, **EXTRA_RATE_UNITS_BPS}, "a rate")
    if rate_bps <= 0:
        raise ValueError(f"{value!r} is not a positive rate")
    return rate_bps


def parse_delay_ns(value: object) -> int:
    """``"5us"`` -> 5000; a plain int is already ns."""
    delay_ns = _parse(value, DELAY_UNITS_NS, "a delay")
    if delay_ns < 0:
        raise ValueError(f"{value!r} is not a delay >= 0")
    return delay_ns


DISTANCE_UNITS_M: dict[str, int] = {"m": 1, "km": 1_000}
DISTANCE_HINT = "use a number with m or km (e.g. 10km)"


def parse_distance_m(value: object) -> int:
    """``"10km"`` -> 10_000; a plain int is already metres."""
    distance_m = _parse(value, DISTANCE_UNITS_M, "a distance")
    if distance_m < 0:
        raise ValueError(f"{value!r} is not a distance >= 0")
    return distance_m


def format_distance(distance_m: int) -> str:
    """10_000 -> ``"10km"``."""
    return _format(distance_m, DISTANCE_UNITS_M)


def _format(amount: int, units: dict[str, int]) -> str:
    for unit, scale in sorted(units.items(), key=lambda item: -item[1]):
        if amount >= scale and amount % scale == 0:
            return f"{amount // scale}{unit}"
    smallest = min(units, key=units.__getitem__)
    return f"{amount}{smallest}"


def format_rate(rate_bps: int) -> str:
    """100_000_000 -> ``"100Mbps"``: the largest unit that keeps it whole."""
    return _format(rate_bps, RATE_UNITS_BPS)


def format_delay(delay_ns: int) -> str:
    """5000 -> ``"5us"``: the largest unit that keeps it whole."""
    return _format(delay_ns, DELAY_UNITS_NS)

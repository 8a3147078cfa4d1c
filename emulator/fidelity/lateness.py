"""Lateness of scheduled events, measured where they happen, cheaply.

A live switch times every departure on a virtual clock (when the frame
*should* reach the wire) and a NIC agent paces its frames the same way;
both then run on a shared CPU and do the work when they get to it. The
difference, *lateness*, is what Mininet-HiFi (Handigol et al., CoNEXT
2012) monitors: a departure later than about one frame time at its link's
rate means the run measured the host, not the network.

:class:`LatenessHistogram` counts lateness in µs in log-linear buckets:
exact below 32 µs, then 8 buckets per power of two (each at most 12.5 %
wide), so p99 against a threshold reads within one bucket. Recording is a
few integer operations. The JSON form (:meth:`~LatenessHistogram.to_dict`)
is sparse, and histograms of many ports or processes merge by adding
buckets (:func:`merge_histograms`).

:class:`BehindSeries` keeps, per time bin, how many events happened, how
many were late by more than their threshold, the worst lateness and the
lag given up: the spans where a process fell behind, for the plots.

Thresholds use :data:`REFERENCE_FRAME_BYTES` (a 1,500-byte frame: 1,200 /
120 / 12 µs at 10 M / 100 M / 1 G), so every port and NIC is judged
against the same frame at its own rate.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping

REFERENCE_FRAME_BYTES = 1500
EXACT_US = 32          # buckets 0..31 are exact microseconds
SUB_BUCKETS = 8        # per power of two above that
DEFAULT_BIN_S = 0.01
MAX_BINS = 6000        # 60 s of 10 ms bins per process


def frame_time_us(rate_bps: float, frame_bytes: int = REFERENCE_FRAME_BYTES) -> float:
    """Serialisation time of ``frame_bytes`` at ``rate_bps`` (inf at rate 0:
    an unlimited port has no frame time, so no lateness is too much)."""
    return frame_bytes * 8 / rate_bps * 1e6 if rate_bps > 0 else float("inf")


def bucket_of(late_us: int) -> int:
    """The bucket of an integer lateness in µs (negative counts as 0)."""
    if late_us < EXACT_US:
        return late_us if late_us > 0 else 0
    bits = late_us.bit_length()
    return EXACT_US + (bits - 6) * SUB_BUCKETS + ((late_us >> (bits - 4)) & 7)


def bucket_upper_us(index: int) -> int:
    """The largest lateness (µs) bucket ``index`` holds."""
    if index < EXACT_US:
        return index
    j = index - EXACT_US
    bits = j // SUB_BUCKETS + 6
    width = 1 << (bits - 4)
    return ((SUB_BUCKETS + j % SUB_BUCKETS) * width) + width - 1


class LatenessHistogram:
    """Counts of lateness (µs) by bucket, with count, sum and max."""

    __slots__ = ("buckets", "count", "sum_us", "max_us")

    def __init__(self) -> None:
        self.buckets: dict[int, int] = {}
        self.count = 0
        self.sum_us = 0
        self.max_us = 0

    def record_s(self, late_s: float) -> int:
        """Count one event ``late_s`` seconds late (≤ 0: on time); returns µs."""
        us = int(late_s * 1e6) if late_s > 0 else 0
        index = us if us < EXACT_US else bucket_of(us)
        buckets = self.buckets
        buckets[index] = buckets.get(index, 0) + 1
        self.count += 1
        self.sum_us += us
        if us > self.max_us:
            self.max_us = us
        return us

    def add(self, other: "LatenessHistogram") -> None:
        for index, n in other.buckets.items():
            self.buckets[index] = self.buckets.get(index, 0) + n
        self.count += other.count
        self.sum_us += other.sum_us
        self.max_us = max(self.max_us, other.max_us)

    def percentile_us(self, fraction: float) -> int | None:
        """The upper bound of the bucket holding the ``fraction`` quantile
        (None when empty): never below the true quantile."""
        if not self.count:
            return None
        rank = fraction * self.count
        seen = 0
        for index in sorted(self.buckets):
            seen += self.buckets[index]
            if seen >= rank:
                return min(bucket_upper_us(index), self.max_us)
        return self.max_us

    def fraction_over_us(self, threshold_us: float) -> float:
        """Share of events whose bucket lies wholly above ``threshold_us``."""
        if not self.count:
            return 0.0
        over = sum(n for i, n in self.buckets.items()
                   if (bucket_upper_us(i - 1) if i else -1) >= threshold_us)
        return over / self.count

    def reset(self) -> None:
        self.buckets = {}
        self.count = self.sum_us = self.max_us = 0

    def to_dict(self) -> dict[str, Any]:
        return {"count": self.count, "sum_us": self.sum_us, "max_us": self.max_us,
                "buckets": {str(i): n for i, n in sorted(self.buckets.items())}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "LatenessHistogram":
        h = cls()
        if not data:
            return h
        h.buckets = {int(i): int(n) for i, n in (data.get("buckets") or {}).items()}
        h.count = int(data.get("count", sum(h.buckets.values())))
        h.sum_us = int(data.get("sum_us", 0))
        h.max_us = int(data.get("max_us", 0))
        return h

    def summary(self) -> dict[str, Any]:
        """count, p50/p99/max in µs: what results carry."""
        return {"count": self.count, "p50_us": self.percentile_us(0.5),
                "p99_us": self.percentile_us(0.99), "max_us": self.max_us if self.count else None}


def merge_histograms(parts: Iterable[Mapping[str, Any] | LatenessHistogram | None]
                     ) -> LatenessHistogram:
    """One histogram of many (JSON forms or objects; None skipped)."""
    total = LatenessHistogram()
    for part in parts:
        if part is None:
            continue
        total.add(part if isinstance(part, LatenessHistogram)
                  else LatenessHistogram.from_dict(part))
    return total


class BehindSeries:
    """Per bin of ``interval_s`` on the owner's clock: ``[events, late
    events (beyond their threshold), max lateness µs, lag given up µs]``;
    the last :data:`MAX_BINS` bins with anything in them are kept."""

    __slots__ = ("interval_s", "bins", "max_bins", "_scale")

    def __init__(self, interval_s: float = DEFAULT_BIN_S, max_bins: int = MAX_BINS) -> None:
        self.interval_s = interval_s
        self.max_bins = max_bins
        self.bins: dict[int, list[int]] = {}
        self._scale = 1.0 / interval_s

    def _bin(self, now: float) -> list[int]:
        index = int(now * self._scale)
        row = self.bins.get(index)
        if row is None:
            row = self.bins[index] = [0, 0, 0, 0]
            if len(self.bins) > self.max_bins:
                del self.bins[min(self.bins)]
        return row

    def event(self, now: float, late_us: int, threshold_us: float) -> None:
        row = self._bin(now)
        row[0] += 1
        if late_us > threshold_us:
            row[1] += 1
        if late_us > row[2]:
            row[2] = late_us
        return None

    def gave_up(self, now: float, lag_s: float) -> None:
        self._bin(now)[3] += int(lag_s * 1e6)

    def reset(self) -> None:
        self.bins = {}

    def to_dict(self, unix_offset_s: float = 0.0) -> dict[str, Any]:
        """``{"interval_s", "bins": [[start_unix, events, late, max_late_us,
        given_up_us], ...]}`` in time order."""
        return {"interval_s": self.interval_s,
                "bins": [[round(i * self.interval_s + unix_offset_s, 6), *row]
                         for i, row in sorted(self.bins.items())]}

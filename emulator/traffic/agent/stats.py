"""Counters of the agent, per queue pair and per NIC, and the sums they obey.

Queue pair, requester side (data it sends)::

    packets_sent      = first_tx_packets + retransmit_packets
    bytes_acked      <= payload_bytes_first_tx <= bytes_posted
    messages_posted   = messages_completed + messages_failed + messages_outstanding

Queue pair, responder side (data it receives)::

    data_packets_rx   = accepted_packets + duplicate_packets + out_of_order_packets
                        + opcode_errors
    ce_packets_rx     = cnps_sent - cnps_deferred + cnps_suppressed
                        (a CE mark gets a CNP at once or is suppressed; one
                        deferred CNP goes at the end of an interval in which
                        marks were suppressed)

NIC::

    tx_packets + tx_errors = Σ over its QPs of packets_sent + acks_sent
                             + naks_sent + cnps_sent, + pfc_tx
    pfc_storm_frames      <= pfc_tx   (a storm's XOFFs; its closing XON is
                                       the rest, see .storm)
    rx_packets             = roce_rx + pfc_rx + other_rx

A frame the socket refused (``tx_errors``) is lost as on a wire: the
transport recovers it.

Time series. Each queue pair also counts per time bin (:class:`QpSeries`,
bins of a NIC's :class:`SeriesClock`): ``tx_bytes`` (payload sent the
first time), ``retx_bytes`` (payload sent again), ``rx_bytes`` (payload
accepted), ``ce_packets_rx``, ``cnps_sent``, ``cnps_rx``. Each series sums
to its counter::

    Σ tx_bytes = payload_bytes_first_tx      Σ rx_bytes      = payload_bytes_rx
    Σ retx_bytes = payload_bytes_sent − payload_bytes_first_tx
    Σ ce_packets_rx = ce_packets_rx   Σ cnps_sent = cnps_sent   Σ cnps_rx = cnps_rx

A NIC records its PFC pause intervals per priority (:mod:`.pfc`)::

    Σ (end − start) over a priority's intervals <= paused_s[priority]
    (equal when none was dropped past the cap)

:func:`check_invariants` asserts all of the above on a stats snapshot (the
tests call it; so can a runner).
"""

from __future__ import annotations

import json
import os
from typing import Any

QP_TX_COUNTERS = ("bytes_posted", "messages_posted", "messages_completed", "messages_failed",
                  "packets_sent", "first_tx_packets", "retransmit_packets", "bytes_sent",
                  "payload_bytes_sent", "payload_bytes_first_tx", "bytes_acked",
                  "acks_rx", "naks_rx", "naks_seq_rx", "stale_acks_rx", "timeouts",
                  "retry_exceeded", "go_back_n", "cnps_rx", "rtt_samples")
QP_RX_COUNTERS = ("data_packets_rx", "accepted_packets", "payload_bytes_rx",
                  "duplicate_packets", "out_of_order_packets", "opcode_errors",
                  "messages_rx", "acks_sent", "naks_sent", "ce_packets_rx", "cnps_sent",
                  "cnps_suppressed", "cnps_deferred")
NIC_COUNTERS = ("tx_packets", "tx_bytes", "tx_errors", "rx_packets", "rx_bytes", "roce_rx",
                "pfc_rx", "other_rx", "not_for_us_rx", "unknown_qp_rx", "bad_icrc_rx",
                "malformed_rx", "mac_control_other_rx", "pfc_tx", "pfc_storm_frames")


class QpCounters:
    """Plain integer counters of one queue pair (names in QP_*_COUNTERS)."""

    __slots__ = QP_TX_COUNTERS + QP_RX_COUNTERS

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


class NicCounters:
    __slots__ = NIC_COUNTERS

    def __init__(self) -> None:
        for name in self.__slots__:
            setattr(self, name, 0)

    def to_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in self.__slots__}


SERIES_KEYS = ("tx_bytes", "retx_bytes", "rx_bytes", "ce_packets_rx", "cnps_sent", "cnps_rx")
TX_BYTES, RETX_BYTES, RX_BYTES, CE_PACKETS, CNPS_SENT, CNPS_RX = range(len(SERIES_KEYS))
# 4096 bins: 41 s at the default 10 ms before the first coarsening.
MAX_SERIES_BINS = 4096


class SeriesClock:
    """The time bins of the series of one NIC's queue pairs: bin ``i``
    covers ``[t0 + i·bin_s, t0 + (i+1)·bin_s)`` of the agent's clock.

    Memory is capped at ``max_bins`` per series: a count that falls past
    the last bin makes every series on this clock merge its bins pairwise
    (``bin_s`` doubles, ``coarsenings`` counts how often), so a long run
    keeps its whole history at a coarser resolution and every sum stays
    exact."""

    __slots__ = ("t0", "bin_s", "max_bins", "coarsenings", "_series")

    def __init__(self, t0: float, bin_s: float, max_bins: int = MAX_SERIES_BINS) -> None:
        if not bin_s > 0:
            raise ValueError(f"series bin must be positive, got {bin_s!r} s")
        if max_bins < 2:
            raise ValueError(f"series need at least 2 bins, got {max_bins}")
        self.t0 = t0
        self.bin_s = bin_s
        self.max_bins = max_bins
        self.coarsenings = 0
        self._series: list[list[int]] = []

    def register(self, counts: list[int]) -> None:
        self._series.append(counts)

    def fit(self, index: int) -> int:
        """Coarsen until bin ``index`` (of the current bins) fits; its new index."""
        while index >= self.max_bins:
            self.bin_s *= 2
            self.coarsenings += 1
            index //= 2
            for counts in self._series:
                n = len(counts)
                counts[:] = [counts[k] + (counts[k + 1] if k + 1 < n else 0)
                             for k in range(0, n, 2)]
        return index


class QpSeries:
    """Counts per time bin of one queue pair (:data:`SERIES_KEYS`, the
    module docstring); one list per series, as long as its last count."""

    __slots__ = ("clock", "bins")

    def __init__(self, clock: SeriesClock) -> None:
        self.clock = clock
        self.bins: tuple[list[int], ...] = tuple([] for _ in SERIES_KEYS)
        for counts in self.bins:
            clock.register(counts)

    def add(self, kind: int, now: float, amount: int) -> None:
        """Count ``amount`` in series ``kind`` at ``now`` (per packet: an index
        and an increment; a list grows only when a new bin starts)."""
        clock = self.clock
        i = int((now - clock.t0) / clock.bin_s)
        if i >= clock.max_bins:
            i = clock.fit(i)
        elif i < 0:
            i = 0
        counts = self.bins[kind]
        n = len(counts)
        if i < n:
            counts[i] += amount
        else:
            if i > n:
                counts.extend([0] * (i - n))
            counts.append(amount)

    def to_dict(self, wall_offset: float = 0.0) -> dict[str, Any]:
        clock = self.clock
        out: dict[str, Any] = {"bin_s": clock.bin_s, "start_unix": clock.t0 + wall_offset,
                               "coarsenings": clock.coarsenings}
        for key, counts in zip(SERIES_KEYS, self.bins):
            out[key] = list(counts)
        return out


class InvariantError(AssertionError):
    """A stats snapshot breaks one of the documented sums."""


def check_invariants(snapshot: dict[str, Any]) -> None:
    """Raise :class:`InvariantError` naming the first sum that does not hold."""
    for qp in snapshot["qps"]:
        c = qp["counters"]
        name = f"qp {qp['qpn']}"
        _eq(c["packets_sent"], c["first_tx_packets"] + c["retransmit_packets"],
            f"{name}: packets_sent = first_tx + retransmits")
        _le(c["bytes_acked"], c["payload_bytes_first_tx"], f"{name}: bytes_acked <= first tx")
        _le(c["payload_bytes_first_tx"], c["bytes_posted"], f"{name}: first tx <= posted")
        _eq(c["messages_posted"],
            c["messages_completed"] + c["messages_failed"] + qp["messages_outstanding"],
            f"{name}: posted = completed + failed + outstanding")
        _eq(c["data_packets_rx"], c["accepted_packets"] + c["duplicate_packets"]
            + c["out_of_order_packets"] + c["opcode_errors"], f"{name}: data rx sum")
        _eq(c["ce_packets_rx"], c["cnps_sent"] - c.get("cnps_deferred", 0) + c["cnps_suppressed"],
            f"{name}: CE = CNPs")
        _le(c.get("cnps_deferred", 0), c["cnps_suppressed"], f"{name}: deferred <= suppressed")
        series = qp.get("series")
        if series is not None:
            for key, total in (
                    ("tx_bytes", c["payload_bytes_first_tx"]),
                    ("retx_bytes", c["payload_bytes_sent"] - c["payload_bytes_first_tx"]),
                    ("rx_bytes", c["payload_bytes_rx"]), ("ce_packets_rx", c["ce_packets_rx"]),
                    ("cnps_sent", c["cnps_sent"]), ("cnps_rx", c["cnps_rx"])):
                _eq(sum(series[key]), total, f"{name}: series {key} sum")
    for nic in snapshot["nics"]:
        c = nic["counters"]
        qps = [q["counters"] for q in snapshot["qps"] if q["nic"] == nic["name"]]
        sent = sum(q["packets_sent"] + q["acks_sent"] + q["naks_sent"] + q["cnps_sent"]
                   for q in qps)
        _eq(c["tx_packets"] + c["tx_errors"], sent + c.get("pfc_tx", 0),
            f"nic {nic['name']}: tx attempts")
        _le(c.get("pfc_storm_frames", 0), c.get("pfc_tx", 0),
            f"nic {nic['name']}: storm frames <= pfc_tx")
        _eq(c["rx_packets"], c["roce_rx"] + c["pfc_rx"] + c["other_rx"],
            f"nic {nic['name']}: rx sum")
        intervals = nic.get("pause_intervals")
        if intervals is not None:
            for prio, spans in enumerate(intervals):
                paused = sum(end - start for start, end in spans)
                limit = nic["paused_s"][prio]
                slack = 1e-6 * (1 + len(spans))  # Unix times round to ~0.2 µs each
                what = f"nic {nic['name']}: pause intervals of priority {prio}"
                _le(paused, limit + slack, f"{what} <= paused_s")
                if not nic.get("pause_intervals_dropped"):
                    _le(limit, paused + slack, f"{what} = paused_s")


def _eq(a: float, b: float, what: str) -> None:
    if a != b:
        raise InvariantError(f"{what}: {a} != {b}")


def _le(a: float, b: float, what: str) -> None:
    if a > b:
        raise InvariantError(f"{what}: {a} > {b}")


class MessageLog:
    """Records of messages: sent ones when they complete or fail, received
    ones when their last packet arrives; at most ``max_records`` of each
    (the rest are counted in ``dropped``). Times are the agent's clock."""

    __slots__ = ("max_records", "sent", "received", "dropped", "listeners")

    def __init__(self, max_records: int = 100_000) -> None:
        self.max_records = max_records
        self.sent: list[dict[str, Any]] = []
        self.received: list[dict[str, Any]] = []
        self.dropped = 0
        self.listeners: list = []  # callables(kind, record): the control channel's events

    def add_sent(self, record: dict[str, Any]) -> None:
        self._add(self.sent, "completion", record)

    def add_received(self, record: dict[str, Any]) -> None:
        self._add(self.received, "receive", record)

    def _add(self, into: list, kind: str, record: dict[str, Any]) -> None:
        if len(into) < self.max_records:
            into.append(record)
        else:
            self.dropped += 1
        for listener in self.listeners:
            listener(kind, record)


def write_stats(path: str | os.PathLike[str], snapshot: dict[str, Any]) -> None:
    """Write a stats snapshot as JSON through a temporary file and a rename,
    so a reader never sees half a file."""
    tmp = f"{os.fspath(path)}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            json.dump(snapshot, f, separators=(",", ":"), allow_nan=False)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise

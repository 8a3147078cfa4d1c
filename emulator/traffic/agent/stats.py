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
                             + naks_sent + cnps_sent
    rx_packets             = roce_rx + pfc_rx + other_rx

A frame the socket refused (``tx_errors``) is lost as on a wire: the
transport recovers it. :func:`check_invariants` asserts all of the above
on a stats snapshot (the tests call it; so can a runner).
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
                "malformed_rx", "mac_control_other_rx")


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
    for nic in snapshot["nics"]:
        c = nic["counters"]
        qps = [q["counters"] for q in snapshot["qps"] if q["nic"] == nic["name"]]
        sent = sum(q["packets_sent"] + q["acks_sent"] + q["naks_sent"] + q["cnps_sent"]
                   for q in qps)
        _eq(c["tx_packets"] + c["tx_errors"], sent, f"nic {nic['name']}: tx attempts")
        _eq(c["rx_packets"], c["roce_rx"] + c["pfc_rx"] + c["other_rx"],
            f"nic {nic['name']}: rx sum")


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

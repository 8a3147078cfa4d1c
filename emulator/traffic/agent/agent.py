"""The agent of one server: its NICs, queue pairs, workload and timers,
driven by whoever owns the clock.

An :class:`Agent` does no I/O waiting and reads no clock: the real event
loop (:mod:`.loop`) or the virtual-time harness (:mod:`.sim`) calls
:meth:`Agent.on_frame` for each received frame, :meth:`Agent.service` to run
due timers and send what may leave, and :meth:`Agent.next_wakeup` to learn
when to call again. Times are seconds on the driver's monotonic clock;
``wall_offset`` turns them into Unix time in records and stats.

Workload: the config's messages are posted by timers at ``start + at_s +
i × interval_s``, where start is ``workload.start_at_unix`` (shared by all
agents of a run) or the agent's start; work-graph messages wait for the
data they depend on (:mod:`.workgraph`). :meth:`Agent.post` posts one more,
now or later (the control channel's ``post``).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Callable

from emulator.traffic.agent.config import AgentConfig, MessageSpec
from emulator.traffic.agent.nic import Nic
from emulator.traffic.agent.qp import QpError, QueuePair
from emulator.traffic.agent.stats import MessageLog
from emulator.traffic.agent.timers import TimerHeap
from emulator.traffic.agent.workgraph import WorkGraph

STATS_VERSION = 1
INF = math.inf


class AgentError(RuntimeError):
    """A request the agent cannot carry out (unknown QP, bad operation)."""


class Agent:
    """NICs, QPs, workload and timers of one server (see the module docstring)."""

    def __init__(self, config: AgentConfig, backends: dict[str, Any], now: float, *,
                 wall_offset: float = 0.0) -> None:
        self.config = config
        self.wall = wall_offset
        self.started_at = now
        self.timers = TimerHeap()
        self._timer_heap = self.timers.heap  # looked at on every turn: due or not
        self.log = MessageLog(config.run.max_message_records)
        self.nics: list[Nic] = []
        self.nic_by_name: dict[str, Nic] = {}
        for nic_config in config.nics:
            if nic_config.name not in backends:
                raise AgentError(f"no back end for NIC {nic_config.name}")
            nic = Nic(nic_config, backends[nic_config.name], now,
                      check_icrc=config.run.check_icrc, wall_offset=wall_offset,
                      series_bin_s=config.run.series_bin_ms / 1e3,
                      series_origin_unix=config.start_at_unix)
            self.nics.append(nic)
            self.nic_by_name[nic_config.name] = nic
        self.qps: dict[int, QueuePair] = {}
        for qp_config in config.qps:
            nic = self.nic_by_name[qp_config.nic]
            qp = QueuePair(qp_config, nic, self.timers, self.log, now, wall_offset=wall_offset,
                           cnp_dscp=config.cnp_dscp, cnp_priority=config.cnp_priority,
                           max_rate_samples=config.run.max_rate_samples)
            nic.add_qp(qp)
            self.qps[qp.qpn] = qp
        self.stopped = False
        self.stop_reason: str | None = None
        self.stopped_at: float | None = None
        self.on_stop: Callable[[str], None] | None = None
        start = now if config.start_at_unix is None else config.start_at_unix - wall_offset
        self.workload_start = start
        for spec in config.messages:
            if spec.count and not spec.in_graph:
                self.timers.schedule(start + spec.at_s, self._workload_timer(spec, 0))
        # ``after`` names indices of config.messages; the graph numbers its own
        in_graph = {i: k for k, i in enumerate(
            i for i, s in enumerate(config.messages) if s.in_graph)}
        self.graph = WorkGraph([replace(s, after=tuple(in_graph[a] for a in s.after))
                                for s in config.messages if s.in_graph], self.timers, start,
                               self.post, wall_offset=wall_offset)
        if len(self.graph):
            self.log.listeners.append(self.graph.on_log)
        if config.run.duration_s is not None:
            self.timers.schedule(now + config.run.duration_s,
                                 lambda t: self.stop("duration", t))

    # -- workload -------------------------------------------------------------------

    def _workload_timer(self, spec: MessageSpec, index: int) -> Callable[[float], None]:
        def fire(when: float) -> None:
            self.post(spec.qp, spec.op, spec.size_bytes, when)
            if index + 1 < spec.count:
                self.timers.schedule(when + spec.interval_s, self._workload_timer(spec, index + 1))
        return fire

    def post(self, qpn: int, op: str, size: int, now: float, *, at: float | None = None
             ) -> int | None:
        """Post a message on QP ``qpn`` now (returns its id) or at time ``at``
        of the agent's clock (returns None; the record carries the id)."""
        qp = self.qps.get(qpn)
        if qp is None:
            raise AgentError(f"no queue pair {qpn}")
        if at is not None and at > now:
            if op not in ("write", "send") or size < 0:
                raise AgentError(f"bad message: op {op!r}, size {size}")
            self.timers.schedule(at, lambda t: self._post_quietly(qp, op, size, t))
            return None
        try:
            return qp.post(op, size, now)
        except QpError as exc:
            raise AgentError(str(exc)) from None

    def _post_quietly(self, qp: QueuePair, op: str, size: int, now: float) -> None:
        try:
            qp.post(op, size, now)
        except QpError:
            pass  # the QP went to error before the time came; nothing to send it on

    # -- driving ----------------------------------------------------------------------

    def on_frame(self, nic_index: int, frame: bytes, now: float) -> None:
        self.nics[nic_index].on_frame(frame, now)

    def service(self, now: float) -> int:
        """Run due timers, then send what each NIC may send at ``now``;
        returns how many frames left."""
        heap = self._timer_heap
        if heap and heap[0][0] <= now:
            self.timers.run_due(now)
        sent = 0
        for nic in self.nics:
            sent += nic.service(now)
        return sent

    def next_wakeup(self) -> float:
        heap = self._timer_heap
        if heap:
            top = heap[0]
            t = top[0] if top[3] else self.timers.next_time()
        else:
            t = INF
        for nic in self.nics:
            n = nic.next_tx_time()
            if n < t:
                t = n
        return t

    def stop(self, reason: str, now: float) -> None:
        if not self.stopped:
            self.stopped = True
            self.stop_reason = reason
            self.stopped_at = now
            if self.on_stop is not None:
                self.on_stop(reason)

    # -- reporting ----------------------------------------------------------------------

    def status(self, now: float) -> dict[str, Any]:
        """A small summary for polling: per QP, messages outstanding and done,
        bytes acknowledged and received, CE marks and CNPs, the DCQCN rate;
        per NIC that ever got a pause frame, its paused time and the XOFF
        frames it acted on, per priority, and which priorities it holds now."""
        return {"agent": self.config.name, "now_unix": now + self.wall,
                "elapsed_s": now - self.started_at, "stopped": self.stopped,
                "graph_pending": self.graph.pending(),
                "qps": {str(n): {"outstanding": len(qp.msgs), "error": qp.error,
                                 "completed": qp.counters.messages_completed,
                                 "failed": qp.counters.messages_failed,
                                 "received": qp.counters.messages_rx,
                                 "bytes_acked": qp.counters.bytes_acked,
                                 # responder side, for the web view's per-flow series
                                 "payload_bytes_rx": qp.counters.payload_bytes_rx,
                                 "ce_packets_rx": qp.counters.ce_packets_rx,
                                 "cnps_sent": qp.counters.cnps_sent,
                                 "cnps_rx": qp.counters.cnps_rx,
                                 "rate_bps": None if qp.rp is None else qp.rp.rc_bps}
                        for n, qp in self.qps.items()},
                # the pauses the NICs honoured, for the web view: only NICs paused once
                "nic_pauses": {nic.config.name: {"paused_s": nic.pause.total_paused_s(now),
                                                 "frames": list(nic.pause.pauses),
                                                 "mask": nic.pause.mask}
                               for nic in self.nics if nic.pause.frames}}

    def snapshot(self, now: float) -> dict[str, Any]:
        """Everything measured so far (the stats file's content)."""
        return {
            "version": STATS_VERSION,
            "agent": self.config.name,
            "start_unix": self.started_at + self.wall,
            "workload_start_unix": self.workload_start + self.wall,
            "now_unix": now + self.wall,
            "elapsed_s": now - self.started_at,
            "stopped": self.stopped,
            "stop_reason": self.stop_reason,
            "nics": [nic.snapshot(now) for nic in self.nics],
            "qps": [qp.snapshot(now) for qp in self.qps.values()],
            "messages": {"sent": list(self.log.sent), "received": list(self.log.received),
                         "records_dropped": self.log.dropped},
            "graph": self.graph.records(),
            "lag_given_up": {nic.config.name: {"s": round(nic.pacer.given_up_s, 6),
                                               "events": nic.pacer.given_up_events}
                             for nic in self.nics},
            "config": _jsonable(self.config.to_dict()),
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and math.isinf(value):
        return None
    return value

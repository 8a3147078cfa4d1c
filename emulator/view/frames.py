"""From what a run reports over time to what the page shows: frames.

A run hands the feed *samples*: ``(t_s, snapshot)``, ``t_s`` on the run's
clock (simulated seconds on sim, seconds since the common start on a live
run) and ``snapshot`` a plain dict of cumulative readings, any part of
which may be missing:

- ``switches``: ``{switch: the switch's port statistics}`` (the built-in
  target's ``GetPortStats`` answer, ``DataPlane.stats()``);
- ``agents``: ``{server: the NIC agent's status}`` (``Agent.status``, with
  the pauses its NICs honoured);
- ``counters``: ``{switch: {port: {priority: P4 counters}}}`` (the
  controller's ``read_counters``, since the run's start);
- ``fidelity``: ``{"late_p99_us", "cpu_busy", ...}`` (live runs).

:class:`Deriver` turns consecutive samples into a *frame*, a small dict of
what happened over the interval since the previous sample::

    {"t": s, "dt": s,
     "util": {edge: fraction of the line},  "paused": [edge, ...],
     ("umean": {bundle edge: mean use} where the picture is in blocks,
      ``util`` then being each bundle's busiest member: Picture.fold)
     "q": {"switch:port:prio": depth bytes},
     "pfc": {"switch:port:prio": [pause frames per s, fraction of dt paused],
             "server:nic:prio": [XOFF frames the NIC acted on per s, fraction held]},
     "fl": {flow: [DCQCN rate bps, goodput bps or None at its first answer]},
     "ecnq": {"switch:port:prio": CE marks per s (the P4 counter)},
     "ecn": CE-marked packets received per s, "cnp": CNPs sent per s,
     "fid": {...}, "prog": {"t", "of", "acked", "total"}}

and keeps :class:`Totals`, the latest cumulative state (what ``/metrics``
exports). It reads counters the run keeps anyway, once per sample: no work
per packet.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from emulator.view.picture import Picture


@dataclass
class Totals:
    """The latest cumulative readings of a run (see :mod:`.metrics`)."""

    t_s: float = 0.0
    ports: dict[tuple[str, int], dict[str, Any]] = field(default_factory=dict)
    queues: dict[tuple[str, int, int], dict[str, Any]] = field(default_factory=dict)
    flows: dict[str, dict[str, float]] = field(default_factory=dict)
    # (server, NIC, priority) -> {"paused_s", "frames", "paused"}: pauses a NIC honoured
    nics: dict[tuple[str, str, int], dict[str, Any]] = field(default_factory=dict)
    fidelity: dict[str, Any] = field(default_factory=dict)
    progress: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class QpEnds:
    """A queue pair as the feed needs it: its flow and its two servers."""

    flow: str
    qpn: int
    src_server: str
    dst_server: str
    dst_qpn: int = 0  # the responder's number when not ``qpn`` (both ends in one agent)


_QUEUE_KEYS = ("depth_bytes", "depth_packets", "max_depth_bytes", "max_depth_packets",
               "paused_s", "pfc_tx", "pfc_rx", "tail_dropped", "tx_packets", "tx_bytes")


class Deriver:
    """Samples in, frames out (module docstring)."""

    def __init__(self, picture: Picture, qps: Sequence[QpEnds], duration_s: float,
                 sized_bytes: int = 0) -> None:
        self.picture = picture
        self.qps = list(qps)
        self.duration_s = duration_s
        self.sized_bytes = sized_bytes
        self.totals = Totals()
        self._prev_t: float | None = None
        self._prev_edge_bytes: dict[str, int] = {}
        self._prev_queue: dict[tuple[str, int, int], tuple[float, int]] = {}
        self._prev_flow: dict[str, tuple[float, int, int, int]] = {}  # t_s, rx, ce, cnps
        self._prev_switch_t: dict[str, float] = {}
        self._prev_switches: set[str] = set()  # the switches the previous sample answered
        self._prev_marks: dict[tuple[str, int, int], int] = {}
        self._mark_base: dict[tuple[str, int, int], int] = {}  # CE marks at the first reading
        self._prev_nic: dict[tuple[str, str, int], tuple[float, int]] = {}
        self._prev_agent_t: dict[str, float] = {}

    def add(self, t_s: float, snapshot: Mapping[str, Any]) -> dict[str, Any]:
        """The frame of the interval that ends at ``t_s``."""
        dt = t_s - self._prev_t if self._prev_t is not None else 0.0
        frame: dict[str, Any] = {"t": round(t_s, 9), "dt": round(dt, 9)}
        if snapshot.get("switches"):
            self._switches(snapshot["switches"], dt, frame)
        if snapshot.get("counters"):
            self._counters(snapshot["counters"])
        if snapshot.get("agents") is not None:
            self._agents(snapshot["agents"], dt, frame)
        if snapshot.get("fidelity"):
            frame["fid"] = dict(snapshot["fidelity"])
            self.totals.fidelity.update(snapshot["fidelity"])
        prog = {"t": round(t_s, 9), "of": self.duration_s,
                "acked": int(sum(f.get("acked_bytes", 0) for f in self.totals.flows.values())),
                "total": self.sized_bytes}
        frame["prog"] = prog
        self.picture.fold(frame)  # a big fabric: per bundle of links
        self.totals.progress = prog
        self.totals.t_s = t_s
        self._prev_t = t_s
        return frame

    # -- switches ---------------------------------------------------------------------
    def _switches(self, switches: Mapping[str, Any], dt: float, frame: dict[str, Any]) -> None:
        pic = self.picture
        totals = self.totals
        port_bytes: dict[tuple[str, int], tuple[int, int]] = {}
        queues: dict[str, int] = {}
        pfc: dict[str, list[float]] = {}
        marks: dict[str, float] = {}
        paused_edges: set[str] = set()
        switch_dt: dict[str, float] = {}
        for name, answer in switches.items():
            # a switch absent from the previous sample has no baseline: its
            # counters since it started are not this interval's
            fresh = name not in self._prev_switches
            # a live switch is read a little after the sample's time: its own
            # clock (time_s) gives the interval its counters cover
            now_s = (answer or {}).get("time_s")
            before_s = self._prev_switch_t.get(name)
            switch_dt[name] = (now_s - before_s if now_s is not None and before_s is not None
                               else dt)
            if now_s is not None:
                self._prev_switch_t[name] = now_s
            for row in (answer or {}).get("ports", []):
                port = row["port"]
                port_bytes[(name, port)] = (row["tx_bytes"], row["rx_bytes"])
                totals.ports[(name, port)] = {
                    "rx_bytes": row["rx_bytes"], "tx_bytes": row["tx_bytes"],
                    "rx_packets": row["rx_packets"], "tx_packets": row["tx_packets"],
                    "drops": {k: v for k, v in row.get("drops", {}).items()},
                    "rate_bps": (row.get("config") or {}).get("rate_bps")}
                for q in row.get("queues", []):
                    prio = q["priority"]
                    active = (q.get("received") or q.get("paused_s") or q.get("pfc_tx")
                              or q.get("pfc_rx") or q.get("depth_bytes"))
                    key = (name, port, prio)
                    if q.get("ecn_marked") is not None:  # every queue: each a baseline
                        self._marks(key, f"{name}:{port}:{prio}", q["ecn_marked"], fresh,
                                    switch_dt[name], marks)
                    if not active and key not in totals.queues:
                        continue
                    slot = totals.queues.setdefault(key, {})
                    slot.setdefault("ecn_marked", 0)
                    for k in _QUEUE_KEYS:
                        slot[k] = q.get(k, 0)
                    slot["paused"] = bool(q.get("paused"))
                    label = f"{name}:{port}:{prio}"
                    if q.get("depth_bytes") or key in self._prev_queue:
                        queues[label] = q.get("depth_bytes", 0)
                    frames_now = q.get("pfc_tx", 0) + q.get("pfc_rx", 0)
                    before = self._prev_queue.get(key, (0.0, 0))
                    if dt > 0 and not fresh and (q.get("paused_s", 0) > before[0] or frames_now > before[1]):
                        pfc[label] = [round((frames_now - before[1]) / dt, 3),
                                      round(min((q.get("paused_s", 0) - before[0]) / dt, 1.0), 4)]
                    self._prev_queue[key] = (q.get("paused_s", 0.0), frames_now)
                    if q.get("paused") or label in pfc and pfc[label][1] > 0:
                        edge = pic.egress_edge.get((name, port))
                        if edge is not None:
                            paused_edges.add(edge)
        self._prev_switches = {name for name, answer in switches.items() if answer}
        util: dict[str, float] = {}
        for edge, (switch, port, side) in pic.edge_counter.items():
            pair = port_bytes.get((switch, port))
            if pair is None:
                continue
            count = pair[0] if side == "tx" else pair[1]
            before = self._prev_edge_bytes.get(edge)
            self._prev_edge_bytes[edge] = count
            span = switch_dt.get(switch, dt)
            if before is None or span <= 0:
                continue
            value = (count - before) * 8 / span / pic.edge_rate_bps[edge]
            if value > 0:
                util[edge] = round(value, 4)
        frame["util"] = util
        frame["q"] = {k: v for k, v in queues.items()}
        frame["pfc"] = pfc
        frame["ecnq"] = marks
        frame["paused"] = sorted(paused_edges)

    def _marks(self, key: tuple[str, int, int], label: str, count: int, fresh: bool,
               span_s: float, out: dict[str, float]) -> None:
        """A queue's CE marks (the P4 program's counter, counted since it was
        loaded): since the first reading in the totals, per second in the frame."""
        base = self._mark_base.setdefault(key, count)
        if count > base or key in self.totals.queues:
            self.totals.queues.setdefault(key, {})["ecn_marked"] = count - base
        before = self._prev_marks.get(key)
        self._prev_marks[key] = count
        if before is not None and not fresh and span_s > 0 and count > before:
            out[label] = round((count - before) / span_s, 3)

    def _counters(self, counters: Mapping[str, Any]) -> None:
        for name, ports in counters.items():
            for port, prios in (ports or {}).items():
                for prio, c in prios.items():
                    slot = self.totals.queues.setdefault((name, int(port), int(prio)), {})
                    slot["ecn_marked"] = c.get("ecn_packets", 0)

    # -- hosts ------------------------------------------------------------------------
    def _agents(self, agents: Mapping[str, Any], dt: float, frame: dict[str, Any]) -> None:
        per_flow: dict[str, list[float]] = {}
        now_s = frame["t"]
        for plan in self.qps:
            src = ((agents.get(plan.src_server) or {}).get("qps") or {}).get(str(plan.qpn))
            dst = ((agents.get(plan.dst_server) or {}).get("qps") or {}).get(
                str(plan.dst_qpn or plan.qpn))
            slot = per_flow.setdefault(plan.flow, [0.0, 0, 0, 0, 0, 0, False])
            if src:
                slot[0] += src.get("rate_bps") or 0.0
                slot[1] += src.get("bytes_acked", 0)
                slot[5] += src.get("cnps_rx", 0)
            if dst:
                slot[2] += dst.get("payload_bytes_rx", 0)
                slot[3] += dst.get("ce_packets_rx", 0)
                slot[4] += dst.get("cnps_sent", 0)
                slot[6] = True  # the receiver answered: its counters are a baseline
        flows: dict[str, list[float]] = {}
        ce_total = cnp_total = 0
        for flow, (rate, acked, rx, ce, cnps, cnps_rx, answered) in per_flow.items():
            # a flow's first answer is its baseline: no goodput, marks or CNPs
            # from a zero start (a chart would open on a spike)
            # (nor from a receiver that did not answer this time)
            known = answered and flow in self._prev_flow
            before = self._prev_flow[flow] if known else (now_s, rx, ce, cnps)
            if answered:
                self._prev_flow[flow] = (now_s, rx, ce, cnps)
            span_s = now_s - before[0]  # since its receiver last answered
            goodput = (rx - before[1]) * 8 / span_s if known and span_s > 0 else None
            ce_total += ce - before[2]
            cnp_total += cnps - before[3]
            flows[flow] = [round(rate, 1), None if goodput is None else round(goodput, 1)]
            self.totals.flows[flow] = {"rate_bps": rate, "goodput_bps": goodput or 0.0,
                                       "acked_bytes": acked, "delivered_bytes": rx,
                                       "ce_packets": ce, "cnps_sent": cnps, "cnps_rx": cnps_rx}
        frame["fl"] = flows
        self._nic_pauses(agents, now_s, frame)
        if dt > 0:
            frame["ecn"] = round(ce_total / dt, 3)
            frame["cnp"] = round(cnp_total / dt, 3)

    def _nic_pauses(self, agents: Mapping[str, Any], now_s: float,
                    frame: dict[str, Any]) -> None:
        """The pauses the NICs honoured (``nic_pauses`` of an agent's status):
        per (server, NIC, priority), XOFF frames acted on per second and the
        share of the interval held, under ``pfc`` as ``server:nic:prio``; the
        NIC's link drawn paused while it holds."""
        pfc = frame.setdefault("pfc", {})
        paused = set(frame.get("paused", []))
        for server, status in agents.items():
            if not status:
                continue  # no answer this time: the next one covers both intervals
            before_t = self._prev_agent_t.get(server)
            self._prev_agent_t[server] = now_s
            span = now_s - before_t if before_t is not None else 0.0
            for nic, p in (status.get("nic_pauses") or {}).items():
                gpu = self.picture.nic_gpu.get((server, nic))
                for prio, (paused_s, frames) in enumerate(zip(p["paused_s"], p["frames"])):
                    if not (paused_s or frames):
                        continue
                    key = (server, nic, prio)
                    held = bool(p.get("mask", 0) >> prio & 1)
                    self.totals.nics[key] = {"paused_s": paused_s, "frames": frames,
                                             "paused": held}
                    before = self._prev_nic.get(key)
                    if before is None and before_t is not None:
                        before = (0.0, 0)  # its first pause came since the last answer
                    self._prev_nic[key] = (paused_s, frames)
                    moved = before is not None and span > 0 and (
                        paused_s > before[0] or frames > before[1])
                    if moved:
                        pfc[f"{server}:{nic}:{prio}"] = [
                            round((frames - before[1]) / span, 3),
                            round(min((paused_s - before[0]) / span, 1.0), 4)]
                    edge = self.picture.nic_edge.get(gpu or "")
                    if edge is not None and (held or moved and paused_s > before[0]):
                        paused.add(edge)
        frame["paused"] = sorted(paused)

"""The results of one run, assembled from what the agents and switches
measured: ``results.json``, ``flows.csv``, ``ports.csv``, the time series
``queues.csv``, ``rates.csv``, ``series.csv``, ``pauses.csv``,
``buffer.csv`` and ``priority_groups.csv`` (:func:`write_series_csvs`) and
a summary.

Pure functions over plain dicts (no root): :func:`assemble` takes the
agents' stats snapshots (:mod:`emulator.traffic.agent.stats`), the switches'
P4 counters (``FabricController.read_counters``, already reduced to the run
by :func:`counter_delta`) and queue stats (``QueueControlClient.get_port_stats``
after ``reset_stats``, None for BMv2).

Layout of ``results.json``::

    scenario, target, topology (counts), duration_s, partial, started_unix,
    flows:    [{id, src, dst, op, op_emulated, size_bytes, start_s, bytes,
                completed, fct_s, goodput_bps, retransmits, cnp_received,
                cnp_sent, ce_received, rate_cuts, min_rate_bps, qps}]
    switches: {switch: {port: {priority: {tx_packets, tx_bytes, rx_packets,
                rx_bytes, drops, ecn_marked, pfc_tx, pfc_rx, paused_s, max_qdepth}},
               "_port_drops": {port: other drops},
               "_drops_by_reason": {reason: frames},
               "_buffer": {pool_bytes, shared_bytes, headroom_bytes,
                           shared_used_bytes, headroom_used_bytes,
                           shared_max_bytes, headroom_max_bytes, ...}}}
                                                          (ports as strings)
    hosts:    {server: {nics: {intf: {tx_packets, tx_bytes, rx_packets,
                rx_bytes, pfc_rx, pfc_tx, paused_s}}, paused_s, cnp_sent,
                cnp_received, retransmits}}
    totals:   {flows, flows_completed, flows_incomplete, bytes, drops,
               ecn_marked, cnp_sent, cnp_received, pfc_tx, pfc_rx, paused_s,
               switch_paused_s, host_paused_s, retransmits, spine_bytes,
               max_fct_s, goodput_spread, ecmp_imbalance, max_link_util,
               max_spine_link_util, paused_ports, paused_switches, paused_hosts}
    links:    [{a, a_port, b, b_port, kind, network, rate_bps, bytes_ab,
                bytes_ba, util_ab, util_ba}]                (also links.csv)
    ecmp:     {leaf: {uplinks: {"spine:port": bytes}, imbalance}}
              (links, ecmp and their totals: emulator.measure.links)
    networks: {network: {links, bytes, drops, ecn_marked, pfc_tx,
                busiest_link, max_link_util}}    (emulator.measure.networks)
    checks:   [{metric, op, value, description, passed, found}]
    time_scale: k (1 unless the scenario was written in data-centre units)

With k != 1 (:mod:`emulator.scenario.scale`) every time above is emulated
and the fields of :data:`~emulator.scenario.scale.DC_FIELDS` get a
data-centre twin: ``fct_dc_s`` = ``fct_s`` / k, ``goodput_dc_bps`` =
``goodput_bps`` × k, ``totals.max_fct_dc_s``, ``totals.paused_dc_s``,
``duration_dc_s``, ``links[].rate_dc_bps``, ``collectives[].time_dc_s``,
``algbw_dc_bps``, ``busbw_dc_bps``; checks may name either.

Definitions: a flow's ``bytes`` are the payload bytes acknowledged to its
sender (``bytes_acked`` of its requester QPs); it is ``completed`` when
every message posted for it finished ``ok`` and (sized flows) ``bytes ==
size_bytes``. ``fct_s`` = last ack − first transmission over its QPs (None
if not completed); ``goodput_bps`` = bytes × 8 / fct_s when completed, else
bytes × 8 / (end of the run − first transmission, or its scheduled start
when none of its messages finished) (0 if it never sent).
Per (port, priority) ``pfc_rx`` = PFC frames naming the priority received on
the port (the larger of the P4 counter and the queue statistics: the built-in
target honours pause frames below P4), ``pfc_tx`` likewise (its buffer sends
them below P4); ``drops`` = P4 drops (ingress) + tail drops of that
egress queue + headroom overflows of that ingress priority group;
``pg_max_bytes``/``headroom_max_bytes`` = the high-water marks of the
ingress priority group's bytes and of its headroom in use (built-in
target); ``_drops_by_reason`` = the switch's drops by cause (``tail``,
``headroom_overflow``, ``pipeline``, ...) and ``_buffer`` its shared
pool (:mod:`emulator.targets.builtin.mmu`); drops a port counts without a priority (bad priority, tx
errors, truncation, receive overruns, executor errors) are in
``_port_drops``. A flow's ``rate_cuts`` counts the DCQCN rate decreases of
its QPs and ``min_rate_bps`` is the lowest rate Rc they reached (None
without DCQCN). ``spine_bytes``
= bytes transmitted on every port of the switches above tier 1.
How far pauses spread: ``paused_ports`` = (switch, port, priority) queues
with ``paused_s`` > 0, ``paused_switches`` = switches with at least one,
``paused_hosts`` = host NICs with ``paused_s`` > 0 (a NIC's ``pfc_tx`` counts
the pause frames it sent itself, a PFC storm's).

Invariants (:func:`check_invariants`, tested):

- per flow: ``0 ≤ bytes ≤ size_bytes`` (sized), ``completed`` ⇒ ``bytes ==
  size_bytes`` and ``fct_s > 0`` and ``goodput_bps > 0``;
- ``totals.drops`` = Σ per-queue drops + Σ ``_port_drops``;
- ``totals.ecn_marked``, ``pfc_tx``, ``pfc_rx``, ``switch_paused_s`` = the
  sums over switches' queues; ``totals.retransmits`` = Σ flows'
  retransmits; ``totals.cnp_received`` = Σ flows' ``cnp_received``;
  ``totals.cnp_sent`` = Σ hosts' ``cnp_sent``;
  ``paused_s`` = ``switch_paused_s`` + ``host_paused_s``;
- ``flows_completed + flows_incomplete == flows``;
- the links' sums (:func:`emulator.measure.links.link_invariant_problem`).
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from emulator.measure.buffer_series import write_buffer_csvs
from emulator.measure.counter_csvs import write_counter_csvs
from emulator.measure.links import link_invariant_problem, link_metrics, write_links_csv
from emulator.measure.networks import network_results
from emulator.measure.run_series import write_run_series_csvs
from emulator.scenario.scale import DC_FIELDS, dc_name, to_dc
from emulator.scenario.spec import FlowSpec, Scenario
from emulator.topology import scale_up_tier

if TYPE_CHECKING:
    from emulator.run.qps import QpPlan  # the plan a run made; only read here

PORT_OTHER_DROPS = ("no_program", "pipeline_error", "bad_priority", "tx_error", "truncated",
                    "rx_overrun")
COUNTER_KEYS = ("rx", "drop", "pfc_rx", "tx", "ecn", "pfc_tx")
QUEUE_FIELDS = ("tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "drops", "ecn_marked",
                "pfc_tx", "pfc_rx", "paused_s", "max_qdepth")


class ResultsInvariantError(AssertionError):
    """An assembled results dict breaks one of the documented sums."""


# -- switches --------------------------------------------------------------------------

def time_digits(origin_unix: float | None) -> int:
    """Decimals a time measured from ``origin_unix`` is good to: ns on the
    virtual clock (times from 0), µs for differences of Unix times (a double
    at 1.7e9 s resolves 0.2 µs)."""
    return 9 if origin_unix is None or abs(origin_unix) < 1e6 else 6


def counter_delta(after: Mapping[int, Mapping[int, Mapping[str, int]]],
                  before: Mapping[int, Mapping[int, Mapping[str, int]]] | None
                  ) -> dict[int, dict[int, dict[str, int]]]:
    """``read_counters`` after − before, slot by slot (P4 counters cannot be
    reset over P4Runtime, so the runner reads them before traffic starts)."""
    before = before or {}
    out: dict[int, dict[int, dict[str, int]]] = {}
    for port, prios in after.items():
        for prio, values in prios.items():
            base = before.get(port, {}).get(prio, {})
            out.setdefault(port, {})[prio] = {k: v - base.get(k, 0) for k, v in values.items()}
    return out


def switch_results(counters: Mapping[int, Mapping[int, Mapping[str, int]]],
                   queue_stats: Mapping[str, Any] | None) -> dict[str, Any]:
    """port → priority → the :data:`QUEUE_FIELDS` of one switch (ports and
    priorities as strings; only slots with any traffic), and ``_port_drops``."""
    queues: dict[tuple[int, int], dict[str, Any]] = {}
    port_rows = {row["port"]: row for row in (queue_stats or {}).get("ports", [])}
    for port, prios in counters.items():
        for prio, c in prios.items():
            queues[(port, prio)] = {
                "tx_packets": c.get("tx_packets", 0), "tx_bytes": c.get("tx_bytes", 0),
                "rx_packets": c.get("rx_packets", 0), "rx_bytes": c.get("rx_bytes", 0),
                "drops": c.get("drop_packets", 0),
                "ecn_marked": c.get("ecn_packets", 0), "pfc_tx": c.get("pfc_tx_packets", 0),
                "pfc_rx": c.get("pfc_rx_packets", 0), "paused_s": None, "max_qdepth": None}
    port_drops: dict[str, int] = {}
    for port, row in port_rows.items():
        other = sum(row.get("drops", {}).get(k, 0) for k in PORT_OTHER_DROPS)
        if other:
            port_drops[str(port)] = other
        for q in row.get("queues", []):
            prio = q["priority"]
            busy = (q.get("tx_packets") or q.get("tail_dropped") or q.get("paused_s")
                    or q.get("max_depth_packets") or q.get("pg_max_bytes")
                    or q.get("pfc_tx") or q.get("headroom_overflow"))
            if (port, prio) not in queues and not busy:
                continue
            slot = queues.setdefault((port, prio), {
                "tx_packets": 0, "tx_bytes": 0, "rx_packets": 0, "rx_bytes": 0, "drops": 0,
                "ecn_marked": 0,
                "pfc_tx": 0, "pfc_rx": 0})
            slot["drops"] += q.get("tail_dropped", 0) + q.get("headroom_overflow", 0)
            # PFC frames are honoured and sent below P4 on the built-in target:
            # P4 never counts them
            slot["pfc_rx"] = max(slot["pfc_rx"], q.get("pfc_rx", 0))
            slot["pfc_tx"] = max(slot["pfc_tx"], q.get("pfc_tx", 0))
            if "pg_max_bytes" in q:
                slot["pg_max_bytes"] = q["pg_max_bytes"]
                slot["headroom_max_bytes"] = q.get("headroom_max_bytes", 0)
            slot["paused_s"] = round(float(q.get("paused_s", 0.0)), 9)
            slot["max_qdepth"] = {"packets": q.get("max_depth_packets", 0),
                                  "bytes": q.get("max_depth_bytes", 0)}
    out: dict[str, Any] = {}
    for (port, prio), slot in sorted(queues.items()):
        out.setdefault(str(port), {})[str(prio)] = slot
    out["_port_drops"] = port_drops
    if queue_stats:
        reasons: dict[str, int] = {}
        for row in port_rows.values():
            for reason, n in row.get("drops", {}).items():
                if n:
                    reasons[reason] = reasons.get(reason, 0) + n
        out["_drops_by_reason"] = dict(sorted(reasons.items()))
        if "buffer" in queue_stats:
            out["_buffer"] = dict(queue_stats["buffer"])
    return out


def _queue_slots(switches: Mapping[str, Any]) -> Iterable[tuple[str, str, str, dict[str, Any]]]:
    for name, ports in switches.items():
        for port, prios in ports.items():
            if port.startswith("_"):
                continue
            for prio, slot in prios.items():
                yield name, port, prio, slot


# -- flows -----------------------------------------------------------------------------

def _qp_of(snapshot: Mapping[str, Any] | None, qpn: int) -> dict[str, Any] | None:
    for qp in (snapshot or {}).get("qps", []):
        if qp["qpn"] == qpn:
            return qp
    return None


def flow_results(flows: Sequence[FlowSpec], qps: Sequence[QpPlan],
                 stats: Mapping[str, Mapping[str, Any] | None], end_unix: float,
                 start_unix: float | None = None) -> list[dict[str, Any]]:
    """One row per flow (see the module docstring for the definitions)."""
    digits = time_digits(start_unix)
    by_flow: dict[str, list[QpPlan]] = {}
    for qp in qps:
        by_flow.setdefault(qp.flow, []).append(qp)
    rows = []
    for flow in flows:
        plans = by_flow.get(flow.id, [])
        sent_bytes = retrans = cnp_rx = cnp_tx = ce_rx = cuts = 0
        min_rate: float | None = None
        first_tx: list[float] = []
        acked: list[float] = []
        all_ok = bool(plans)
        for plan in plans:
            req = _qp_of(stats.get(plan.src_server), plan.qpn)
            resp = _qp_of(stats.get(plan.dst_server), plan.responder_qpn)
            if req is None:
                all_ok = False
            else:
                c = req["counters"]
                sent_bytes += c["bytes_acked"]
                retrans += c["retransmit_packets"]
                cnp_rx += c["cnps_rx"]
                rates = [sample[1] for sample in req.get("rate_samples") or []]
                cuts += sum(1 for a, b in zip(rates, rates[1:]) if b < a)
                if rates:
                    min_rate = min(rates) if min_rate is None else min(min_rate, *rates)
                if req.get("messages_outstanding") or c["messages_failed"] \
                        or c["messages_completed"] == 0 and plan.size_bytes != 0:
                    all_ok = False
            if resp is not None:
                cnp_tx += resp["counters"]["cnps_sent"]
                ce_rx += resp["counters"]["ce_packets_rx"]
            records = [r for r in (stats.get(plan.src_server) or {}).get("messages", {})
                       .get("sent", []) if r["qpn"] == plan.qpn]
            first_tx += [r["first_tx_at"] for r in records if r.get("first_tx_at") is not None]
            acked += [r["acked_at"] for r in records if r.get("acked_at") is not None]
            if any(r["status"] != "ok" for r in records):
                all_ok = False
        # an unlimited flow never completes; a sized one when all its bytes are acked
        completed = (all_ok and flow.size_bytes is not None and sent_bytes == flow.size_bytes
                     and bool(acked))
        start = min(first_tx) if first_tx else None
        fct = (max(acked) - start) if completed and start is not None else None
        if start is None and start_unix is not None and sent_bytes:
            start = start_unix + flow.start_ns / 1e9  # no message finished: its scheduled start
        if completed and fct is not None and fct > 0:
            goodput = sent_bytes * 8 / fct
        elif start is not None and end_unix > start:
            goodput = sent_bytes * 8 / (end_unix - start)
        else:
            goodput = 0.0
        rows.append({
            "id": flow.id, "src": flow.src, "dst": flow.dst, "op": flow.op,
            "op_emulated": "write" if flow.op == "read" else flow.op,
            "size_bytes": flow.size_bytes, "start_s": flow.start_ns / 1e9,
            "bytes": sent_bytes, "completed": bool(completed),
            "fct_s": None if fct is None else round(fct, digits),
            "goodput_bps": round(goodput, 1), "retransmits": retrans,
            "cnp_received": cnp_rx, "cnp_sent": cnp_tx, "ce_received": ce_rx,
            "rate_cuts": cuts, "min_rate_bps": None if min_rate is None else round(min_rate, 1),
            "qps": [p.qpn for p in plans]})
    return rows


def host_results(stats: Mapping[str, Mapping[str, Any] | None]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for server, snap in sorted(stats.items()):
        if snap is None:
            out[server] = {"nics": {}, "paused_s": 0.0, "cnp_sent": 0, "cnp_received": 0,
                           "retransmits": 0, "missing_stats": True}
            continue
        nics = {}
        for nic in snap.get("nics", []):
            c = nic["counters"]
            nics[nic["name"]] = {"tx_packets": c["tx_packets"], "tx_bytes": c["tx_bytes"],
                                 "rx_packets": c["rx_packets"], "rx_bytes": c["rx_bytes"],
                                 "pfc_rx": c["pfc_rx"], "pfc_tx": c.get("pfc_tx", 0),
                                 "paused_s": round(sum(nic.get("paused_s", [])), 9)}
        qps = [q["counters"] for q in snap.get("qps", [])]
        out[server] = {"nics": nics,
                       "paused_s": round(sum(n["paused_s"] for n in nics.values()), 9),
                       "cnp_sent": sum(q["cnps_sent"] for q in qps),
                       "cnp_received": sum(q["cnps_rx"] for q in qps),
                       "retransmits": sum(q["retransmit_packets"] for q in qps)}
    return out


# -- the whole -------------------------------------------------------------------------


def goodput_spread(flow_rows: list[dict[str, Any]]) -> float | None:
    """(max − min) / max of the goodputs of completed flows: 0 when the
    flows shared the bottleneck fairly (None with fewer than two)."""
    rates = [f["goodput_bps"] for f in flow_rows if f.get("completed") and f.get("goodput_bps")]
    if len(rates) < 2:
        return None
    return round((max(rates) - min(rates)) / max(rates), 4)

def pause_spread(switches: Mapping[str, Any], hosts: Mapping[str, Any]) -> dict[str, int]:
    """``paused_ports``, ``paused_switches``, ``paused_hosts``: how far pauses spread."""
    paused = [(name, port, prio) for name, port, prio, slot in _queue_slots(switches)
              if slot["paused_s"]]
    return {"paused_ports": len(paused),
            "paused_switches": len({name for name, _, _ in paused}),
            "paused_hosts": sum(1 for h in hosts.values() for nic in h["nics"].values()
                                if nic["paused_s"] > 0)}


def assemble(scenario: Scenario, target: str, flows: Sequence[FlowSpec],
             qps: Sequence[QpPlan], agent_stats: Mapping[str, Mapping[str, Any] | None],
             switch_counters: Mapping[str, Mapping[int, Mapping[int, Mapping[str, int]]]],
             queue_stats: Mapping[str, Mapping[str, Any] | None], *,
             start_unix: float, end_unix: float, partial: bool = False,
             extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """results.json as a dict (checks evaluated last, on everything else)."""
    from emulator.topology.model import counts

    topo = scenario.topology
    flow_rows = flow_results(flows, qps, agent_stats, end_unix, start_unix)
    switches = {name: switch_results(switch_counters.get(name, {}), queue_stats.get(name))
                for name in sorted(switch_counters)}
    hosts = host_results(agent_stats)
    slots = [s for _, _, _, s in _queue_slots(switches)]
    upper = {s.name for s in topo.switches if s.tier >= 2}
    switch_paused = round(sum(s["paused_s"] or 0.0 for s in slots), 9)
    host_paused = round(sum(h["paused_s"] for h in hosts.values()), 9)
    completed = sum(f["completed"] for f in flow_rows)
    fcts = [f["fct_s"] for f in flow_rows if f["fct_s"] is not None]
    totals = {
        "flows": len(flow_rows), "flows_completed": completed,
        "flows_incomplete": len(flow_rows) - completed,
        "bytes": sum(f["bytes"] for f in flow_rows),
        "drops": sum(s["drops"] for s in slots)
        + sum(sum(sw["_port_drops"].values()) for sw in switches.values()),
        "ecn_marked": sum(s["ecn_marked"] for s in slots),
        "cnp_sent": sum(h["cnp_sent"] for h in hosts.values()),
        "cnp_received": sum(f["cnp_received"] for f in flow_rows),
        "pfc_tx": sum(s["pfc_tx"] for s in slots),
        "pfc_rx": sum(s["pfc_rx"] for s in slots),
        "paused_s": round(switch_paused + host_paused, 9),
        "switch_paused_s": switch_paused, "host_paused_s": host_paused,
        "retransmits": sum(f["retransmits"] for f in flow_rows),
        "spine_bytes": sum(s["tx_bytes"] for name, _, _, s in _queue_slots(switches)
                           if name in upper),
        "max_fct_s": max(fcts) if fcts else None,
        "goodput_spread": goodput_spread(flow_rows),
        **pause_spread(switches, hosts),
    }
    results: dict[str, Any] = {
        "scenario": scenario.name, "target": target, "topology": counts(topo),
        "duration_s": round(max(0.0, end_unix - start_unix), time_digits(start_unix)),
        "scheduled_duration_s": scenario.duration_s, "partial": partial,
        "started_unix": start_unix, "flows": flow_rows, "switches": switches,
        "hosts": hosts, "totals": totals, **(extra or {})}
    if results.get("collectives"):
        totals["collectives_incomplete"] = sum(not c["completed"]
                                               for c in results["collectives"])
    # live, a server's scale-up switch runs in its agent: its links from the NICs' counters
    tiered = scale_up_tier(topo)
    links, ecmp, link_sums = link_metrics(tiered, switches, hosts, results["duration_s"])
    results.update(links=links, ecmp=ecmp,
                   networks=network_results(tiered, links, switches))
    totals.update(link_sums)
    results["time_scale"] = scenario.time_scale
    # *_dc_s, *_dc_bps twins when time-scaled (or simulated: then equal)
    auto = (scenario.time_scale_choice or {}).get("mode") == "auto"
    to_dc(results, scenario.time_scale, native=target == "sim" or auto)
    results["checks"] = evaluate_checks(scenario, results)
    return results


def evaluate_checks(scenario: Scenario, results: Mapping[str, Any]) -> list[dict[str, Any]]:
    out = []
    for check in scenario.expect_checks:
        passed, found = check.evaluate(results)
        out.append({**check.to_dict(), "passed": passed,
                    "found": found if isinstance(found, (int, float, str, bool, type(None)))
                    else repr(found)})
    return out


def check_invariants(results: Mapping[str, Any]) -> None:
    """Raise :class:`ResultsInvariantError` naming the first broken rule."""
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ResultsInvariantError(what)

    for f in results["flows"]:
        need(f["bytes"] >= 0, f"flow {f['id']}: bytes < 0")
        if f["size_bytes"] is not None:
            need(f["bytes"] <= f["size_bytes"], f"flow {f['id']}: bytes > size")
        if f["completed"]:
            need(f["bytes"] == f["size_bytes"], f"flow {f['id']}: completed but bytes != size")
            need(f["fct_s"] is not None and f["fct_s"] > 0, f"flow {f['id']}: completed, no fct")
            need(f["goodput_bps"] > 0, f"flow {f['id']}: completed, goodput 0")
    t = results["totals"]
    slots = [s for _, _, _, s in _queue_slots(results["switches"])]
    port_drops = sum(sum(sw.get("_port_drops", {}).values())
                     for sw in results["switches"].values())
    need(t["drops"] == sum(s["drops"] for s in slots) + port_drops, "totals.drops != sum")
    for key in ("ecn_marked", "pfc_tx", "pfc_rx"):
        need(t[key] == sum(s[key] for s in slots), f"totals.{key} != sum")
    need(math.isclose(t["switch_paused_s"], sum(s["paused_s"] or 0 for s in slots),
                      abs_tol=1e-5), "totals.switch_paused_s != sum")
    need(math.isclose(t["paused_s"], t["switch_paused_s"] + t["host_paused_s"], abs_tol=1e-5),
         "totals.paused_s != switch + host")
    need(t["retransmits"] == sum(f["retransmits"] for f in results["flows"]),
         "totals.retransmits != sum")
    need(t["cnp_received"] == sum(f["cnp_received"] for f in results["flows"]),
         "totals.cnp_received != sum")
    need(t["cnp_sent"] == sum(h["cnp_sent"] for h in results["hosts"].values()),
         "totals.cnp_sent != sum")
    need(t["flows_completed"] + t["flows_incomplete"] == t["flows"] == len(results["flows"]),
         "flow counts")
    problem = link_invariant_problem(results)
    need(problem is None, problem or "")


# -- files -----------------------------------------------------------------------------

FLOW_COLUMNS = ("id", "src", "dst", "op", "size_bytes", "start_s", "bytes", "completed",
                "fct_s", "goodput_bps", "retransmits", "cnp_received", "cnp_sent")
PORT_COLUMNS = ("switch", "port", "priority") + QUEUE_FIELDS


def write_csvs(results: Mapping[str, Any], out_dir: Path) -> None:
    columns = FLOW_COLUMNS
    if results.get("time_scale", 1) != 1:
        columns += tuple(dc_name(c) for c in DC_FIELDS["flows"] if c in FLOW_COLUMNS)
    with open(out_dir / "flows.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in results["flows"]:
            w.writerow(["" if row.get(c) is None else row[c] for c in columns])
    with open(out_dir / "ports.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(PORT_COLUMNS)
        for name, port, prio, slot in _queue_slots(results["switches"]):
            depth = slot["max_qdepth"]
            values = {**slot, "max_qdepth": "" if depth is None else depth["packets"],
                      "paused_s": "" if slot["paused_s"] is None else slot["paused_s"]}
            w.writerow([name, port, prio] + [values[c] for c in QUEUE_FIELDS])
    write_links_csv(results, out_dir)


QUEUES_COLUMNS = ("switch", "port", "priority", "t_s", "depth_packets", "depth_bytes", "paused")
RATES_COLUMNS = ("flow", "qp", "t_s", "rate_bps", "target_bps", "alpha")


def queue_series_rows(series: Mapping[str, Mapping[str, Any] | None],
                      start_unix: float) -> list[tuple]:
    """Rows of ``queues.csv`` from ``{switch: QueueControlClient.get_queue_series()}``:
    ``t_s`` is seconds since the run's common start (negative before it)."""
    rows = []
    for name in sorted(series):
        answer = series[name]
        if not answer:
            continue
        offset = answer.get("unix_offset_s", 0.0) - start_unix
        for queue in answer.get("queues", []):
            for t, packets, nbytes, paused in queue["samples"]:
                rows.append((name, queue["port"], queue["priority"], round(t + offset, time_digits(start_unix)),
                             packets, nbytes, int(bool(paused))))
    return rows


def rate_rows(qps: Sequence[QpPlan], stats: Mapping[str, Mapping[str, Any] | None],
              start_unix: float) -> list[tuple]:
    """Rows of ``rates.csv``: every DCQCN rate sample ``[t_unix, Rc, Rt, α]``
    of every requester QP, ``t_s`` since the run's common start."""
    rows = []
    for plan in qps:
        qp = _qp_of(stats.get(plan.src_server), plan.qpn)
        for t, rc, rt, alpha in (qp or {}).get("rate_samples") or []:
            rows.append((plan.flow, plan.qpn, round(t - start_unix, time_digits(start_unix)), round(rc, 1),
                         round(rt, 1), round(alpha, 6)))
    return rows


def write_series_csvs(out_dir: Path, series: Mapping[str, Mapping[str, Any] | None],
                      qps: Sequence[QpPlan], stats: Mapping[str, Mapping[str, Any] | None],
                      start_unix: float) -> None:
    """Write ``queues.csv`` (switch queue depths over time, see
    ``GetQueueSeries``), ``rates.csv`` (per-QP DCQCN rates over time), and
    ``series.csv`` and ``pauses.csv`` (:mod:`emulator.measure.run_series`),
    ``buffer.csv`` and ``priority_groups.csv`` (:mod:`.buffer_series`),
    ``port_bytes.csv``, ``pfc_frames.csv`` and ``ecn_marks.csv``
    (:mod:`.counter_csvs`); each with its header even when empty."""
    write_run_series_csvs(out_dir, series, qps, stats, start_unix)
    write_buffer_csvs(out_dir, series, start_unix)
    write_counter_csvs(out_dir, series, start_unix, time_digits(start_unix))
    for name, columns, rows in (
            ("queues.csv", QUEUES_COLUMNS, queue_series_rows(series, start_unix)),
            ("rates.csv", RATES_COLUMNS, rate_rows(qps, stats, start_unix))):
        with open(out_dir / name, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(columns)
            w.writerows(rows)

"""``/metrics``: the runs the view serves, in the Prometheus text format.

A custom collector (``prometheus_client``) reads each :class:`~.feed.RunState`'s
:class:`~.frames.Totals` at scrape time, so a run pays nothing for it. Names
follow Prometheus' conventions: the ``aifabric_`` prefix, base units
(bytes, seconds; rates in bytes per second), ``_total`` on counters, gauges
for depths and rates, ``_info`` (value 1) for static facts. Labels:
``switch``, ``port``, ``priority``, ``reason`` (drops), ``flow``, ``host``
and ``nic`` (the pauses a host's NIC honoured); ``network`` on every
switch-port metric (``backend``, ``scale-up``, ``dci``, ``front-end``,
``storage``: the network of the port's link) when a served topology has
more than one; and ``run`` (the run's label) when the view serves more
than one run.

:data:`METRIC_NAMES` is the full list (the tests keep it golden).
"""

from __future__ import annotations

from typing import Any, Iterator, Sequence

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily
from prometheus_client.registry import Collector

from emulator.view.feed import RunState

PREFIX = "aifabric_"
# name (as exposed, without the _total/_info a family adds) -> (kind, help, labels)
_FAMILIES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "run": ("info", "The run: scenario, target, clock, topology", ()),
    "run_time_seconds": ("gauge", "Time the run has reached on its own clock", ()),
    "run_duration_seconds": ("gauge", "The scenario's duration on the run's clock", ()),
    "run_progress_ratio": ("gauge", "Run time reached over duration (0..1)", ()),
    "run_ended": ("gauge", "1 once the run is over", ()),
    "run_time_scale": ("gauge", "Emulated seconds per data-centre second", ()),
    "view_dropped_samples": ("counter", "Samples the view dropped to keep up", ()),
    "port": ("info", "A switch port and what it is wired to", ("switch", "port")),
    "port_speed_bytes": ("gauge", "Line rate of a switch port in bytes per second",
                         ("switch", "port")),
    "port_received_bytes": ("counter", "Bytes a switch port received", ("switch", "port")),
    "port_transmitted_bytes": ("counter", "Bytes a switch port sent", ("switch", "port")),
    "port_received_packets": ("counter", "Frames a switch port received", ("switch", "port")),
    "port_transmitted_packets": ("counter", "Frames a switch port sent", ("switch", "port")),
    "port_dropped_packets": ("counter", "Frames a switch port dropped, by reason",
                             ("switch", "port", "reason")),
    "queue_depth_bytes": ("gauge", "Bytes queued now", ("switch", "port", "priority")),
    "queue_depth_packets": ("gauge", "Packets queued now", ("switch", "port", "priority")),
    "queue_max_depth_bytes": ("gauge", "High-water mark of the queue in bytes",
                              ("switch", "port", "priority")),
    "queue_ecn_marked_packets": ("counter", "Packets the queue marked CE",
                                 ("switch", "port", "priority")),
    "queue_tail_dropped_packets": ("counter", "Packets dropped at the queue's tail",
                                   ("switch", "port", "priority")),
    "queue_paused": ("gauge", "1 while PFC holds the queue", ("switch", "port", "priority")),
    "pfc_transmitted_frames": ("counter", "PFC pause frames the port sent",
                               ("switch", "port", "priority")),
    "pfc_received_frames": ("counter", "PFC pause frames the port received",
                            ("switch", "port", "priority")),
    "pfc_paused_seconds": ("counter", "Time PFC held the queue",
                           ("switch", "port", "priority")),
    "nic_pfc_paused_seconds": ("counter", "Time a host's NIC held a priority, honouring PFC",
                               ("host", "nic", "priority")),
    "nic_pfc_received_frames": ("counter", "PFC pause (XOFF) frames a host's NIC acted on",
                                ("host", "nic", "priority")),
    "nic_paused": ("gauge", "1 while a host's NIC holds the priority",
                   ("host", "nic", "priority")),
    "flow_goodput_bytes_per_second": ("gauge", "Payload delivered per second (last interval)",
                                      ("flow",)),
    "flow_dcqcn_rate_bytes_per_second": ("gauge", "DCQCN sending rate (sum of its QPs)",
                                         ("flow",)),
    "flow_delivered_bytes": ("counter", "Payload accepted by the flow's receiver", ("flow",)),
    "flow_ecn_marked_packets": ("counter", "CE-marked packets the flow's receiver got",
                                ("flow",)),
    "flow_cnps_sent": ("counter", "CNPs the flow's receiver sent", ("flow",)),
    "fidelity_faithful": ("gauge", "1 if the live run kept up with its schedule", ()),
    "fidelity_lateness_p99_seconds": ("gauge", "p99 lateness of departures", ()),
    "fidelity_cpu_busy_ratio": ("gauge", "The machine's CPU use (0..1)", ()),
}
_SUFFIX = {"counter": "_total", "info": "_info", "gauge": ""}
METRIC_NAMES = tuple(sorted(PREFIX + name + _SUFFIX[kind]
                            for name, (kind, _, _) in _FAMILIES.items()))


class _Families:
    """The families of one scrape; ``runs``: a ``run`` label first; ``networks``:
    a ``network`` label on switch-port families, after ``run``."""

    def __init__(self, runs: bool, networks: bool) -> None:
        self.extra = ("run",) if runs else ()
        self.networks = networks
        self.families: dict[str, Any] = {}
        for name, (kind, doc, labels) in _FAMILIES.items():
            cls = {"counter": CounterMetricFamily, "gauge": GaugeMetricFamily,
                   "info": InfoMetricFamily}[kind]
            net = ("network",) if networks and _on_port(labels) else ()
            self.families[name] = cls(PREFIX + name, doc, labels=self.extra + net + labels)

    def add(self, name: str, run: tuple[str, ...], labels: Sequence[Any], value: Any,
            network: str | None = None) -> None:
        if value is None:
            return
        family = self.families[name]
        values = [*run, *((network or "backend",) if self.networks
                          and _on_port(_FAMILIES[name][2]) else ()), *map(str, labels)]
        if _FAMILIES[name][0] == "info":
            family.add_metric(values, {k: str(v) for k, v in value.items()})
        else:
            family.add_metric(values, float(value))


def _on_port(labels: tuple[str, ...]) -> bool:
    return labels[:2] == ("switch", "port")


class ViewCollector(Collector):
    """The Prometheus view of ``runs`` (module docstring)."""

    def __init__(self, runs: Sequence[RunState], dropped: Any = None) -> None:
        self.runs = list(runs)
        self.dropped = dropped or (lambda _state: 0)

    def collect(self) -> Iterator[Any]:
        out = _Families(len(self.runs) > 1,
                        any(len(set(_port_networks(s).values())) > 1 for s in self.runs))
        for state in self.runs:
            net = (state.label,) if out.extra else ()
            with state.lock:
                self._run(out, net, state)
        yield from out.families.values()

    def _run(self, out: _Families, net: tuple[str, ...], state: RunState) -> None:
        info, totals = state.info, state.totals
        topology = info.get("topology") or {}
        out.add("run", net, (), {"scenario": info.get("name", ""),
                                 "target": info.get("target", ""),
                                 "clock": info.get("clock", ""),
                                 "description": info.get("description", "")})
        out.add("run_time_seconds", net, (), totals.t_s)
        duration = info.get("duration_s")
        if duration:
            out.add("run_duration_seconds", net, (), duration)
            out.add("run_progress_ratio", net, (),
                    1.0 if state.ended is not None else min(totals.t_s / duration, 1.0))
        out.add("run_ended", net, (), 1 if state.ended is not None else 0)
        out.add("run_time_scale", net, (), info.get("time_scale", 1.0))
        out.add("view_dropped_samples", net, (), self.dropped(state))
        peers: dict[tuple[str, str], tuple[str, str]] = {}
        for edge in topology.get("edges", []):
            data = edge["data"]
            peers.setdefault((data["source"], data["target"]), (data["kind"], data["describe"]))
        network_of = _port_networks(state)

        def nw(switch: str, port: Any) -> str | None:
            return network_of.get((switch, int(port))) if str(port).isdigit() else None
        for (switch, port), row in sorted(totals.ports.items()):
            labels, n = (switch, port), nw(switch, port)
            out.add("port_received_bytes", net, labels, row["rx_bytes"], n)
            out.add("port_transmitted_bytes", net, labels, row["tx_bytes"], n)
            out.add("port_received_packets", net, labels, row["rx_packets"], n)
            out.add("port_transmitted_packets", net, labels, row["tx_packets"], n)
            if row.get("rate_bps"):
                out.add("port_speed_bytes", net, labels, row["rate_bps"] / 8, n)
            for reason, count in sorted(row.get("drops", {}).items()):
                out.add("port_dropped_packets", net, (*labels, reason), count, n)
        for (switch, port), (kind, describe) in sorted(_port_links(state).items()):
            out.add("port", net, (switch, port), {"kind": kind, "link": describe},
                    nw(switch, port))
        for (switch, port, prio), q in sorted(totals.queues.items()):
            labels, n = (switch, port, prio), nw(switch, port)
            out.add("queue_depth_bytes", net, labels, q.get("depth_bytes", 0), n)
            out.add("queue_depth_packets", net, labels, q.get("depth_packets", 0), n)
            out.add("queue_max_depth_bytes", net, labels, q.get("max_depth_bytes", 0), n)
            out.add("queue_ecn_marked_packets", net, labels, q.get("ecn_marked", 0), n)
            out.add("queue_tail_dropped_packets", net, labels, q.get("tail_dropped", 0), n)
            out.add("queue_paused", net, labels, 1 if q.get("paused") else 0, n)
            out.add("pfc_transmitted_frames", net, labels, q.get("pfc_tx", 0), n)
            out.add("pfc_received_frames", net, labels, q.get("pfc_rx", 0), n)
            out.add("pfc_paused_seconds", net, labels, q.get("paused_s", 0.0), n)
        for (host, nic, prio), n in sorted(totals.nics.items()):
            labels = (host, nic, prio)
            out.add("nic_pfc_paused_seconds", net, labels, n["paused_s"])
            out.add("nic_pfc_received_frames", net, labels, n["frames"])
            out.add("nic_paused", net, labels, 1 if n["paused"] else 0)
        for flow, f in sorted(totals.flows.items()):
            out.add("flow_goodput_bytes_per_second", net, (flow,), f.get("goodput_bps", 0) / 8)
            out.add("flow_dcqcn_rate_bytes_per_second", net, (flow,), f.get("rate_bps", 0) / 8)
            out.add("flow_delivered_bytes", net, (flow,), f.get("delivered_bytes", 0))
            out.add("flow_ecn_marked_packets", net, (flow,), f.get("ce_packets", 0))
            out.add("flow_cnps_sent", net, (flow,), f.get("cnps_sent", 0))
        fid = totals.fidelity
        if fid.get("faithful") is not None:
            out.add("fidelity_faithful", net, (), 1 if fid["faithful"] else 0)
        if fid.get("late_p99_us") is not None:
            out.add("fidelity_lateness_p99_seconds", net, (), fid["late_p99_us"] / 1e6)
        if fid.get("cpu_busy") is not None:
            out.add("fidelity_cpu_busy_ratio", net, (), fid["cpu_busy"])


def _port_links(state: RunState) -> dict[tuple[str, int], tuple[str, str]]:
    return {} if state.picture is None else state.picture.switch_ports


def _port_networks(state: RunState) -> dict[tuple[str, int], str]:
    return {} if state.picture is None else state.picture.port_network


def metrics_text(registry: CollectorRegistry) -> bytes:
    return generate_latest(registry)


def make_registry(runs: Sequence[RunState], dropped: Any = None) -> CollectorRegistry:
    """A registry of its own (never the library's global one) holding the view's collector."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(ViewCollector(runs, dropped))
    return registry

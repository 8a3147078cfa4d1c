"""From a scenario's flows to the host NIC agents' configurations, and the
agent processes of a run.

Pure part (no root, tested in ``tests/unit/test_runner_agents.py``):

- :func:`plan_qps`: every flow is striped over ``flow.qps`` queue pairs;
  each (flow, stripe) gets a QP number unique in the whole run
  (``QPN_BASE + n``), used at **both** ends: the requester QP on the source
  GPU's NIC and the responder QP on the destination GPU's NIC, each naming
  the other as remote. A flow of ``size`` bytes over ``k`` QPs sends
  ``size // k`` bytes per QP, the first ``size % k`` QPs one byte more.
- :func:`build_agent_configs`: one agent config (the JSON of
  :mod:`emulator.traffic.agent.config`) per server that sends or receives a
  flow or has a GPU named by a PFC storm event. NICs are the server's GPUs
  that take part, storming ones included (name = the GPU's
  interface in the namespace, ``line_rate_bps`` = its host link's rate,
  PFC honoured on the scenario's PFC priorities). Sized flows without a
  ``stop_flow`` event are posted by the agent itself: one message per QP at
  ``at_s`` = the flow's start, counted from the common ``start_at_unix``.
  *Fed* flows (``size: unlimited``, or named by a ``stop_flow`` event) have
  no message in the config: the runner posts them chunk by chunk over the
  control channel and stops posting at the stop event (see :class:`Feeder`).
- DCQCN: on/off from ``hosts.dcqcn.enabled``. When every other value is the
  :class:`~emulator.scenario.spec.DcqcnSpec` default the agent's own
  (time-scaled) defaults are kept; otherwise all values are given
  explicitly and unscaled (``time_scale`` 1, ``reference_rate_bps`` = the
  NIC's line rate), see :func:`dcqcn_params`.

A flow's ``rate`` cap is shared by its QPs (``max_rate_bps`` = rate /
qps each). ``op: read`` is carried as a WRITE from ``src`` (same bytes
in the same direction; the READ request packet is not emulated) and the
flow's result says so (``op_emulated``).
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

from emulator.scenario.errors import ScenarioError
from emulator.scenario.spec import DcqcnSpec, FlowSpec, Scenario
from emulator.topology import Topology

if TYPE_CHECKING:
    from emulator.scenario.collectives import Op

QPN_BASE = 0x100
REPO = Path(__file__).resolve().parents[2]
# Rate samples kept per QP: the runner polls full stats for its progress bar.
MAX_RATE_SAMPLES = 2000
# Bytes of one chunk of a fed flow: this many seconds at the NIC's line rate
# (whole MTUs, at least one), and chunks kept posted ahead per QP.
FEED_CHUNK_S = 0.025
# The agent's own minimum retransmission timeout (TransportParams).
MIN_TIMEOUT_FLOOR_MS = 20.0
# ... and its timeout before any RTT sample (TransportParams.timeout_ms).
INITIAL_TIMEOUT_MS = 200.0
# Enough chunks that a runner held up by a busy machine for a few ticks does
# not let a flow run dry (Feeder.starved counts the times it did).
FEED_AHEAD = 8
# The agent's own ceiling of the retransmission timeout (TransportParams).
MAX_TIMEOUT_MS = 5000.0


@dataclass(frozen=True)
class QpPlan:
    """One queue pair of one flow: ``qpn`` at both ends, ``size_bytes`` its
    share of the flow (None: unlimited)."""

    flow: str
    stripe: int
    qpn: int
    src_gpu: str
    dst_gpu: str
    src_server: str
    dst_server: str
    size_bytes: int | None
    start_ns: int
    priority: int
    dscp: int
    fed: bool
    max_rate_bps: float | None = None


def stripes(size_bytes: int | None, qps: int) -> list[int | None]:
    """The bytes each of ``qps`` queue pairs carries (sums to ``size_bytes``)."""
    if size_bytes is None:
        return [None] * qps
    share, extra = divmod(size_bytes, qps)
    return [share + (1 if i < extra else 0) for i in range(qps)]


def stopped_flows(scenario: Scenario) -> dict[str, int]:
    """Flow id -> time (ns) of its ``stop_flow`` event."""
    return {e.flow: e.at_ns for e in scenario.events if e.kind == "stop_flow" and e.flow}


def plan_qps(scenario: Scenario, flows: Sequence[FlowSpec]) -> list[QpPlan]:
    """Queue pairs of every flow, numbered from :data:`QPN_BASE` in flow order."""
    topo = scenario.topology
    stops = stopped_flows(scenario)
    plans: list[QpPlan] = []
    for flow in flows:
        src, dst = topo.gpu(flow.src), topo.gpu(flow.dst)
        fed = flow.size_bytes is None or flow.id in stops
        for stripe, size in enumerate(stripes(flow.size_bytes, flow.qps)):
            plans.append(QpPlan(flow=flow.id, stripe=stripe, qpn=QPN_BASE + len(plans),
                                src_gpu=src.name, dst_gpu=dst.name, src_server=src.server,
                                dst_server=dst.server, size_bytes=size, start_ns=flow.start_ns,
                                priority=flow.priority, dscp=flow.dscp, fed=fed,
                                max_rate_bps=None if flow.rate_bps is None
                                else flow.rate_bps / flow.qps))
    return plans


def host_rate_bps(topology: Topology, gpu: str) -> int:
    """The rate of the host link of ``gpu``'s NIC."""
    for link in topology.links:
        if link.kind == "host" and link.gpu == gpu:
            return link.rate_bps
    raise ScenarioError(f"topology {topology.name}: no host link for {gpu}")


def dcqcn_params(spec: DcqcnSpec, line_rate_bps: float,
                 default_time_scale: float | None = None) -> dict[str, Any]:
    """The agent's ``dcqcn`` settings: only ``enabled`` when the scenario keeps
    the defaults (the agent's scaled defaults apply; with
    ``default_time_scale``, that time scale instead of the agent's), else
    every value explicit and unscaled."""
    if {f.name: getattr(spec, f.name) for f in fields(spec) if f.name != "enabled"} == \
            {f.name: getattr(DcqcnSpec(), f.name) for f in fields(spec) if f.name != "enabled"}:
        if default_time_scale is not None:
            return {"enabled": spec.enabled, "time_scale": float(default_time_scale)}
        return {"enabled": spec.enabled}
    return {
        "enabled": spec.enabled,
        "time_scale": 1.0,
        "reference_rate_bps": float(line_rate_bps),
        "g": spec.g,
        "alpha_timer_us": spec.alpha_timer_ns / 1e3,
        "rate_timer_us": spec.timer_ns / 1e3,
        "byte_counter_bytes": float(spec.byte_counter_bytes),
        "fast_recovery_stages": spec.fast_recovery_steps,
        "rate_ai_bps": float(spec.rate_ai_bps),
        "rate_hai_bps": float(spec.rate_hai_bps),
        "min_rate_bps": float(min(spec.min_rate_bps, line_rate_bps)),
        "cnp_interval_us": spec.cnp_interval_ns / 1e3,
        "clamp_target_rate": spec.clamp_target_rate,
    }


def min_timeout_ms(scenario: Scenario) -> float:
    """The agents' lowest retransmission timeout: twice the time the slowest
    host link takes to drain one full switch queue (the scenario's largest
    buffer) plus a round trip over the longest path (6 links each way, in
    a fat-tree), and never under :data:`MIN_TIMEOUT_FLOOR_MS`. A queue that
    is full but not dropping then never makes a sender time out (go-back-N
    on a spurious timeout resends a window that was only waiting). The
    agents also start with it before their first RTT sample when it is
    above their :data:`INITIAL_TIMEOUT_MS` (a time-scaled scenario's
    emulated RTTs can be far longer than that)."""
    buffers = [scenario.switches.buffer_bytes] + [
        o.buffer_bytes for o in scenario.switches.overrides if o.buffer_bytes is not None]
    rate_bps = min(link.rate_bps for link in scenario.topology.links if link.kind == "host")
    delay_ns = max(link.delay_ns for link in scenario.topology.links)
    return round(max(MIN_TIMEOUT_FLOOR_MS,
                     2 * max(buffers) * 8 / rate_bps * 1e3 + 12 * delay_ns / 1e6), 3)


def build_agent_configs(scenario: Scenario, flows: Sequence[FlowSpec],
                        start_at_unix: float | None = None,
                        qps: Sequence[QpPlan] | None = None,
                        graph: Sequence[Op] = (), *,
                        dcqcn_time_scale: float | None = None) -> dict[str, dict[str, Any]]:
    """Server name -> agent JSON config (see the module docstring). Flows
    that carry ``graph`` ops (collectives) get those messages, with their
    dependencies, instead of one message of their size. ``dcqcn_time_scale``
    replaces the agent's default DCQCN time scale when the scenario keeps
    the DCQCN defaults (the virtual-time target passes 1: the paper's
    timers as they are)."""
    topo = scenario.topology
    plans = list(qps) if qps is not None else plan_qps(scenario, flows)
    ops = {f.id: ("write" if f.op == "read" else f.op) for f in flows}
    pfc = scenario.switches.pfc
    pfc_prios = list(pfc.priorities) if pfc.enabled else []
    mtu = scenario.hosts.mtu_bytes
    prio = scenario.switches.priorities
    configs: dict[str, dict[str, Any]] = {}
    nics: dict[str, dict[str, dict[str, Any]]] = {}

    def agent(server: str) -> dict[str, Any]:
        if server not in configs:
            configs[server] = {
                "name": server, "nics": [], "qps": [],
                "defaults": {"transport": {
                    "path_mtu_bytes": mtu, "min_timeout_ms": min_timeout_ms(scenario),
                    "timeout_ms": max(INITIAL_TIMEOUT_MS, min_timeout_ms(scenario)),
                    # a slowed fabric's floor may pass the agent's own ceiling
                    "max_timeout_ms": max(MAX_TIMEOUT_MS, 4 * min_timeout_ms(scenario))}},
                "workload": {"start_at_unix": start_at_unix, "messages": []},
                "run": {"max_rate_samples": MAX_RATE_SAMPLES},
                "cnp_dscp": prio.cnp_dscp, "cnp_priority": prio.cnp,
            }
            nics[server] = {}
        return configs[server]

    def nic(server: str, gpu_name: str) -> dict[str, Any]:
        cfg = agent(server)
        gpu = topo.gpu(gpu_name)
        if gpu.intf not in nics[server]:
            entry = {"name": gpu.intf, "ip": gpu.ip, "mac": gpu.mac,
                     "gateway_mac": gpu.gateway_mac,
                     "line_rate_bps": float(host_rate_bps(topo, gpu.name)),
                     "mtu_bytes": max(1500, mtu + 100), "pfc_priorities": pfc_prios}
            nics[server][gpu.intf] = entry
            cfg["nics"].append(entry)
        return nics[server][gpu.intf]

    for event in scenario.events:
        if event.gpu is not None:  # a PFC storm: the GPU's NIC, with or without flows
            nic(topo.gpu(event.gpu).server, event.gpu)
    graph_flows = {op.flow for op in graph}
    for qp in plans:
        src_nic, dst_nic = nic(qp.src_server, qp.src_gpu), nic(qp.dst_server, qp.dst_gpu)
        for server, here, there in ((qp.src_server, src_nic, dst_nic),
                                    (qp.dst_server, dst_nic, src_nic)):
            configs[server]["qps"].append({
                "qpn": qp.qpn, "nic": here["name"], "remote_ip": there["ip"],
                "remote_qpn": qp.qpn, "priority": qp.priority, "dscp": qp.dscp,
                "max_rate_bps": qp.max_rate_bps,
                "dcqcn": dcqcn_params(scenario.hosts.dcqcn, here["line_rate_bps"],
                                      dcqcn_time_scale)})
        if not qp.fed and qp.size_bytes and qp.flow not in graph_flows:
            configs[qp.src_server]["workload"]["messages"].append({
                "qp": qp.qpn, "size_bytes": qp.size_bytes, "op": ops[qp.flow],
                "at_s": qp.start_ns / 1e9})
    stripes_of: dict[str, list[QpPlan]] = {}
    for qp in plans:
        stripes_of.setdefault(qp.flow, []).append(qp)
    for op in graph:
        # an op is one message per stripe of its flow; it waits for every
        # stripe of what it depends on (each stripe QP carries one message per op)
        mine = stripes_of[op.flow]
        here = mine[0].src_server
        after = []
        for flow, count in op.after:
            deps = stripes_of[flow]
            if deps[0].dst_server != here:
                raise ScenarioError(f"{scenario.source}: {op.tag} waits for {flow}, which "
                                    f"arrives at {deps[0].dst_server}, not at {here}")
            after.extend([dep.qpn, count] for dep in deps)
        for qp, size in zip(mine, stripes(op.size_bytes, len(mine))):
            configs[here]["workload"]["messages"].append({
                "qp": qp.qpn, "size_bytes": size, "op": ops[qp.flow],
                "tag": op.tag if qp.stripe == 0 else f"{op.tag}.{qp.stripe}",
                "at_s": op.at_ns / 1e9, "after_rx": after, "delay_s": op.delay_ns / 1e9})
    return configs


# -- fed flows (unlimited, or stopped by an event) ---------------------------------

@dataclass
class FeedState:
    qp: QpPlan
    chunk_bytes: int
    posted_bytes: int = 0
    stop_at_s: float | None = None  # offset from the run's start
    stopped: bool = False


class Feeder:
    """Keeps fed flows' QPs supplied with chunks while they run.

    On each :meth:`tick` (offset ``t`` from the start, and each agent's
    ``status``), a QP whose flow has started, is not stopped and has fewer
    than :data:`FEED_AHEAD` messages outstanding gets chunks posted up to
    that many, never past its size. A stop takes effect at the next tick:
    no chunk is posted after it; the chunks already posted (at most
    ``FEED_AHEAD`` × ``chunk_s`` of line rate, :data:`FEED_CHUNK_S` by
    default) still complete. ``starved`` counts the ticks at which a
    started, unstopped QP had nothing left posted (the runner fell behind
    feeding it: its flow ran below what it asked for; the fidelity block
    says so).
    """

    def __init__(self, scenario: Scenario, qps: Iterable[QpPlan], op_of: dict[str, str], *,
                 chunk_s: float = FEED_CHUNK_S) -> None:
        stops = stopped_flows(scenario)
        mtu = scenario.hosts.mtu_bytes
        self.op_of = op_of
        self.chunk_s = chunk_s
        self.states: list[FeedState] = []
        self.starved = 0
        for qp in qps:
            if not qp.fed:
                continue
            rate = host_rate_bps(scenario.topology, qp.src_gpu)
            chunk = max(mtu, int(rate / 8 * chunk_s) // mtu * mtu)
            stop = stops.get(qp.flow)
            self.states.append(FeedState(qp, chunk, stop_at_s=None if stop is None else stop / 1e9))

    def stop_flow(self, flow: str) -> None:
        for st in self.states:
            if st.qp.flow == flow:
                st.stopped = True

    def tick(self, t: float, status: dict[str, dict[str, Any]]) -> list[tuple[str, int, int, str]]:
        """(server, qpn, size, op) posts to make now; ``status``: server -> the
        agent's ``status`` answer."""
        posts = []
        for st in self.states:
            qp = st.qp
            if st.stop_at_s is not None and t >= st.stop_at_s:
                st.stopped = True
            if st.stopped or t < qp.start_ns / 1e9:
                continue
            qstat = status.get(qp.src_server, {}).get("qps", {}).get(str(qp.qpn))
            if qstat is None or qstat.get("error"):
                continue
            outstanding = int(qstat.get("outstanding", 0))
            if not outstanding and st.posted_bytes and (
                    qp.size_bytes is None or st.posted_bytes < qp.size_bytes):
                self.starved += 1
            room = FEED_AHEAD - outstanding
            while room > 0:
                size = st.chunk_bytes
                if qp.size_bytes is not None:
                    size = min(size, qp.size_bytes - st.posted_bytes)
                if size <= 0:
                    break
                posts.append((qp.src_server, qp.qpn, size, self.op_of.get(qp.flow, "write")))
                st.posted_bytes += size
                room -= 1
        return posts


# -- agent processes ----------------------------------------------------------------

class AgentStartError(RuntimeError):
    """An agent did not come up (its stderr tail is in the message)."""


class AgentProcess:
    """``python -m emulator.traffic.agent`` inside a server's namespace."""

    def __init__(self, server: str, netns: str, config: dict[str, Any], workdir: Path,
                 sockdir: Path, safety_s: float) -> None:
        self.server = server
        self.config_path = workdir / f"{server}.config.json"
        self.stats_path = workdir / f"{server}.stats.json"
        self.stderr_path = workdir / f"{server}.stderr.log"
        self.control = str(sockdir / f"{server}.sock")
        self.config_path.write_text(json.dumps(config, indent=1))
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-m", "emulator.traffic.agent",
             "--config", str(self.config_path), "--stats", str(self.stats_path),
             "--control", self.control, "--duration", f"{safety_s:.3f}"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        self.ready: dict[str, Any] | None = None
        self._buf = b""

    def poll_ready(self) -> bool:
        """Read the ``ready`` line if it is there; raise if the agent died."""
        if self.ready is not None:
            return True
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self._buf += chunk
            if b"\n" in self._buf:
                line = self._buf.split(b"\n", 1)[0]
                self.ready = json.loads(line)
                return True
        if self.proc.poll() is not None:
            raise AgentStartError(f"agent of {self.server} exited with status "
                                  f"{self.proc.returncode}: {self.stderr_tail()}")
        return False

    def stderr_tail(self, limit: int = 400) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-limit:].strip()
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """SIGTERM, wait, SIGKILL if need be; the stats it wrote (None if none)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return None


def wait_ready(agents: Sequence[AgentProcess], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(a.poll_ready() for a in agents):
        if time.monotonic() > deadline:
            late = [a.server for a in agents if a.ready is None]
            raise AgentStartError(f"agents not ready within {timeout_s:.0f} s: {', '.join(late)}")
        time.sleep(0.05)

"""The agent's JSON configuration: what it reads, checks and defaults.

One file per agent (one agent per server). Example, every optional key
shown with its default where it has one::

    {
      "name": "server0",
      "nics": [
        {"name": "eth0", "ip": "10.0.0.1", "mac": "02:00:00:00:00:01",
         "gateway_mac": "02:00:00:00:ff:01", "line_rate_bps": 10e6,
         "mtu_bytes": 1500, "overhead_bytes": 0,
         "pfc_priorities": [0, 1, 2, 3, 4, 5, 6, 7], "max_lag_us": 5000}
      ],
      "defaults": {"priority": 3, "dscp": 26, "transport": {...}, "dcqcn": {...}},
      "qps": [
        {"qpn": 17, "nic": "eth0", "remote_ip": "10.0.1.1", "remote_qpn": 17,
         "remote_mac": null, "priority": 3, "dscp": 26, "udp_sport": null,
         "start_psn": 0, "remote_start_psn": 0, "ecn": "auto", "max_rate_bps": null,
         "transport": {"path_mtu_bytes": 1024, "ack_req_every": 16, "ack_every": 0,
                       "timeout_ms": 200, "min_timeout_ms": 20, "max_timeout_ms": 5000,
                       "rtt_timeout_factor": 4, "retry_count": 7,
                       "max_outstanding_packets": 0},
         "dcqcn": {"enabled": true, "time_scale": 100, ...}}
      ],
      "workload": {"start_at_unix": null,
                   "messages": [{"qp": 17, "size_bytes": 1048576, "op": "write",
                                 "at_s": 0.0, "count": 1, "interval_s": 0.0}]},
      "run": {"duration_s": null, "stats_path": null, "control_socket": null,
              "check_icrc": false, "max_rate_samples": 20000,
              "max_message_records": 100000, "swallow_udp": true, "series_bin_ms": 10,
              "realtime_priority": 0, "tx_ring": false}
    }

- ``nics``: one per GPU NIC, ``name`` the interface in the server's
  namespace. ``gateway_mac`` is where every frame goes (the leaf's port, or
  the peer on a direct link). ``line_rate_bps`` is the NIC's pacing rate,
  counting ``len(frame) + overhead_bytes``. ``pfc_priorities``: those the
  NIC pauses when told to. ``max_lag_us``: how far behind a late wake-up
  (or the process being descheduled on a busy machine) the pacers may
  catch up by sending back to back (see ``pacing``).
- ``qps``: reliable-connected queue pairs. Both ends are configured by the
  runner (no connection set-up): a QP ``qpn`` on ``nic`` talks to
  ``remote_qpn`` at ``remote_ip``; ``remote_mac`` defaults to the NIC's
  gateway. ``priority`` is the traffic class the host pauses it under (data
  and ACKs), ``dscp`` what the switch classifies (26 -> lossless priority 3).
  CNPs go with DSCP 48 on priority 6. ``ecn``: ``auto`` (ECT(0) when DCQCN
  is on, Not-ECT when off), ``ect0``, ``ect1`` or ``not-ect``.
  ``udp_sport`` defaults to ``0xC000 | (qpn & 0x3FFF)``. ``max_rate_bps``
  caps the QP's rate (DCQCN then runs as on a NIC of that rate). ``start_psn`` is
  the first PSN this QP sends, ``remote_start_psn`` the first it expects.
  ``transport`` and ``dcqcn`` are merged over ``defaults`` key by key; see
  :class:`TransportParams` and ``dcqcn.DcqcnParams``.
- ``workload.messages``: work requests to post, ``count`` of them from
  ``at_s`` after the start, every ``interval_s``. ``op`` is ``write`` or
  ``send``. ``start_at_unix`` (wall clock, shared by all namespaces) lets
  the runner start several agents' workloads together; default: when the
  agent starts. A message with ``after_rx`` (``[[qpn, n], ...]``: wait
  until responder QP ``qpn`` has received ``n`` messages), ``delay_s``
  (wait this long once ready: compute time) or ``tag`` (its name in the
  records) belongs to the work graph (:mod:`.workgraph`): posted once, in
  file order per QP, when all its conditions hold. ``after`` (indices of
  earlier graph messages of this list) waits for those to be done: posted,
  or for an entry with ``op: compute`` (no ``qp``, no bytes: a GPU's
  compute of ``delay_s``), its time over.
- ``run``: ``duration_s`` (stop after; null = until SIGTERM/SIGINT or a
  ``stop`` command), where to write the stats and the control socket (the
  command line overrides both), whether to check every frame's ICRC, caps
  on recorded rate samples and message records, and ``swallow_udp`` (bind
  UDP port 4791 on the NIC's address, when the address is configured, so
  the kernel drops RoCE packets quietly instead of answering them with ICMP
  port unreachable). ``series_bin_ms``: the time bin of the per-QP series in
  the stats (see ``stats``), 100 ns to 60 s. ``realtime_priority``: run the
  loop at this ``SCHED_FIFO`` priority while it stays light (0: normal
  scheduling; see ``emulator.fidelity.process.RealtimeGuard``). ``tx_ring``:
  send through a ``PACKET_MMAP`` transmit ring, flushed once per service
  pass (see ``txring``; off by default: on the 2-core VM it costs more CPU
  per frame than ``send()``; when the ring cannot be set up, ``send()``).
"""

from __future__ import annotations

import json
import math
import socket
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from emulator.traffic.agent.dcqcn import DcqcnParams
from emulator.traffic.roce import CNP_DSCP, MAX_PSN, MAX_QPN, mac_bytes

OPS = ("write", "send")
# A work-graph entry that sends nothing: it takes delay_s (a GPU's compute)
# once ready, and what waits for it (``after``) goes on then.
COMPUTE_OP = "compute"
ECN_MODES = ("auto", "ect0", "ect1", "not-ect")
CNP_PRIORITY = 6


class ConfigError(ValueError):
    """The agent's configuration is not valid; the message says where."""


@dataclass(frozen=True)
class TransportParams:
    """RC transport settings of one queue pair."""

    path_mtu_bytes: int = 1024
    ack_req_every: int = 16          # AckReq on every Nth packet and on each message's last
    ack_every: int = 0               # responder ACKs every Nth in-order packet anyway (0: off)
    timeout_ms: float = 200.0        # retransmission timeout before any RTT sample
    min_timeout_ms: float = 20.0
    max_timeout_ms: float = 5000.0
    rtt_timeout_factor: float = 4.0  # timeout = factor × smoothed RTT, within the bounds
    retry_count: int = 7             # timeouts in a row before the QP goes to error
    max_outstanding_packets: int = 0  # 0: no limit

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or math.isnan(value) or value < 0:
                raise ValueError(f"transport.{f.name} must be a non-negative number")
        for name in ("path_mtu_bytes", "ack_req_every", "ack_every", "retry_count",
                     "max_outstanding_packets"):
            if int(getattr(self, name)) != getattr(self, name):
                raise ValueError(f"transport.{name} must be an integer")
        if self.path_mtu_bytes < 4 or self.path_mtu_bytes % 4:
            raise ValueError("transport.path_mtu_bytes must be a positive multiple of 4")
        if self.ack_req_every < 1:
            raise ValueError("transport.ack_req_every must be at least 1")
        if not 0 < self.min_timeout_ms <= self.max_timeout_ms:
            raise ValueError("transport: need 0 < min_timeout_ms <= max_timeout_ms")
        if self.timeout_ms <= 0:
            raise ValueError("transport.timeout_ms must be positive")


@dataclass(frozen=True)
class NicConfig:
    name: str
    ip: str
    mac: str
    gateway_mac: str
    line_rate_bps: float
    mtu_bytes: int = 1500
    overhead_bytes: int = 0
    pfc_priorities: tuple[int, ...] = tuple(range(8))
    max_lag_us: float = 5000.0
    # a GPU's scale-up port: on the agent's in-process scale-up switch with this
    # hop latency (:mod:`.scale_up`), not a raw socket; None: an interface
    scale_up_hop_s: float | None = None


@dataclass(frozen=True)
class QpConfig:
    qpn: int
    nic: str
    remote_ip: str
    remote_qpn: int
    remote_mac: str | None = None
    priority: int = 3
    dscp: int = 26
    udp_sport: int | None = None
    start_psn: int = 0
    remote_start_psn: int = 0
    ecn: str = "auto"
    rkey: int = 0
    remote_va: int = 0
    max_rate_bps: float | None = None  # a cap on this QP's sending rate (None: line rate)
    transport: TransportParams = field(default_factory=TransportParams)
    dcqcn: DcqcnParams = field(default_factory=DcqcnParams)

    @property
    def sport(self) -> int:
        return self.udp_sport if self.udp_sport is not None else 0xC000 | (self.qpn & 0x3FFF)


@dataclass(frozen=True)
class MessageSpec:
    qp: int
    size_bytes: int
    op: str = "write"
    at_s: float = 0.0
    count: int = 1
    interval_s: float = 0.0
    # Work-graph messages (see workgraph): posted once every (qpn, n) here
    # has received n messages and at_s has come, delay_s after that.
    after_rx: tuple[tuple[int, int], ...] = ()
    delay_s: float = 0.0
    tag: str | None = None
    # ... and once the earlier graph messages at these indices of
    # workload.messages are done (posted; a compute: its delay_s over)
    after: tuple[int, ...] = ()

    @property
    def in_graph(self) -> bool:
        return (bool(self.after_rx) or bool(self.after) or self.delay_s > 0
                or self.tag is not None or self.op == COMPUTE_OP)


@dataclass(frozen=True)
class RunConfig:
    duration_s: float | None = None
    stats_path: str | None = None
    control_socket: str | None = None
    check_icrc: bool = False
    max_rate_samples: int = 20_000
    max_message_records: int = 100_000
    swallow_udp: bool = True
    series_bin_ms: float = 10.0
    realtime_priority: int = 0
    tx_ring: bool = False


@dataclass(frozen=True)
class AgentConfig:
    name: str
    nics: tuple[NicConfig, ...]
    qps: tuple[QpConfig, ...]
    messages: tuple[MessageSpec, ...] = ()
    start_at_unix: float | None = None
    run: RunConfig = field(default_factory=RunConfig)
    cnp_dscp: int = CNP_DSCP
    cnp_priority: int = CNP_PRIORITY

    def nic(self, name: str) -> NicConfig:
        for nic in self.nics:
            if nic.name == name:
                return nic
        raise ConfigError(f"no NIC named {name!r}")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# -- loading -------------------------------------------------------------------

def load_config(path: str | Path) -> AgentConfig:
    """Read and check a JSON config file."""
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: not JSON: {exc}") from None
    return parse_config(data)


def parse_config(data: Any) -> AgentConfig:
    """Build an :class:`AgentConfig` from parsed JSON; raises :class:`ConfigError`."""
    top = _obj(data, "config", {"name", "nics", "qps", "defaults", "workload", "run",
                                "cnp_dscp", "cnp_priority"})
    nics = tuple(_nic(n, f"nics[{i}]") for i, n in enumerate(_list(top.get("nics"), "nics")))
    if not nics:
        raise ConfigError("nics: at least one NIC is needed")
    _unique([n.name for n in nics], "nics", "name")
    defaults = _obj(top.get("defaults", {}), "defaults",
                    {"priority", "dscp", "transport", "dcqcn", "ecn"})
    qps = tuple(_qp(q, f"qps[{i}]", defaults, nics)
                for i, q in enumerate(_list(top.get("qps", []), "qps")))
    _unique([q.qpn for q in qps], "qps", "qpn")  # unique per agent: the workload names QPs by it
    workload = _obj(top.get("workload", {}), "workload", {"start_at_unix", "messages"})
    qpns = {q.qpn for q in qps}
    messages = tuple(_message(m, f"workload.messages[{i}]", qpns, i)
                     for i, m in enumerate(_list(workload.get("messages", []),
                                                 "workload.messages")))
    for i, m in enumerate(messages):
        for dep in m.after:
            if not messages[dep].in_graph:
                raise ConfigError(f"workload.messages[{i}].after: message {dep} is not in the "
                                  "work graph (it has no tag, after_rx, after or delay_s)")
    start_at = workload.get("start_at_unix")
    if start_at is not None:
        start_at = _number(start_at, "workload.start_at_unix")
    run = _run(top.get("run", {}))
    cnp_dscp = _int(top.get("cnp_dscp", CNP_DSCP), "cnp_dscp", 0, 63)
    cnp_priority = _int(top.get("cnp_priority", CNP_PRIORITY), "cnp_priority", 0, 7)
    config = AgentConfig(name=_str(top.get("name", "agent"), "name"), nics=nics, qps=qps,
                         messages=messages, start_at_unix=start_at, run=run,
                         cnp_dscp=cnp_dscp, cnp_priority=cnp_priority)
    for i, qp in enumerate(qps):
        nic = config.nic(qp.nic)
        frame = 14 + 20 + 8 + 12 + 16 + qp.transport.path_mtu_bytes + 4
        if frame - 14 > nic.mtu_bytes:
            raise ConfigError(f"qps[{i}]: path MTU {qp.transport.path_mtu_bytes} B makes "
                              f"{frame - 14} B IP packets, more than NIC {nic.name}'s MTU "
                              f"{nic.mtu_bytes}")
    return config


def _nic(raw: Any, where: str) -> NicConfig:
    obj = _obj(raw, where, {f.name for f in fields(NicConfig)})
    for key in ("name", "ip", "mac", "gateway_mac", "line_rate_bps"):
        if key not in obj:
            raise ConfigError(f"{where}: missing {key!r}")
    rate = _number(obj["line_rate_bps"], f"{where}.line_rate_bps")
    if rate <= 0 or math.isinf(rate):
        raise ConfigError(f"{where}.line_rate_bps must be a positive finite rate")
    prios = tuple(_int(p, f"{where}.pfc_priorities", 0, 7)
                  for p in _list(obj.get("pfc_priorities", list(range(8))),
                                 f"{where}.pfc_priorities"))
    return NicConfig(
        name=_str(obj["name"], f"{where}.name"),
        ip=_ipv4(obj["ip"], f"{where}.ip"),
        mac=_mac(obj["mac"], f"{where}.mac"),
        gateway_mac=_mac(obj["gateway_mac"], f"{where}.gateway_mac"),
        line_rate_bps=rate,
        mtu_bytes=_int(obj.get("mtu_bytes", 1500), f"{where}.mtu_bytes", 68, 65535),
        overhead_bytes=_int(obj.get("overhead_bytes", 0), f"{where}.overhead_bytes", 0, 1000),
        pfc_priorities=prios,
        max_lag_us=_nonneg(obj.get("max_lag_us", 5000.0), f"{where}.max_lag_us"),
        scale_up_hop_s=(None if obj.get("scale_up_hop_s") is None
                        else _nonneg(obj["scale_up_hop_s"], f"{where}.scale_up_hop_s")),
    )


def _qp(raw: Any, where: str, defaults: dict[str, Any], nics: tuple[NicConfig, ...]) -> QpConfig:
    obj = _obj(raw, where, {f.name for f in fields(QpConfig)})
    for key in ("qpn", "nic", "remote_ip", "remote_qpn"):
        if key not in obj:
            raise ConfigError(f"{where}: missing {key!r}")
    nic = _str(obj["nic"], f"{where}.nic")
    if nic not in {n.name for n in nics}:
        raise ConfigError(f"{where}.nic: no NIC named {nic!r}")
    transport = {**_obj(defaults.get("transport", {}), "defaults.transport", None),
                 **_obj(obj.get("transport", {}), f"{where}.transport", None)}
    dcqcn = {**_obj(defaults.get("dcqcn", {}), "defaults.dcqcn", None),
             **_obj(obj.get("dcqcn", {}), f"{where}.dcqcn", None)}
    remote_mac = obj.get("remote_mac")
    sport = obj.get("udp_sport")
    ecn = obj.get("ecn", defaults.get("ecn", "auto"))
    if ecn not in ECN_MODES:
        raise ConfigError(f"{where}.ecn must be one of {', '.join(ECN_MODES)}")
    return QpConfig(
        qpn=_int(obj["qpn"], f"{where}.qpn", 0, MAX_QPN),
        nic=nic,
        remote_ip=_ipv4(obj["remote_ip"], f"{where}.remote_ip"),
        remote_qpn=_int(obj["remote_qpn"], f"{where}.remote_qpn", 0, MAX_QPN),
        remote_mac=None if remote_mac is None else _mac(remote_mac, f"{where}.remote_mac"),
        priority=_int(obj.get("priority", defaults.get("priority", 3)), f"{where}.priority", 0, 7),
        dscp=_int(obj.get("dscp", defaults.get("dscp", 26)), f"{where}.dscp", 0, 63),
        udp_sport=None if sport is None else _int(sport, f"{where}.udp_sport", 0, 0xFFFF),
        start_psn=_int(obj.get("start_psn", 0), f"{where}.start_psn", 0, MAX_PSN),
        remote_start_psn=_int(obj.get("remote_start_psn", 0), f"{where}.remote_start_psn", 0,
                              MAX_PSN),
        ecn=ecn,
        rkey=_int(obj.get("rkey", 0), f"{where}.rkey", 0, 0xFFFFFFFF),
        remote_va=_int(obj.get("remote_va", 0), f"{where}.remote_va", 0, (1 << 64) - 1),
        max_rate_bps=_max_rate(obj.get("max_rate_bps"), f"{where}.max_rate_bps"),
        transport=_build(TransportParams, transport, f"{where}.transport"),
        dcqcn=_build(DcqcnParams, dcqcn, f"{where}.dcqcn"),
    )


def _max_rate(raw: Any, where: str) -> float | None:
    if raw is None:
        return None
    rate = _number(raw, where)
    if rate <= 0 or math.isinf(rate):
        raise ConfigError(f"{where} must be a positive finite rate (or null: line rate)")
    return rate


def _message(raw: Any, where: str, qpns: set[int], index: int = 0) -> MessageSpec:
    obj = _obj(raw, where, {f.name for f in fields(MessageSpec)})
    op = obj.get("op", "write")
    if op == COMPUTE_OP:  # no QP, no bytes
        if obj.get("qp", -1) != -1 or obj.get("size_bytes", 0) != 0:
            raise ConfigError(f"{where}: a compute entry has no qp and no size_bytes")
        obj = {**obj, "qp": -1, "size_bytes": 0}
    for key in ("qp", "size_bytes"):
        if key not in obj:
            raise ConfigError(f"{where}: missing {key!r}")
    qp = -1 if op == COMPUTE_OP else _int(obj["qp"], f"{where}.qp", 0, MAX_QPN)
    if op != COMPUTE_OP and qp not in qpns:
        raise ConfigError(f"{where}.qp: no queue pair {qp}")
    if op not in OPS and op != COMPUTE_OP:
        raise ConfigError(f"{where}.op must be one of {', '.join(OPS)} (or {COMPUTE_OP})")
    after = []
    for n, dep in enumerate(_list(obj.get("after_rx", []), f"{where}.after_rx")):
        if not isinstance(dep, list) or len(dep) != 2:
            raise ConfigError(f"{where}.after_rx[{n}] must be [qpn, count]")
        dep_qp = _int(dep[0], f"{where}.after_rx[{n}][0]", 0, MAX_QPN)
        if dep_qp not in qpns:
            raise ConfigError(f"{where}.after_rx[{n}]: no queue pair {dep_qp}")
        after.append((dep_qp, _int(dep[1], f"{where}.after_rx[{n}][1]", 1, 1 << 31)))
    tag = obj.get("tag")
    local = tuple(_int(dep, f"{where}.after[{n}]", 0, index - 1 if index else 0)
                  for n, dep in enumerate(_list(obj.get("after", []), f"{where}.after")))
    if index == 0 and local:
        raise ConfigError(f"{where}.after: the first message waits for no earlier one")
    spec = MessageSpec(qp=qp, size_bytes=_int(obj["size_bytes"], f"{where}.size_bytes", 0,
                                              1 << 40),
                       op=op, at_s=_nonneg(obj.get("at_s", 0.0), f"{where}.at_s"),
                       count=_int(obj.get("count", 1), f"{where}.count", 0, 1 << 31),
                       interval_s=_nonneg(obj.get("interval_s", 0.0), f"{where}.interval_s"),
                       after_rx=tuple(after),
                       delay_s=_nonneg(obj.get("delay_s", 0.0), f"{where}.delay_s"),
                       tag=None if tag is None else _str(tag, f"{where}.tag"), after=local)
    if spec.in_graph and spec.count != 1:
        raise ConfigError(f"{where}: a message with after_rx, delay_s or tag is posted once "
                          f"(count 1), not {spec.count} times")
    return spec


def _run(raw: Any) -> RunConfig:
    obj = _obj(raw, "run", {f.name for f in fields(RunConfig)})
    duration = obj.get("duration_s")
    return RunConfig(
        duration_s=None if duration is None else _nonneg(duration, "run.duration_s"),
        stats_path=_opt_str(obj.get("stats_path"), "run.stats_path"),
        control_socket=_opt_str(obj.get("control_socket"), "run.control_socket"),
        check_icrc=_bool(obj.get("check_icrc", False), "run.check_icrc"),
        max_rate_samples=_int(obj.get("max_rate_samples", 20_000), "run.max_rate_samples",
                              0, 1 << 31),
        max_message_records=_int(obj.get("max_message_records", 100_000),
                                 "run.max_message_records", 0, 1 << 31),
        swallow_udp=_bool(obj.get("swallow_udp", True), "run.swallow_udp"),
        series_bin_ms=_bin_ms(obj.get("series_bin_ms", 10.0)),
        realtime_priority=_int(obj.get("realtime_priority", 0), "run.realtime_priority", 0, 99),
        tx_ring=_bool(obj.get("tx_ring", False), "run.tx_ring"),
    )


def _bin_ms(raw: Any) -> float:
    value = _number(raw, "run.series_bin_ms")
    # down to 100 ns: the virtual-time target bins microsecond-long runs
    if not 0.0001 <= value <= 60_000:
        raise ConfigError(f"run.series_bin_ms = {raw} is not in 0.0001..60000 (milliseconds)")
    return value


def _build(cls: type, values: dict[str, Any], where: str) -> Any:
    known = {f.name for f in fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown keys {unknown}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f"{where}: {exc}") from None


# -- small checkers --------------------------------------------------------------

def _obj(raw: Any, where: str, allowed: set[str] | None) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where} must be an object")
    if allowed is not None:
        unknown = sorted(set(raw) - allowed)
        if unknown:
            raise ConfigError(f"{where}: unknown keys {unknown}")
    return raw


def _list(raw: Any, where: str) -> list[Any]:
    if not isinstance(raw, list):
        raise ConfigError(f"{where} must be a list")
    return raw


def _str(raw: Any, where: str) -> str:
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{where} must be a non-empty string")
    return raw


def _opt_str(raw: Any, where: str) -> str | None:
    return None if raw is None else _str(raw, where)


def _bool(raw: Any, where: str) -> bool:
    if not isinstance(raw, bool):
        raise ConfigError(f"{where} must be true or false")
    return raw


def _number(raw: Any, where: str) -> float:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or math.isnan(raw):
        raise ConfigError(f"{where} must be a number")
    return float(raw)


def _nonneg(raw: Any, where: str) -> float:
    value = _number(raw, where)
    if value < 0:
        raise ConfigError(f"{where} must not be negative")
    return value


def _int(raw: Any, where: str, low: int, high: int) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, float)) or raw != int(raw):
        raise ConfigError(f"{where} must be an integer")
    if not low <= raw <= high:
        raise ConfigError(f"{where} = {raw} is not in {low}..{high}")
    return int(raw)


def _ipv4(raw: Any, where: str) -> str:
    try:
        socket.inet_pton(socket.AF_INET, _str(raw, where))
    except OSError:
        raise ConfigError(f"{where}: not an IPv4 address: {raw!r}") from None
    return raw


def _mac(raw: Any, where: str) -> str:
    try:
        mac_bytes(_str(raw, where))
    except ValueError:
        raise ConfigError(f"{where}: not a MAC address: {raw!r}") from None
    return raw.lower()


def _unique(values: list[Any], where: str, what: str) -> None:
    seen = set()
    for value in values:
        if value in seen:
            raise ConfigError(f"{where}: {what} {value!r} appears twice")
        seen.add(value)

"""The checked parameters of a scenario, as typed, immutable data.

Every number carries its unit in its name (``size_bytes``, ``start_ns``,
``rate_bps``); :mod:`.loader` builds these from a file and :meth:`to_dict`
writes them back as the normalised JSON ``aifabric scenario check --json``
prints (the same unit-suffixed names, defaults filled in, GPU patterns and
``SWITCH:*`` resolved).

Defaults, when a file leaves a key out, are the ``DEFAULT_*`` constants here
and the defaults of :mod:`emulator.control.fabric_plan`'s settings.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, field, fields, replace
from typing import TYPE_CHECKING, Any, Callable, Mapping

from emulator.control.fabric_plan import BufferSettings, EcnSettings, PfcSettings
from emulator.scenario.units import Threshold
from emulator.topology import Topology

if TYPE_CHECKING:
    from emulator.scenario.jobs_spec import JobSpec

# The static cap of each lossy queue (SONiC's static_th; the dynamic
# threshold of emulator.targets.builtin.mmu applies too); lossless queues
# have none: their ingress groups are admitted by XOFF and headroom.
DEFAULT_BUFFER_BYTES = 96_000
# RETH (16 bytes) on the first packet of a WRITE: the largest frame is
# frame_bytes + this, what a computed headroom allows for.
RETH_BYTES = 16
DEFAULT_MTU_BYTES = 1024
ROCE_MTUS: tuple[int, ...] = (256, 512, 1024, 2048, 4096)
# Ethernet 14 + IPv4 20 + UDP 8 + BTH 12 + ICRC 4: the frame of a RoCEv2
# WRITE/SEND middle packet around its payload (no FCS: the switches count the
# frame as they receive it). First packets carry 16 more bytes of RETH.
ROCE_FRAME_OVERHEAD_BYTES = 58
DEFAULT_MAX_PACKETS = 10_000
BEST_EFFORT_PRIORITY = 0
UNLIMITED = "unlimited"
# A PFC storm's pause time when the event gives none (the longest a frame can say).
DEFAULT_STORM_QUANTA = 65535


@dataclass(frozen=True)
class EcnSpec:
    """RED-like marking on ``priorities`` from ``kmin`` to ``kmax`` (bytes or packets)."""

    enabled: bool = EcnSettings.enabled
    kmin: Threshold = Threshold(EcnSettings.kmin_pkts, "pkts")
    kmax: Threshold = Threshold(EcnSettings.kmax_pkts, "pkts")
    pmax: float = EcnSettings.pmax
    priorities: tuple[int, ...] = EcnSettings.priorities

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "kmin": _threshold_dict(self.kmin),
                "kmax": _threshold_dict(self.kmax), "pmax": self.pmax,
                "priorities": list(self.priorities)}


@dataclass(frozen=True)
class PfcSpec:
    """Pause the upstream port above ``xoff`` (or ``alpha`` x the free
    shared buffer when ``alpha`` > 0), resume below ``xon``, on
    ``priorities``; ``headroom`` per port and priority (None: computed from
    the link and ``response_ns``, the peer's response time)."""

    enabled: bool = PfcSettings.enabled
    priorities: tuple[int, ...] = PfcSettings.priorities
    xoff: Threshold = Threshold(PfcSettings.xoff_bytes, "bytes")
    xon: Threshold = Threshold(PfcSettings.xon_bytes, "bytes")
    quanta: int = PfcSettings.quanta
    alpha: float = PfcSettings.alpha
    headroom: Threshold | None = None
    response_ns: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "priorities": list(self.priorities),
                "xoff": _threshold_dict(self.xoff), "xon": _threshold_dict(self.xon),
                "quanta": self.quanta, "alpha": self.alpha,
                "headroom": None if self.headroom is None else _threshold_dict(self.headroom),
                "response_ns": self.response_ns}


@dataclass(frozen=True)
class PrioritySpec:
    """Traffic classes: RoCE data on DSCP ``roce_dscp`` → priority ``roce``; CNPs
    (BTH opcode 0x81 or DSCP ``cnp_dscp``) → priority ``cnp``; anything else → 0."""

    roce_dscp: int = 26
    roce: int = 3
    cnp_dscp: int = 48
    cnp: int = 6

    def to_dict(self) -> dict[str, int]:
        return {"roce_dscp": self.roce_dscp, "roce": self.roce,
                "cnp_dscp": self.cnp_dscp, "cnp": self.cnp}


@dataclass(frozen=True)
class SwitchOverride:
    """Settings of one switch (``port`` None: all its ports) or one port.

    ``ecn`` and ``pfc`` hold only the keys the file gives (enabled, kmin,
    kmax, pmax; enabled, xoff, xon, quanta); priorities stay fabric-wide.
    """

    switch: str
    port: int | None = None
    buffer_bytes: int | None = None
    ecn: Mapping[str, Any] = field(default_factory=dict)
    pfc: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"switch": self.switch, "port": self.port}
        if self.buffer_bytes is not None:
            data["buffer_bytes"] = self.buffer_bytes
        for key, given in (("ecn", self.ecn), ("pfc", self.pfc)):
            if given:
                data[key] = {k: _threshold_dict(v) if isinstance(v, Threshold) else v
                             for k, v in given.items()}
        return data


@dataclass(frozen=True)
class PortSettings:
    """What one switch port ends up with after overrides."""

    buffer_bytes: int
    ecn: EcnSpec
    pfc: PfcSpec


@dataclass(frozen=True)
class SwitchSettings:
    """Defaults of every switch port, then overrides (switch-wide first, then per port)."""

    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    ecn: EcnSpec = field(default_factory=EcnSpec)
    pfc: PfcSpec = field(default_factory=PfcSpec)
    priorities: PrioritySpec = field(default_factory=PrioritySpec)
    overrides: tuple[SwitchOverride, ...] = ()
    # The shared buffer of each switch (0: sized from its ports) and the
    # dynamic threshold of the lossy queues per priority.
    pool_bytes: int = BufferSettings.pool_bytes
    alpha: tuple[float, ...] = BufferSettings().alpha

    def for_port(self, switch: str, port: int | None = None) -> PortSettings:
        """The settings of ``switch``'s port ``port`` (None: the switch-wide ones)."""
        settings = PortSettings(self.buffer_bytes, self.ecn, self.pfc)
        chosen = [o for o in self.overrides if o.switch == switch and o.port is None]
        if port is not None:
            chosen += [o for o in self.overrides if o.switch == switch and o.port == port]
        for override in chosen:
            settings = PortSettings(
                buffer_bytes=(settings.buffer_bytes if override.buffer_bytes is None
                              else override.buffer_bytes),
                ecn=replace(settings.ecn, **override.ecn),
                pfc=replace(settings.pfc, **override.pfc),
            )
        return settings

    def to_dict(self) -> dict[str, Any]:
        return {"buffer_bytes": self.buffer_bytes, "pool_bytes": self.pool_bytes,
                "alpha": list(self.alpha), "ecn": self.ecn.to_dict(),
                "pfc": self.pfc.to_dict(), "priorities": self.priorities.to_dict(),
                "overrides": [o.to_dict() for o in self.overrides]}


@dataclass(frozen=True)
class DcqcnSpec:
    """DCQCN (Zhu et al., SIGCOMM 2015) at the sender (RP) and receiver (NP).

    ``g``: weight of the α average; ``timer_ns``: rate-increase timer;
    ``alpha_timer_ns``: α decay period without CNPs; ``byte_counter_bytes``:
    bytes sent per rate-increase step; ``fast_recovery_steps``: F;
    ``rate_ai_bps``/``rate_hai_bps``: additive/hyper increase;
    ``min_rate_bps``: floor of a cut; ``cnp_interval_ns``: the receiver sends at
    most one CNP per flow per interval (min_time_between_cnps);
    ``clamp_target_rate``: set the target rate to the current one at every
    cut, as the paper does (false, ConnectX's default: only when a
    rate-increase timer stage passed since the previous cut).
    """

    enabled: bool = True
    g: float = 1 / 256
    rate_ai_bps: int = 5_000_000
    rate_hai_bps: int = 50_000_000
    min_rate_bps: int = 1_000_000
    timer_ns: int = 55_000
    alpha_timer_ns: int = 55_000
    byte_counter_bytes: int = 10_000_000
    fast_recovery_steps: int = 5
    cnp_interval_ns: int = 50_000
    clamp_target_rate: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class HostSettings:
    """The NIC agents of every GPU: path MTU (RoCE payload per packet) and DCQCN."""

    mtu_bytes: int = DEFAULT_MTU_BYTES
    dcqcn: DcqcnSpec = field(default_factory=DcqcnSpec)

    @property
    def frame_bytes(self) -> int:
        """A full-size RoCEv2 frame as switches count it: MTU + 58 bytes of headers."""
        return self.mtu_bytes + ROCE_FRAME_OVERHEAD_BYTES

    def to_dict(self) -> dict[str, Any]:
        return {"mtu_bytes": self.mtu_bytes, "frame_bytes": self.frame_bytes,
                "dcqcn": self.dcqcn.to_dict()}


@dataclass(frozen=True)
class FlowSpec:
    """One message of ``size_bytes`` (None: until stopped or the end) from
    ``src`` to ``dst``, striped over ``qps`` queue pairs.

    ``src``/``dst`` are where the bytes go from and to, whatever ``op``:
    ``write``/``send`` are posted by ``src``, ``read`` by ``dst``. ``dscp``
    follows from ``priority`` (the RoCE DSCP on the RoCE priority, 0 on 0).
    ``rate_bps`` caps the sender (None: line rate). ``generator`` is the id of
    the generator that made the flow (None: written as a flow).
    """

    id: str
    src: str
    dst: str
    size_bytes: int | None
    start_ns: int = 0
    priority: int = 3
    dscp: int = 26
    op: str = "write"
    qps: int = 1
    rate_bps: int | None = None
    generator: str | None = None

    @property
    def start_s(self) -> float:
        return self.start_ns / 1e9

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class GeneratorSpec:
    """A traffic pattern that :func:`expand_workload` turns into flows.

    ``kind`` picks what is used: ``incast`` (``senders`` → ``receiver``),
    ``permutation`` and ``all-to-all`` (among ``gpus``), ``pairs``
    (``pairs``); the storage and front-end kinds
    (:mod:`.storage_traffic`) are resolved to ``pairs`` of NICs. GPU lists are resolved names in topology order. The n-th
    flow made starts at ``start_ns + n * stagger_ns`` and is called
    ``{id}-{n}``.
    """

    kind: str
    id: str
    size_bytes: int | None
    start_ns: int = 0
    stagger_ns: int = 0
    priority: int = 3
    dscp: int = 26
    op: str = "write"
    qps: int = 1
    rate_bps: int | None = None
    senders: tuple[str, ...] = ()
    receiver: str | None = None
    gpus: tuple[str, ...] = ()
    pairs: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The keys of its kind only."""
        data = {f.name: getattr(self, f.name) for f in fields(self)
                if f.name not in ("senders", "receiver", "gpus", "pairs")}
        if self.kind == "incast":
            data["senders"] = list(self.senders)
            data["receiver"] = self.receiver
        elif self.kind in ("permutation", "all-to-all"):
            data["gpus"] = list(self.gpus)
        else:  # pairs, and the storage kinds resolved to pairs
            data["pairs"] = [list(pair) for pair in self.pairs]
        return data


@dataclass(frozen=True)
class CollectiveSpec:
    """A collective operation of one job, over ranks (GPUs) of the fabric;
    :mod:`emulator.scenario.collectives` turns it into flows and messages.

    ``rings`` holds the ranks in order, one tuple per channel (ring kinds:
    ``channels`` rings share the data; ``pipeline``: one, the stages;
    ``all-to-all``: one, the peers). ``placement`` says how the ranks were
    chosen (``as-listed`` for ``gpus``; ``rail-aligned``/``rail-unaware``
    for ``servers``). ``size_bytes`` is the nccl-tests size: the buffer
    reduced (all-reduce), gathered output (all-gather), input
    (reduce-scatter), each rank's send buffer (all-to-all), one
    microbatch's activations (pipeline), one request's KV cache
    (kv-handoff). ``algorithm`` (all-reduce): ``ring`` over all ranks, or
    ``hierarchical`` (reduce-scatter inside each scale-up domain, all-reduce
    across domains per local rank, all-gather inside).
    """

    kind: str
    id: str
    size_bytes: int
    rings: tuple[tuple[str, ...], ...] = ()
    start_ns: int = 0
    chunks: int = 1
    qps: int = 1
    pxn: bool = False
    placement: str = "as-listed"
    priority: int = 3
    dscp: int = 26
    op: str = "write"
    microbatches: int = 1
    compute_ns: int = 0
    prefill: tuple[str, ...] = ()
    decode: tuple[str, ...] = ()
    requests: int = 0
    interval_ns: int = 0
    algorithm: str = "ring"

    @property
    def channels(self) -> int:
        return len(self.rings)

    def to_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if self.algorithm == "ring":  # files written before the key stay as they were
            del data["algorithm"]
        data["rings"] = [list(ring) for ring in self.rings]
        data["prefill"], data["decode"] = list(self.prefill), list(self.decode)
        return data


@dataclass(frozen=True)
class EventSpec:
    """At ``at_ns``: take a link down or up, stop ``flow``, or start or stop
    a PFC storm from ``gpu``'s NIC.

    ``link`` holds the link's two ends in the topology's order: the GPU (of a
    host link) or the lower-tier switch first. A storm pauses ``priorities``
    (the scenario's PFC priorities once checked) for ``quanta`` at a time.
    """

    at_ns: int
    kind: str
    link: tuple[str, str] | None = None
    flow: str | None = None
    gpu: str | None = None
    priorities: tuple[int, ...] = ()
    quanta: int = DEFAULT_STORM_QUANTA

    @property
    def at_s(self) -> float:
        return self.at_ns / 1e9

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"at_ns": self.at_ns, "kind": self.kind,
                                "link": list(self.link) if self.link else None,
                                "flow": self.flow}
        if self.kind == "pfc_storm_start":
            data.update(gpu=self.gpu, priorities=list(self.priorities), quanta=self.quanta)
        elif self.kind == "pfc_storm_stop":
            data["gpu"] = self.gpu
        return data


@dataclass(frozen=True)
class CapturePoint:
    """A switch port (``port`` set) or a GPU's NIC (``node`` is the GPU, ``port`` None)."""

    node: str
    port: int | None = None

    def __str__(self) -> str:
        return self.node if self.port is None else f"{self.node}:{self.port}"


@dataclass(frozen=True)
class CaptureSpec:
    """Packet captures: one pcap per point, each stopping after ``max_packets``."""

    points: tuple[CapturePoint, ...] = ()
    max_packets: int = DEFAULT_MAX_PACKETS

    def to_dict(self) -> dict[str, Any]:
        return {"points": [str(point) for point in self.points],
                "max_packets": self.max_packets}


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "==": operator.eq, "!=": operator.ne, "<": operator.lt,
    "<=": operator.le, ">": operator.gt, ">=": operator.ge,
}


@dataclass(frozen=True)
class ExpectCheck:
    """``metric op value`` on results.json; ``metric`` is a dotted path whose
    parts are keys, list indexes, or the ``id`` of a list element
    (``collectives.ar.busbw_bps``)."""

    metric: str
    op: str
    value: float | int | bool | str
    description: str = ""

    def evaluate(self, results: Mapping[str, Any]) -> tuple[bool, object]:
        """Whether the check holds, and the value found (None if the metric
        is absent, which fails the check; so does comparing text with ``<``)."""
        found: object = results
        for part in self.metric.split("."):
            if isinstance(found, Mapping) and part in found:
                found = found[part]
            elif isinstance(found, list) and part.isdigit() and int(part) < len(found):
                found = found[int(part)]
            elif isinstance(found, list) and any(
                    isinstance(item, Mapping) and item.get("id") == part for item in found):
                found = next(item for item in found
                             if isinstance(item, Mapping) and item.get("id") == part)
            else:
                return False, None
        try:
            return bool(_COMPARE[self.op](found, self.value)), found
        except TypeError:
            return False, found

    def __str__(self) -> str:
        return f"{self.metric} {self.op} {self.value!r}"

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "op": self.op, "value": self.value,
                "description": self.description}


@dataclass(frozen=True)
class Scenario:
    """One experiment: a topology, switch and host settings, traffic, events,
    captures and expectations. Build it with :func:`load_scenario`."""

    name: str
    source: str
    topology: Topology = field(repr=False)
    topology_file: str | None  # None: written inline
    duration_ns: int
    description: str = ""
    expect: str = ""
    target: str = "builtin"
    seed: int = 0
    time_scale: float = 1
    switches: SwitchSettings = field(default_factory=SwitchSettings)
    hosts: HostSettings = field(default_factory=HostSettings)
    flows: tuple[FlowSpec, ...] = ()
    generators: tuple[GeneratorSpec, ...] = ()
    collectives: tuple[CollectiveSpec, ...] = ()
    jobs: tuple[JobSpec, ...] = ()
    events: tuple[EventSpec, ...] = ()
    capture: CaptureSpec = field(default_factory=CaptureSpec)
    expect_checks: tuple[ExpectCheck, ...] = ()
    # With time_scale != 1 a loaded scenario is the emulated one and this is
    # the scenario as written, in data-centre units (emulator.scenario.scale).
    written: Scenario | None = field(default=None, repr=False, compare=False)
    # On the virtual-time target (which runs data-centre units as written) the
    # file's time_scale, not applied; None elsewhere.
    ignored_time_scale: float | None = None
    # How time_scale was chosen: {"mode": "fixed" | "auto", "time_scale": k,
    # "budget": {...} (auto: the load and per-frame costs it came from,
    # emulator.budget.choose)}; None for a scenario not built by the loader.
    time_scale_choice: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    @property
    def duration_s(self) -> float:
        return self.duration_ns / 1e9

    def to_dict(self) -> dict[str, Any]:
        """The normalised scenario (``scenario check --json``), without the
        expanded flows (see :func:`expand_workload`); an emulated scenario
        adds ``written``, the same for the scenario as written."""
        return {
            "name": self.name,
            "source": self.source,
            "description": self.description,
            "expect": self.expect,
            "topology": {"file": self.topology_file, **self.topology.spec.to_dict()},
            "target": self.target,
            "duration_ns": self.duration_ns,
            "seed": self.seed,
            "time_scale": self.time_scale,
            "switches": self.switches.to_dict(),
            "hosts": self.hosts.to_dict(),
            "workload": {"flows": [f.to_dict() for f in self.flows],
                         "generators": [g.to_dict() for g in self.generators],
                         "collectives": [c.to_dict() for c in self.collectives],
                         "jobs": [j.to_dict() for j in self.jobs]},
            "events": [e.to_dict() for e in self.events],
            "capture": self.capture.to_dict(),
            "expect_checks": [c.to_dict() for c in self.expect_checks],
            **({"written": self.written.to_dict()} if self.written is not None else {}),
            **({"ignored_time_scale": self.ignored_time_scale}
               if self.ignored_time_scale is not None else {}),
        }


def _threshold_dict(threshold: Threshold) -> dict[str, int]:
    return {"bytes": threshold.amount} if threshold.unit == "bytes" else {"pkts": threshold.amount}


def stripes(size_bytes: int | None, qps: int) -> list[int | None]:
    """The bytes each of ``qps`` queue pairs carries (sums to ``size_bytes``)."""
    if size_bytes is None:
        return [None] * qps
    share, extra = divmod(size_bytes, qps)
    return [share + (1 if i < extra else 0) for i in range(qps)]

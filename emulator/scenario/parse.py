"""From a schema-checked scenario mapping to the typed spec of :mod:`.spec`.

Units are parsed here (sizes, durations, rates, thresholds) and every name
is looked up in the topology: GPU names and patterns, switch names and
ports, capture points, link ends. Keys the file leaves out take the
defaults of :mod:`.spec`; the ECN and PFC priorities default to the RoCE
priority. Checks across keys (thresholds against buffers, event order, flow
ids) come afterwards, in :mod:`.checks`.

GPU lists of generators (``senders``, ``gpus``) take names and shell-style
patterns (``srv*/gpu0``, ``srv[0-3]/gpu?``), matched against the
topology's GPUs and listed in topology order; a pattern must match at
least one GPU.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable, Mapping, Sequence, TypeVar

from emulator.scenario.apart import apart_groups
from emulator.scenario.errors import KeyPath, Where
from emulator.scenario.names import PatternError, is_pattern, matcher
from emulator.scenario.storage_traffic import STORAGE_KINDS, storage_pairs
from emulator.scenario.spec import (
    BEST_EFFORT_PRIORITY,
    DEFAULT_STORM_QUANTA,
    ROCE_MTUS,
    UNLIMITED,
    CapturePoint,
    CaptureSpec,
    DcqcnSpec,
    EcnSpec,
    EventSpec,
    ExpectCheck,
    FlowSpec,
    GeneratorSpec,
    HostSettings,
    PfcSpec,
    PrioritySpec,
    SwitchOverride,
    SwitchSettings,
)
from emulator.scenario.units import (
    DURATION_HINT,
    SIZE_HINT,
    THRESHOLD_HINT,
    parse_duration_ns,
    parse_size_bytes,
    parse_threshold,
)
from emulator.topology import Switch, Topology, TopologyError
from emulator.topology.units import RATE_HINT, parse_rate_bps

T = TypeVar("T")
Raw = Mapping[str, Any]
FLOW_SIZE_HINT = f"{SIZE_HINT}; or {UNLIMITED} to send until stopped"


class Context:
    """What parsing needs: where errors point and the topology names resolve in."""

    def __init__(self, where: Where, topology: Topology, target: str = "builtin") -> None:
        self.where = where
        self.topology = topology
        # the groups generators pair GPUs across (servers; each GPU with a scale-up tier)
        self.apart = apart_groups(topology, target)

    def unit(self, parse: Callable[[object], T], value: object, path: KeyPath, hint: str) -> T:
        try:
            return parse(value)
        except ValueError as exc:
            raise self.where.error(path, f"{exc}; {hint}") from None

    def gpu(self, name: str, path: KeyPath) -> str:
        """A GPU name (no pattern) that exists."""
        if is_pattern(name):
            raise self.where.error(path, f"{name!r} is a pattern; name one GPU (e.g. srv0/gpu0)")
        try:
            return self.topology.gpu(name).name
        except TopologyError as exc:
            raise self.where.error(path, str(exc)) from None

    def gpus(self, names: Sequence[str], path: KeyPath) -> tuple[list[str], set[str]]:
        """GPU names and patterns → (names in topology order, names matched by patterns only)."""
        named: set[str] = set()
        matched: set[str] = set()
        for index, name in enumerate(names):
            if not is_pattern(name):
                named.add(self.gpu(name, [*path, index]))
                continue
            match = self.pattern(name, [*path, index])
            hits = {gpu.name for gpu in self.topology.gpus if match(gpu.name)}
            if not hits:
                first, last = self.topology.gpus[0].name, self.topology.gpus[-1].name
                raise self.where.error([*path, index], (
                    f"pattern {name!r} matches no GPU of topology {self.topology.name} "
                    f"(its GPUs are {first} .. {last})"))
            matched |= hits
        order = [gpu.name for gpu in self.topology.gpus if gpu.name in named | matched]
        return order, matched - named

    def pattern(self, name: str, path: KeyPath) -> Callable[[str], bool]:
        """The test of names against pattern ``name`` (see :mod:`.names`)."""
        try:
            return matcher(name)
        except PatternError as exc:
            raise self.where.error(path, str(exc)) from None

    def switch(self, name: str, path: KeyPath) -> Switch:
        try:
            return self.topology.switch(name)
        except TopologyError:
            raise self.where.error(path, f"unknown switch {name!r} in topology "
                                         f"{self.topology.name}; {_names(self.topology)}") from None

    def port(self, switch: Switch, number: int, path: KeyPath) -> int:
        if not 1 <= number <= len(switch.ports):
            raise self.where.error(path, f"switch {switch.name} has ports 1..{len(switch.ports)}, "
                                         f"not {number}")
        return number


def _names(topology: Topology) -> str:
    names = [switch.name for switch in topology.switches]
    shown = ", ".join(names) if len(names) <= 12 else (
        ", ".join(names[:6]) + ", ..., " + ", ".join(names[-3:]))
    return f"its switches are {shown}"


def _size(ctx: Context, value: object, path: KeyPath, positive: bool = False,
          hint: str = SIZE_HINT) -> int:
    size_bytes = ctx.unit(parse_size_bytes, value, path, hint)
    if positive and size_bytes == 0:
        raise ctx.where.error(path, f"{value!r} is not a size > 0; {hint}")
    return size_bytes


def duration(ctx: Context, value: object, path: KeyPath, positive: bool = False) -> int:
    duration_ns = ctx.unit(parse_duration_ns, value, path, DURATION_HINT)
    if positive and duration_ns == 0:
        raise ctx.where.error(path, f"{value!r} is not a duration > 0; {DURATION_HINT}")
    return duration_ns


def _rate(ctx: Context, value: object, path: KeyPath) -> int:
    return ctx.unit(parse_rate_bps, value, path, RATE_HINT)


def _ecn_keys(ctx: Context, raw: Raw, path: KeyPath) -> dict[str, Any]:
    """The ECN keys ``raw`` gives, parsed (no priorities)."""
    given: dict[str, Any] = {}
    for key in ("enabled", "pmax"):
        if key in raw:
            given[key] = raw[key]
    for key in ("kmin", "kmax"):
        if key in raw:
            given[key] = ctx.unit(parse_threshold, raw[key], [*path, key], THRESHOLD_HINT)
    return given


def _pfc_keys(ctx: Context, raw: Raw, path: KeyPath) -> dict[str, Any]:
    """The PFC keys ``raw`` gives, parsed (no priorities)."""
    given: dict[str, Any] = {key: raw[key] for key in ("enabled", "quanta", "alpha")
                             if key in raw}
    for key in ("xoff", "xon"):
        if key in raw:
            given[key] = ctx.unit(parse_threshold, raw[key], [*path, key], THRESHOLD_HINT)
    if "headroom" in raw:
        value = raw["headroom"]
        given["headroom"] = None if value == "auto" else ctx.unit(
            parse_threshold, value, [*path, "headroom"], f"auto, or {THRESHOLD_HINT}")
    return given


def switch_settings(ctx: Context, raw: Raw) -> SwitchSettings:
    path = ["switches"]
    priorities = PrioritySpec(**raw.get("priorities", {}))
    ecn_raw, pfc_raw = raw.get("ecn", {}), raw.get("pfc", {})
    ecn = EcnSpec(**_ecn_keys(ctx, ecn_raw, [*path, "ecn"]),
                  priorities=tuple(ecn_raw.get("priorities", [priorities.roce])))
    pfc = PfcSpec(**_pfc_keys(ctx, pfc_raw, [*path, "pfc"]),
                  priorities=tuple(pfc_raw.get("priorities", [priorities.roce])),
                  response_ns=(duration(ctx, pfc_raw["response"], [*path, "pfc", "response"])
                               if "response" in pfc_raw else 0))
    pool_raw = raw.get("pool", {})
    pool_bytes = SwitchSettings.pool_bytes
    if pool_raw.get("size", "auto") != "auto":
        pool_bytes = _size(ctx, pool_raw["size"], [*path, "pool", "size"], positive=True,
                           hint=f"auto, or {SIZE_HINT}")
    alpha = list(SwitchSettings.alpha)
    given_alpha = pool_raw.get("alpha")
    if isinstance(given_alpha, (int, float)):
        alpha = [float(given_alpha)] * len(alpha)
    elif isinstance(given_alpha, dict):
        for key, value in given_alpha.items():
            prio = int(key) if str(key).isdigit() else -1
            if not 0 <= prio < len(alpha):
                raise ctx.where.error([*path, "pool", "alpha", key],
                                      f"{key!r} is not a priority; write 0 to 7")
            alpha[prio] = float(value)
    buffer_bytes = (_size(ctx, raw["buffer"], [*path, "buffer"], positive=True)
                    if "buffer" in raw else SwitchSettings.buffer_bytes)
    overrides = []
    for index, item in enumerate(raw.get("overrides", [])):
        where = [*path, "overrides", index]
        switch = ctx.switch(item["switch"], [*where, "switch"])
        port = ctx.port(switch, item["port"], [*where, "port"]) if "port" in item else None
        if not {"buffer", "ecn", "pfc"} & set(item):
            raise ctx.where.error(where, "sets nothing; an override takes buffer, ecn or pfc "
                                         "besides switch and port")
        overrides.append(SwitchOverride(
            switch=switch.name, port=port,
            buffer_bytes=(_size(ctx, item["buffer"], [*where, "buffer"], positive=True)
                          if "buffer" in item else None),
            ecn=_ecn_keys(ctx, item.get("ecn", {}), [*where, "ecn"]),
            pfc=_pfc_keys(ctx, item.get("pfc", {}), [*where, "pfc"]),
        ))
    if pfc_raw.get("dci", "lossless") == "lossy":
        overrides = _dci_lossy(ctx, overrides, [*path, "pfc", "dci"])
    return SwitchSettings(buffer_bytes=buffer_bytes, ecn=ecn, pfc=pfc, priorities=priorities,
                          overrides=tuple(overrides), pool_bytes=pool_bytes, alpha=tuple(alpha))


def _dci_lossy(ctx: Context, overrides: list[SwitchOverride],
               path: KeyPath) -> list[SwitchOverride]:
    """``switches.pfc.dci: lossy``: PFC off on both ends of every DCI link (the
    class keeps ECN there and pauses nothing over the distance), merged into
    the file's overrides of those ports; one that turns PFC on there is an
    error."""
    ends = [(link.node_a, link.port_a) for link in ctx.topology.links if link.network == "dci"]
    ends += [(link.node_b, link.port_b) for link in ctx.topology.links if link.network == "dci"]
    if not ends:
        raise ctx.where.error(path, "lossy: the topology has no DCI links (give it a 'sites' "
                                    "key) to make the class lossy on")
    out = list(overrides)
    for switch, port in sorted(ends):
        index = next((i for i, o in enumerate(out) if (o.switch, o.port) == (switch, port)),
                     None)
        if index is None:
            out.append(SwitchOverride(switch=switch, port=port, pfc={"enabled": False}))
            continue
        given = out[index]
        if given.pfc.get("enabled") is True:
            raise ctx.where.error(["switches", "overrides", index, "pfc", "enabled"], (
                f"true turns PFC on at DCI port {switch}:{port}, which switches.pfc.dci: "
                "lossy turns off; drop one of them"))
        out[index] = replace(given, pfc={**given.pfc, "enabled": False})
    return out


def host_settings(ctx: Context, raw: Raw) -> HostSettings:
    mtu_bytes = HostSettings.mtu_bytes
    if "mtu" in raw:
        mtu_bytes = _size(ctx, raw["mtu"], ["hosts", "mtu"])
        if mtu_bytes not in ROCE_MTUS:
            written = str(raw["mtu"])
            shown = written if written == str(mtu_bytes) else f"{written!r} ({mtu_bytes} bytes)"
            decimal = (" (KB, MB are powers of 1000: write 1024B or 1KiB)"
                       if "KB" in written or "kB" in written else "")
            raise ctx.where.error(["hosts", "mtu"], (
                f"{shown} is not a RoCE path MTU; use "
                + ", ".join(f"{mtu}B" for mtu in ROCE_MTUS[:-1]) + f" or {ROCE_MTUS[-1]}B"
                + decimal))
    given: dict[str, Any] = {}
    dcqcn = raw.get("dcqcn", {})
    path = ["hosts", "dcqcn"]
    for key in ("enabled", "g", "fast_recovery_steps", "clamp_target_rate"):
        if key in dcqcn:
            given[key] = dcqcn[key]
    for key in ("rate_ai", "rate_hai", "min_rate"):
        if key in dcqcn:
            given[f"{key}_bps"] = _rate(ctx, dcqcn[key], [*path, key])
    for key in ("timer", "alpha_timer", "cnp_interval"):
        if key in dcqcn:
            given[f"{key}_ns"] = duration(ctx, dcqcn[key], [*path, key], positive=True)
    if "byte_counter" in dcqcn:
        given["byte_counter_bytes"] = _size(ctx, dcqcn["byte_counter"], [*path, "byte_counter"],
                                           positive=True)
    return HostSettings(mtu_bytes=mtu_bytes, dcqcn=DcqcnSpec(**given))


def _traffic(ctx: Context, raw: Raw, path: KeyPath, priorities: PrioritySpec) -> dict[str, Any]:
    """The keys flows and generators share: size, start, priority (and DSCP), op, qps, rate."""
    size = raw["size"]
    size_bytes = (None if size == UNLIMITED
                  else _size(ctx, size, [*path, "size"], positive=True, hint=FLOW_SIZE_HINT))
    priority = raw.get("priority", priorities.roce)
    if priority not in (priorities.roce, BEST_EFFORT_PRIORITY):
        raise ctx.where.error([*path, "priority"], (
            f"{priority} is not a traffic class of this fabric; the switches put DSCP "
            f"{priorities.roce_dscp} on the RoCE priority {priorities.roce} and everything else "
            f"on {BEST_EFFORT_PRIORITY}; use {priorities.roce} or {BEST_EFFORT_PRIORITY}"))
    return {
        "size_bytes": size_bytes,
        "start_ns": duration(ctx, raw["start"], [*path, "start"]) if "start" in raw else 0,
        "priority": priority,
        "dscp": priorities.roce_dscp if priority == priorities.roce else 0,
        "op": raw.get("op", "write"),
        "qps": raw.get("qps", 1),
        "rate_bps": _rate(ctx, raw["rate"], [*path, "rate"]) if "rate" in raw else None,
    }


def flows(ctx: Context, raw: Sequence[Raw], priorities: PrioritySpec) -> tuple[FlowSpec, ...]:
    found = []
    for index, item in enumerate(raw):
        path = ["workload", "flows", index]
        found.append(FlowSpec(
            id=item["id"], src=ctx.gpu(item["src"], [*path, "src"]),
            dst=ctx.gpu(item["dst"], [*path, "dst"]), **_traffic(ctx, item, path, priorities)))
    return tuple(found)


def generators(ctx: Context, raw: Sequence[Raw],
               priorities: PrioritySpec) -> tuple[GeneratorSpec, ...]:
    found = []
    for index, item in enumerate(raw):
        path = ["workload", "generators", index]
        kind = item["kind"]
        parts: dict[str, Any] = _traffic(ctx, item, path, priorities)
        if "stagger" in item:
            parts["stagger_ns"] = duration(ctx, item["stagger"], [*path, "stagger"])
        if kind == "incast":
            receiver = ctx.gpu(item["receiver"], [*path, "receiver"])
            senders, by_pattern = ctx.gpus(item["senders"], [*path, "senders"])
            # Patterns skip the receiver's server: those GPUs reach it in zero
            # time (with a scale-up tier they are kept: they send over it,
            # apart.py). Named senders are kept (and refused by the checks).
            parts["senders"] = tuple(
                gpu for gpu in senders
                if gpu not in by_pattern or ctx.apart[gpu] != ctx.apart[receiver])
            parts["receiver"] = receiver
        elif kind in STORAGE_KINDS:
            gpus = (ctx.gpus(item["gpus"], [*path, "gpus"])[0] if "gpus" in item
                    else [gpu.name for gpu in ctx.topology.gpus])
            try:
                pairs, parts["size_bytes"] = storage_pairs(
                    kind, ctx.topology, gpus, parts["size_bytes"], item.get("stripe"))
            except ValueError as exc:
                raise ctx.where.error(path, str(exc)) from None
            parts["pairs"] = tuple(pairs)
        elif kind in ("permutation", "all-to-all"):
            if "gpus" in item:
                parts["gpus"] = tuple(ctx.gpus(item["gpus"], [*path, "gpus"])[0])
            else:
                parts["gpus"] = tuple(gpu.name for gpu in ctx.topology.gpus)
        else:
            parts["pairs"] = tuple(
                (ctx.gpu(src, [*path, "pairs", n, 0]), ctx.gpu(dst, [*path, "pairs", n, 1]))
                for n, (src, dst) in enumerate(item["pairs"]))
        found.append(GeneratorSpec(kind=kind, id=item.get("id", f"g{index}"), **parts))
    return tuple(found)


def _link(ctx: Context, ends: Sequence[str], path: KeyPath) -> tuple[str, str]:
    a, b = ends
    for link in ctx.topology.links:
        end_a = link.gpu if link.gpu is not None else link.node_a
        if {a, b} == {end_a, link.node_b}:
            return (end_a, link.node_b)
    for index, name in enumerate(ends):
        if "/" in name:
            ctx.gpu(name, [*path, index])
        else:
            ctx.switch(name, [*path, index])
    neighbours = sorted(str(n) for n in ctx.topology.graph.neighbors(a))
    raise ctx.where.error(path, f"no link between {a} and {b} in topology "
                                f"{ctx.topology.name}; {a} links to {', '.join(neighbours)}")


def events(ctx: Context, raw: Sequence[Raw]) -> tuple[EventSpec, ...]:
    """Events in file order (:mod:`.checks` orders them by time)."""
    found = []
    for index, item in enumerate(raw):
        path = ["events", index]
        at_ns = duration(ctx, item["at"], [*path, "at"])
        link = _link(ctx, item["link"], [*path, "link"]) if "link" in item else None
        storm: dict[str, Any] = {}
        if "gpu" in item:  # a PFC storm; checks fill in the default priorities
            storm["gpu"] = ctx.gpu(item["gpu"], [*path, "gpu"])
            storm["priorities"] = tuple(sorted(item.get("priorities", ())))
            storm["quanta"] = item.get("quanta", DEFAULT_STORM_QUANTA)
        found.append(EventSpec(at_ns=at_ns, kind=item["kind"], link=link, flow=item.get("flow"),
                               **storm))
    return tuple(found)


def capture(ctx: Context, raw: Raw | None) -> CaptureSpec:
    """Capture points in the order given, ``SWITCH:*`` as every port, repeats once."""
    if raw is None:
        return CaptureSpec()
    points: list[CapturePoint] = []
    for index, text in enumerate(raw["ports"]):
        path = ["capture", "ports", index]
        name, sep, port_text = text.rpartition(":")
        if not sep:
            if "/" not in text:
                raise ctx.where.error(path, (
                    f"{text!r} is not a capture point; use SWITCH:PORT (e.g. leaf-r0-0:1), "
                    f"SWITCH:* for every port, or a GPU name (e.g. srv3/gpu0)"))
            found = [CapturePoint(ctx.gpu(text, path))]
        else:
            switch = ctx.switch(name, path)
            if port_text == "*":
                found = [CapturePoint(switch.name, port.number) for port in switch.ports]
            elif port_text.isdigit():
                found = [CapturePoint(switch.name, ctx.port(switch, int(port_text), path))]
            else:
                raise ctx.where.error(path, f"port {port_text!r} of {text!r} is not a number; "
                                            f"use SWITCH:PORT (e.g. {switch.name}:1) or "
                                            f"{switch.name}:*")
        points.extend(point for point in found if point not in points)
    return CaptureSpec(points=tuple(points), max_packets=raw.get("max_packets",
                                                                 CaptureSpec.max_packets))


def expect_checks(ctx: Context, raw: Sequence[Raw]) -> tuple[ExpectCheck, ...]:
    found = []
    for index, item in enumerate(raw):
        value = item["value"]
        if item["op"] not in ("==", "!=") and (isinstance(value, (bool, str))):
            shown = repr(value) if isinstance(value, str) else str(value).lower()
            raise ctx.where.error(["expect_checks", index, "value"], (
                f"{shown} is not a number; op {item['op']!r} compares numbers "
                f"(use == or != for true, false or text)"))
        found.append(ExpectCheck(metric=item["metric"], op=item["op"], value=value,
                                 description=item.get("description", "")))
    return tuple(found)

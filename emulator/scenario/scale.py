"""``time_scale``: a scenario written in data-centre units, emulated slower.

A scenario may be written as the fabric really is (400 Gb/s links, µs
delays, DCQCN timers in µs) with one ``time_scale`` k ≥ 1: the emulation
then runs k times slower than written, which keeps every ratio of the
written network (bandwidth-delay products, queue drain times against
timers) while bringing the rates down to what Python switches here can
carry (:data:`COMFORTABLE_RATE_BPS`). :func:`emulated` is the one place
that applies it, right after a scenario is parsed and checked (the loader
calls it); the runner and the NIC agents see only its result:

==============================  =====================================================
quantity                        emulated value
==============================  =====================================================
rates (``*_bps``): link rates   written ÷ k
(every network's, the scale-up
rate),
DCQCN rate_ai, rate_hai,
min_rate, flow/generator caps
times (``*_ns``): link delays,  written × k
duration, flow/generator
start and stagger, collective
start/compute/interval, event
times, DCQCN timer,
alpha_timer, cnp_interval
bytes: sizes, buffers, ECN and  unchanged
PFC thresholds, MTU, DCQCN
byte_counter
PFC quanta                      unchanged: quanta are 512 bit-times of the link,
                                so a slower link makes them last k times longer
==============================  =====================================================

The rule is by unit suffix, so it covers every field of the typed spec
(:mod:`.spec`) that carries ``_ns`` or ``_bps``. One exception: a
``hosts.dcqcn`` left entirely at its defaults is not scaled, so the NIC
agent keeps its own defaults, which are already sized for the emulated
line rate (:func:`emulation_warnings` says so when k ≠ 1).

``time_scale: auto`` picks the least slowdown at which this machine keeps
up with the load the scenario will offer: frames per second at each switch
and NIC agent (from its flows, generators and collectives, :mod:`.load`)
against what a frame costs here (:mod:`emulator.budget.calibrate`,
measured once and cached), by the bounds of :mod:`emulator.budget.choose`
(:func:`choose_time_scale`); :func:`with_choice` applies it and records
the choice and its budget (``Scenario.time_scale_choice``).
:func:`auto_time_scale` (the smallest power of ten that brings the fastest
link down to :data:`COMFORTABLE_RATE_BPS`) is only what the warnings
suggest without a calibration. An emulated link faster than
:data:`MAX_EMULATED_RATE_BPS` is an error naming ``time_scale`` and a value
that works; faster than :data:`COMFORTABLE_RATE_BPS` is a warning.

The emulated scenario keeps the written one in ``Scenario.written`` for
reporting; results (:func:`to_dc`) carry both units: every known ``*_s``
field gets a ``*_dc_s`` twin (÷ k) and every ``*_bps`` one a ``*_dc_bps``
twin (× k), by the table :data:`DC_FIELDS`, and every ``paused_s`` under
``switches`` and ``hosts`` (per switch, port and priority; per host and
NIC) a ``paused_dc_s`` (:data:`DC_NESTED`). A run whose time scale was
chosen by ``auto`` carries the twins even when k came out 1, so its
checks can be written in data-centre units whatever this machine chose.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any, MutableMapping, TypeVar

from emulator.budget import calibrate
from emulator.budget.calibrate import Calibration
from emulator.budget.choose import choose
from emulator.scenario.errors import Where
from emulator.scenario.load import offered_load
from emulator.scenario.spec import DcqcnSpec, HostSettings, Scenario
from emulator.topology import Topology, build_topology
from emulator.topology.spec import LinkSpec, TopologySpec
from emulator.topology.units import format_rate

# What this machine can emulate: the built-in Python switch forwards about
# 30 k packets/s per switch, ~100 Mb/s of 1 KB frames per port at ease; above
# 1 Gb/s no Python data plane here keeps up at all (raw AF_PACKET I/O tops
# out near 200 k packets/s per core).
COMFORTABLE_RATE_BPS = 100_000_000
MAX_EMULATED_RATE_BPS = 1_000_000_000
AUTO = "auto"

# results.json fields that get a data-centre twin: section -> field names
# ("" = the top level; a list section converts each of its entries).
DC_FIELDS: dict[str, tuple[str, ...]] = {
    "": ("duration_s", "scheduled_duration_s"),
    "totals": ("max_fct_s", "paused_s", "switch_paused_s", "host_paused_s"),
    "flows": ("fct_s", "goodput_bps", "min_rate_bps"),
    "links": ("rate_bps",),
    "collectives": ("time_s", "algbw_bps", "busbw_bps", "latency_p50_s", "latency_p99_s",
                    "latency_max_s"),
}

# Sections whose nested mappings, at any depth, get twins of these fields.
DC_NESTED: dict[str, tuple[str, ...]] = {
    "switches": ("paused_s",), "hosts": ("paused_s",),
    # a job's means (exposed_mean_s: one figure per kind), its collectives,
    # transfers and serving figures
    "jobs": ("iteration_mean_s", "iteration_p99_s", "compute_mean_s", "exposed_mean_s",
             "time_s", "algbw_bps", "busbw_bps", "mean_s", "max_s",
             "ttft_p50_s", "ttft_p99_s", "ttft_mean_s", "tpot_p50_s", "tpot_p99_s",
             "tpot_mean_s", "kv_handoff_p50_s", "kv_handoff_p99_s", "kv_handoff_mean_s",
             # serving.kv_offload
             "offload_p50_s", "offload_p99_s", "offload_mean_s", "fetch_p50_s", "fetch_p99_s",
             "fetch_mean_s", "hbm_wait_p50_s", "hbm_wait_p99_s", "hbm_wait_mean_s"),
}

T = TypeVar("T")


# -- the scale itself ------------------------------------------------------------------

def _link_classes(spec: TopologySpec) -> list[LinkSpec]:
    """Every class of links a live run builds: host, fabric, DCI, front-end and storage."""
    links = [spec.host_link, spec.fabric_link]
    if spec.sites is not None:
        links.append(spec.sites.dci_link)
    for side in (spec.front_end, spec.storage):
        if side is not None:
            links += [side.link, side.fabric_link]
    return links


def fastest_link_bps(topology: Topology) -> int:
    """The rate of the fastest class of links a live run builds (host, fabric,
    DCI, front-end, storage; a live run builds no scale-up tier)."""
    return max(link.rate_bps for link in _link_classes(topology.spec))


def scaled_spec(spec: TopologySpec, k: float) -> TopologySpec:
    """``spec`` k times slower: every class of links (:func:`_link_classes`)
    and the scale-up rate and hop (a DCI's distance becomes its delay)."""
    changes: dict[str, Any] = {"host_link": _scaled(spec.host_link, k),
                               "fabric_link": _scaled(spec.fabric_link, k)}
    if spec.sites is not None:
        changes["sites"] = replace(spec.sites, dci_link=_scaled(spec.sites.dci_link, k),
                                   distance_m=None)
    for name in ("front_end", "storage"):
        side = getattr(spec, name)
        if side is not None:
            changes[name] = replace(side, link=_scaled(side.link, k),
                                    fabric_link=_scaled(side.fabric_link, k))
    if spec.scale_up is not None:
        changes["scale_up"] = _scaled(spec.scale_up, k)
    return replace(spec, **changes)


def auto_time_scale(fastest_bps: float) -> int:
    """The smallest power of ten that brings ``fastest_bps`` down to at most
    :data:`COMFORTABLE_RATE_BPS` (1 when it already is)."""
    k = 1
    while fastest_bps / k > COMFORTABLE_RATE_BPS:
        k *= 10
    return k


def resolve_time_scale(value: float | str, topology: Topology) -> float:
    """The number a schema-checked ``time_scale`` stands for (``auto`` resolved)."""
    if value == AUTO:
        return auto_time_scale(fastest_link_bps(topology))
    return value  # type: ignore[return-value]  # the schema let only numbers >= 1 through


def with_choice(scenario: Scenario, raw: float | str | None) -> Scenario:
    """``scenario`` (checked, not yet emulated) with its time scale chosen:
    ``raw`` as the file (or ``--time-scale``) gave it; ``auto`` is decided
    by :func:`emulator.budget.choose.choose` on this machine."""
    if raw != AUTO:
        k = scenario.time_scale
        return replace(scenario, time_scale_choice={"mode": "fixed", "time_scale": k})
    k, budget = choose_time_scale(scenario, calibrate.calibration())
    return replace(scenario, time_scale=k,
                   time_scale_choice={"mode": "auto", "time_scale": k, "budget": budget})


def choose_time_scale(written: Scenario, cal: Calibration, *, cores: int | None = None,
                      load1: float | None = None) -> tuple[int, dict[str, Any]]:
    """(k, budget) for ``written`` (a scenario in its own units, time scale
    not applied) at the per-frame costs ``cal``: the load it offers and its
    fastest link, by the bounds of :func:`emulator.budget.choose.choose`."""
    return choose(offered_load(written), fastest_link_bps(written.topology), cal,
                  MAX_EMULATED_RATE_BPS, cores=cores, load1=load1)


def _scaled(obj: T, k: float) -> T:
    """``obj`` (a frozen dataclass) with every ``*_ns`` field × k and every
    ``*_bps`` field ÷ k (None stays None; rates stay at least 1 bps)."""
    changes: dict[str, Any] = {}
    for f in fields(obj):  # type: ignore[arg-type]
        value = getattr(obj, f.name)
        if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        if f.name.endswith("_ns"):
            changes[f.name] = round(value * k)
        elif f.name.endswith("_bps"):
            changes[f.name] = max(1, round(value / k))
    return replace(obj, **changes)  # type: ignore[type-var]


def _keeps_defaults(dcqcn: DcqcnSpec) -> bool:
    default = DcqcnSpec()
    return all(getattr(dcqcn, f.name) == getattr(default, f.name)
               for f in fields(dcqcn) if f.name != "enabled")


def check_rates(written: Scenario, where: Where | None = None) -> None:
    """Raise when the emulated links would be faster than this machine can go."""
    k = written.time_scale
    fastest = fastest_link_bps(written.topology)
    if fastest / k <= MAX_EMULATED_RATE_BPS:
        return
    suggest = auto_time_scale(fastest)
    where = where or Where(written.source)
    raise where.error(["time_scale"], (
        f"links of {format_rate(fastest)} would be emulated at "
        f"{format_rate(round(fastest / k))} with time_scale {k:g}, above the "
        f"{format_rate(MAX_EMULATED_RATE_BPS)} this machine can emulate; use time_scale: "
        f"{suggest} (links at {format_rate(round(fastest / suggest))}) or time_scale: {AUTO}"))


def emulated(written: Scenario, where: Where | None = None) -> Scenario:
    """The scenario as it runs: ``written`` slowed ``time_scale`` times (see
    the module docstring), with ``written`` kept in ``.written``. With
    ``time_scale`` 1 (or already emulated) it is ``written`` itself. Raises :class:`ScenarioError`
    (naming ``time_scale``) when a link would be too fast to emulate."""
    if written.written is not None:  # already emulated
        return written
    check_rates(written, where)
    k = written.time_scale
    if k == 1:
        return written
    spec = written.topology.spec
    topology = build_topology(scaled_spec(spec, k))
    dcqcn = written.hosts.dcqcn
    hosts: HostSettings = (written.hosts if _keeps_defaults(dcqcn)
                           else replace(written.hosts, dcqcn=_scaled(dcqcn, k)))
    return replace(
        _scaled(written, k),
        topology=topology,
        hosts=hosts,
        flows=tuple(_scaled(flow, k) for flow in written.flows),
        generators=tuple(_scaled(generator, k) for generator in written.generators),
        collectives=tuple(_scaled(collective, k) for collective in written.collectives),
        jobs=tuple(replace(_scaled(job, k), compute_scale=job.compute_scale * k)
                   for job in written.jobs),
        events=tuple(_scaled(event, k) for event in written.events),
        written=written,
    )


def native(scenario: Scenario) -> Scenario:
    """The scenario as the virtual-time target runs it: as written, whatever
    its rates (no machine limit applies to simulated time), ``time_scale``
    recorded as 1 and the file's value kept in ``ignored_time_scale``."""
    written = written_of(scenario)
    if written.time_scale == 1 and written.target == "sim":
        return written
    return replace(written, time_scale=1, target="sim",
                   ignored_time_scale=None if written.time_scale == 1 else written.time_scale)


def written_of(scenario: Scenario) -> Scenario:
    """The scenario as its file wrote it (itself when not time-scaled)."""
    return scenario.written or scenario


def emulation_warnings(scenario: Scenario) -> list[str]:
    """What may make an emulated scenario less faithful (one line each)."""
    notes = []
    k = scenario.time_scale
    written = written_of(scenario)
    fastest = fastest_link_bps(written.topology)
    if fastest / k > COMFORTABLE_RATE_BPS:
        suggest = auto_time_scale(fastest)
        notes.append(
            f"links are emulated at {format_rate(round(fastest / k))} (time_scale {k:g}), "
            f"above the {format_rate(COMFORTABLE_RATE_BPS)} a Python switch here carries at "
            f"ease: queues may build from the emulator, not the fabric; time_scale: {suggest} "
            f"brings them to {format_rate(round(fastest / suggest))}")
    dcqcn = written.hosts.dcqcn
    if k != 1 and dcqcn.enabled and _keeps_defaults(dcqcn):
        notes.append(
            f"hosts.dcqcn keeps the NIC agent's defaults, sized for the emulated line rate and "
            f"not scaled by time_scale {k:g}; write hosts.dcqcn in data-centre units to have "
            f"it scaled with the rest")
    return notes


# -- results in data-centre units ------------------------------------------------------

def dc_name(name: str) -> str:
    """``fct_s`` -> ``fct_dc_s``; ``goodput_bps`` -> ``goodput_dc_bps``."""
    stem, _, unit = name.rpartition("_")
    return f"{stem}_dc_{unit}"


def dc_value(name: str, value: float | None, k: float) -> float | None:
    """An emulated ``*_s`` (÷ k) or ``*_bps`` (× k) value in data-centre units."""
    if value is None:
        return None
    if name.endswith("_bps"):
        return round(value * k, 1)
    if name.endswith("_s"):
        return round(value / k, 12)
    raise ValueError(f"{name}: only *_s and *_bps fields have data-centre units")


def _add_dc(entry: MutableMapping[str, Any], names: tuple[str, ...], k: float) -> None:
    for name in names:
        if name in entry:
            value = entry[name]
            entry[dc_name(name)] = ({key: dc_value(name, v, k) for key, v in value.items()}
                                    if isinstance(value, MutableMapping)
                                    else dc_value(name, value, k))


def to_dc(results: MutableMapping[str, Any], k: float, *,
          native: bool = False) -> MutableMapping[str, Any]:
    """Add the data-centre twin of every :data:`DC_FIELDS` field present in
    ``results`` (in place; returned for convenience). Sections or fields
    that are absent are skipped, so it may run before or after a section
    (``collectives``) is added; with k = 1 it adds nothing, unless the run
    is ``native`` (virtual time: its figures are data-centre figures, and
    the twins, equal to them, let one set of checks read either kind of run)."""
    if k == 1 and not native:
        return results
    for section, names in DC_FIELDS.items():
        part = results if not section else results.get(section)
        if isinstance(part, MutableMapping):
            _add_dc(part, names, k)
        elif isinstance(part, list):
            for entry in part:
                if isinstance(entry, MutableMapping):
                    _add_dc(entry, names, k)
    for section, names in DC_NESTED.items():
        _add_dc_nested(results.get(section), names, k)
    return results


def _add_dc_nested(part: Any, names: tuple[str, ...], k: float) -> None:
    if isinstance(part, MutableMapping):
        _add_dc(part, names, k)
        for value in list(part.values()):
            _add_dc_nested(value, names, k)
    elif isinstance(part, list):
        for value in part:
            _add_dc_nested(value, names, k)

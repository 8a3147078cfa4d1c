"""``aifabric scenario``: check scenario files, and write one from htsim's
connection matrix.

- ``scenario check FILE [--json] [--target builtin|bmv2]``: validate a
  scenario against its topology and print a summary (topology, switch and
  host settings, flows after expanding generators, events, captures,
  expectations); ``--json`` prints the normalised scenario with every flow.
  With ``time_scale`` != 1 the summary is the scenario as written, plus
  what it becomes when emulated (``--json``: under ``emulated``); warnings
  (:func:`emulator.scenario.scale.emulation_warnings`) go to stderr.
- ``scenario from-htsim FILE.cm --topology TOPO.yaml -o OUT.yaml
  [--start-unit ps|ns|us] [--name N] [--duration D] [--force]``: write a
  scenario running htsim's connection matrix over that topology
  (:mod:`emulator.scenario.htsim`), checked by loading it before it is
  written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from pathlib import Path

from emulator.scenario import Scenario, expand_workload, load_scenario, scale
from emulator.scenario.errors import ScenarioError
from emulator.scenario.htsim import START_UNITS_NS, scenario_text
from emulator.scenario.schema import TARGETS
from emulator.scenario.spec import EcnSpec, FlowSpec, PfcSpec
from emulator.scenario.units import Threshold, format_duration, format_size, parse_duration_ns
from emulator.topology import counts
from emulator.topology.units import DELAY_UNITS_NS, RATE_UNITS_BPS, format_rate


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "scenario", help="check scenario files",
        description="Check a scenario file (see scenarios/README.md).")
    commands = parser.add_subparsers(dest="scenario_command", metavar="SUBCOMMAND",
                                     required=True)
    check = commands.add_parser("check", help="validate a scenario and summarise it")
    check.add_argument("file", metavar="FILE", help="scenario file (YAML)")
    check.add_argument("--json", action="store_true",
                       help="print the normalised scenario, every flow included, as JSON")
    check.add_argument("--target", choices=TARGETS,
                       help="switch target to use instead of the file's")
    check.set_defaults(func=_check)
    convert = commands.add_parser(
        "from-htsim", help="write a scenario from an htsim connection matrix (.cm)",
        description="Write a scenario file running an htsim connection matrix over a "
                    "topology: htsim host i is the topology's i-th GPU (see "
                    "scenarios/README.md, 'From htsim').")
    convert.add_argument("file", metavar="FILE.cm", help="htsim connection matrix")
    convert.add_argument("--topology", required=True, metavar="TOPO.yaml",
                         help="topology file the hosts map onto")
    convert.add_argument("-o", "--out", required=True, metavar="OUT.yaml",
                         help="scenario file to write")
    convert.add_argument("--start-unit", choices=tuple(START_UNITS_NS), default="ps",
                         help="unit of the matrix's start times: ps (csg-htsim, default) "
                              "or us (original htsim, ConnectionMatrix::save)")
    convert.add_argument("--name", help="scenario name (default: the matrix's file name)")
    convert.add_argument("--duration", help="run duration, e.g. 5ms (default: 20 x what "
                                            "the busiest host needs at line rate)")
    convert.add_argument("--force", action="store_true", help="overwrite OUT.yaml")
    convert.set_defaults(func=_from_htsim)


def _check(args: argparse.Namespace) -> int:
    scenario = load_scenario(args.file, target_override=args.target)
    written = scale.written_of(scenario)
    flows = expand_workload(written)
    for note in scale.emulation_warnings(scenario):
        print(f"warning: {note}", file=sys.stderr)
    if args.json:
        data = written.to_dict()
        data["flows"] = [flow.to_dict() for flow in flows]
        if scenario is not written:
            data["emulated"] = {**scenario.to_dict(), "flows": [
                flow.to_dict() for flow in expand_workload(scenario)]}
            del data["emulated"]["written"]
        print(json.dumps(data, indent=2))
        return 0
    lines = summary_lines(written, flows)
    if scenario is not written:
        lines[2:2] = time_scale_lines(written, scenario, flows, expand_workload(scenario))
    for line in lines:
        print(line)
    return 0


def _from_htsim(args: argparse.Namespace) -> int:
    out = Path(args.out)
    if out.exists() and not args.force:
        raise ScenarioError(f"{out}: exists; pass --force to overwrite it")
    duration_ns = None
    if args.duration is not None:
        try:
            duration_ns = parse_duration_ns(args.duration)
        except ValueError as exc:
            raise ScenarioError(f"--duration: {exc}") from None
        if duration_ns <= 0:
            raise ScenarioError(f"--duration: {args.duration!r} is not > 0")
    text = scenario_text(args.file, args.topology, out, start_unit=args.start_unit,
                         name=args.name, duration_ns=duration_ns)
    # load what would be written (relative topology path included) before writing it
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(text)
    try:
        scenario = load_scenario(tmp)
    except ScenarioError as exc:
        tmp.unlink()
        raise ScenarioError(str(exc).replace(str(tmp), str(out))) from None
    tmp.replace(out)
    flows = expand_workload(scenario)
    print(f"wrote {out}: {len(flows)} flows, {_bytes_text(flows)}, over "
          f"{scenario.topology.name}, duration {format_duration(scenario.duration_ns)}")
    return 0


def _approx(value: float, units: dict[str, int]) -> str:
    """``133333333`` b/s -> ``133.3Mbps``: the largest unit with a value >= 1."""
    if value == 0:
        return "0" + min(units, key=units.__getitem__)
    unit, size = max(((u, n) for u, n in units.items() if value >= n),
                     key=lambda item: item[1], default=min(units.items(), key=lambda i: i[1]))
    return f"{value / size:.4g}{unit}"


def _rate(rate_bps: float) -> str:
    return _approx(rate_bps, RATE_UNITS_BPS)


def _time(duration_ns: float) -> str:
    return _approx(duration_ns, DELAY_UNITS_NS)


def time_scale_lines(written: Scenario, emulated: Scenario, written_flows: list[FlowSpec],
                     emulated_flows: list[FlowSpec]) -> list[str]:
    """With ``time_scale`` != 1: what the written values become when emulated."""
    k = emulated.time_scale
    lines = [f"time scale {k:g}: emulated {k:g} times slower than written (rates / {k:g}, "
             f"times x {k:g}, bytes as written); written -> emulated:"]
    links = []
    for name in ("host_link", "fabric_link"):
        w, e = getattr(written.topology.spec, name), getattr(emulated.topology.spec, name)
        links.append(f"{name.replace('_', ' ')}s {_rate(w.rate_bps)} {_time(w.delay_ns)} -> "
                     f"{_rate(e.rate_bps)} {_time(e.delay_ns)}")
    lines.append("  " + "; ".join(links))
    lines.append(f"  duration {_time(written.duration_ns)} -> {_time(emulated.duration_ns)}")
    wd, ed = written.hosts.dcqcn, emulated.hosts.dcqcn
    if wd.enabled and wd is ed:
        lines.append("  DCQCN: the NIC agent's defaults (not scaled)")
    elif wd.enabled:
        lines.append(
            "  DCQCN " + ", ".join(f"{label} {show(getattr(wd, key))} -> {show(getattr(ed, key))}"
                                   for label, key, show in (
                                       ("AI", "rate_ai_bps", _rate), ("HAI", "rate_hai_bps", _rate),
                                       ("min", "min_rate_bps", _rate), ("timer", "timer_ns", _time),
                                       ("alpha timer", "alpha_timer_ns", _time),
                                       ("CNP interval", "cnp_interval_ns", _time))))
    last = max(range(len(written_flows)), key=lambda i: written_flows[i].start_ns, default=None)
    if last is not None and written_flows[last].start_ns:
        lines.append(f"  latest flow start {_time(written_flows[last].start_ns)} -> "
                     f"{_time(emulated_flows[last].start_ns)}")
    capped = [(w, e) for w, e in zip(written_flows, emulated_flows) if w.rate_bps is not None]
    if capped:
        lines.append("  flow rate caps " + ", ".join(
            f"{w.id} {_rate(w.rate_bps)} -> {_rate(e.rate_bps)}" for w, e in capped[:4])
            + (", ..." if len(capped) > 4 else ""))
    if written.events:
        lines.append("  events at " + ", ".join(_time(e.at_ns) for e in written.events) + " -> "
                     + ", ".join(_time(e.at_ns) for e in emulated.events))
    return lines


def _threshold_text(threshold: Threshold, frame_bytes: int) -> str:
    if threshold.unit == "pkts":
        return str(threshold)
    return f"{threshold} ({threshold.to_packets(frame_bytes)} pkts)"


def _ecn_text(ecn: EcnSpec, frame_bytes: int, where: str = "") -> str:
    if not ecn.enabled:
        return "ECN off"
    return (f"ECN{where}: kmin {_threshold_text(ecn.kmin, frame_bytes)}, kmax "
            f"{_threshold_text(ecn.kmax, frame_bytes)}, pmax {ecn.pmax:g}")


def _pfc_text(pfc: PfcSpec, where: str = "") -> str:
    if not pfc.enabled:
        return "PFC off"
    return f"PFC{where}: xoff {pfc.xoff}, xon {pfc.xon}, quanta {pfc.quanta}"


def _bytes_text(flows: list[FlowSpec]) -> str:
    total = sum(flow.size_bytes or 0 for flow in flows)
    unlimited = sum(flow.size_bytes is None for flow in flows)
    text = f"{total:,} bytes in total ({total / 1e6:.3g} MB)" if total else "no sized flows"
    if unlimited:
        text += f" + {unlimited} unlimited flow{'s' if unlimited > 1 else ''}"
    return text


def _count(number: int, what: str) -> str:
    return f"{number} {what}{'' if number == 1 else 's'}"


def summary_lines(scenario: Scenario, flows: list[FlowSpec]) -> list[str]:
    """What ``scenario check`` prints: one line per topic, indented details."""
    topo = scenario.topology
    size = counts(topo)
    frame_bytes = scenario.hosts.frame_bytes
    switches = scenario.switches
    prio = switches.priorities
    dcqcn = scenario.hosts.dcqcn
    ecn_prios = switches.ecn.priorities
    lines = [
        f"scenario {scenario.name} ({scenario.source}): ok",
        f"  target {scenario.target}, duration {format_duration(scenario.duration_ns)}, "
        f"seed {scenario.seed}, time scale {scenario.time_scale:g}",
        f"topology {topo.name} ({topo.kind}, {scenario.topology_file or 'inline'}): "
        f"{size['servers']} servers, {size['gpus']} GPUs, {size['switches']} switches, "
        f"{size['host_links']} host links, {size['fabric_links']} fabric links",
        f"switches: buffer {format_size(switches.buffer_bytes)} per port and priority; "
        f"RoCE DSCP {prio.roce_dscp} -> priority {prio.roce}, CNP DSCP {prio.cnp_dscp} -> "
        f"priority {prio.cnp}",
        "  " + _ecn_text(switches.ecn, frame_bytes, f" on priorities {list(ecn_prios)}"),
        "  " + _pfc_text(switches.pfc, f" on priorities {list(switches.pfc.priorities)}"),
    ]
    for override in switches.overrides:
        place = override.switch + ("" if override.port is None else f":{override.port}")
        port = switches.for_port(override.switch, override.port)
        lines.append(f"  override {place}: buffer {format_size(port.buffer_bytes)}; "
                     f"{_ecn_text(port.ecn, frame_bytes)}; {_pfc_text(port.pfc)}")
    lines.append(
        f"hosts: MTU {scenario.hosts.mtu_bytes}B (frames of {frame_bytes}B), DCQCN "
        + (f"on (g {dcqcn.g:g}, AI {format_rate(dcqcn.rate_ai_bps)}, HAI "
           f"{format_rate(dcqcn.rate_hai_bps)}, min {format_rate(dcqcn.min_rate_bps)}, timer "
           f"{format_duration(dcqcn.timer_ns)}, CNP interval "
           f"{format_duration(dcqcn.cnp_interval_ns)})" if dcqcn.enabled else "off"))
    made = Counter(flow.generator for flow in flows if flow.generator is not None)
    generated = sum(made[g.id] for g in scenario.generators)
    collective = sum(made[c.id] for c in scenario.collectives)
    lines.append(f"flows: {len(flows)} ({len(scenario.flows)} written, {generated} from "
                 f"{len(scenario.generators)} generators"
                 + (f", {collective} from {len(scenario.collectives)} collectives"
                    if scenario.collectives else "")
                 + (f", {sum(made[j.id] for j in scenario.jobs)} from {len(scenario.jobs)} jobs"
                    if scenario.jobs else "") + f"), {_bytes_text(flows)}")
    for generator in scenario.generators:
        lines.append(f"  {generator.kind} {generator.id}: {_count(made[generator.id], 'flow')} "
                     f"from {format_duration(generator.start_ns)}")
    for spec in scenario.collectives:
        if spec.kind == "kv-handoff":
            ranks = (f"{spec.requests} requests from {len(spec.prefill)} prefill to "
                     f"{len(spec.decode)} decode GPUs")
        else:
            ranks = (f"{len(spec.rings[0])} ranks ({spec.placement}"
                     + (f", {spec.channels} channels" if spec.channels > 1 else "")
                     + (", PXN" if spec.pxn else "")
                     + (f", {spec.algorithm}" if spec.algorithm != "ring" else "")
                     + "): " + " -> ".join(spec.rings[0]))
        lines.append(f"  {spec.kind} {spec.id}: {format_size(spec.size_bytes)}, {ranks}; "
                     f"{_count(made[spec.id], 'flow')} from {format_duration(spec.start_ns)}")
    for job in scenario.jobs:
        if job.training is not None:
            t = job.training
            what = (f"tp {t.tp} x pp {t.pp} x dp {t.dp}" + (f" (ep {t.ep})" if t.ep > 1 else "")
                    + f" = {t.world} GPUs ({job.placement}), {t.micro_batches} micro-batches, "
                    f"{job.iterations} iterations")
        elif job.serving is not None:
            v = job.serving
            what = (f"{len(v.requests)} requests, " + (
                f"{v.prefill} GPUs colocated (each prefills and decodes)" if v.colocated
                else f"{v.prefill} prefill and {v.decode} decode GPUs"))
        else:
            what = f"{len(job.gpus)} ranks from {len(job.traces)} Chakra traces"
        lines.append(f"  {job.kind} {job.id}: {what}; {_count(made[job.id], 'flow')}")
    lines.append(f"events: {len(scenario.events)}")
    for event in scenario.events:
        what = f"{event.link[0]} - {event.link[1]}" if event.link else event.flow
        if event.kind == "pfc_storm_start":
            what = f"{event.gpu} priorities {list(event.priorities)}, {event.quanta} quanta"
        elif event.kind == "pfc_storm_stop":
            what = event.gpu
        lines.append(f"  {format_duration(event.at_ns)} {event.kind} {what}")
    points = scenario.capture.points
    if points:
        lines.append(f"capture: {len(points)} points, at most {scenario.capture.max_packets} "
                     f"packets each: {', '.join(str(point) for point in points)}")
    else:
        lines.append("capture: nothing")
    lines.append(f"expect: {scenario.expect or '(not stated)'}; "
                 f"{len(scenario.expect_checks)} checks")
    lines.extend(f"  {check}" for check in scenario.expect_checks)
    return lines

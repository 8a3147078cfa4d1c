"""``aifabric topo``: show, trace and draw topology files.

- ``topo show FILE [--json]``: counts, link classes and switches;
  ``--json`` prints the counts as one JSON object.
- ``topo paths FILE SRC DST [--json]``: every equal-cost path between two GPU
  NICs (``srv0/gpu1``), as the switches crossed.
- ``topo draw FILE -o OUT.png [--aggregate auto|on|off]``: a picture of the
  fabric; big fabrics as blocks (pods, rails, leaf groups) and link bundles.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.console import Console
from rich.table import Table

from emulator.topology import TopologyError, counts, load_topology, paths
from emulator.topology.aggregate import AGGREGATE_MODES, AGGREGATE_NODES
from emulator.topology.units import format_delay, format_rate


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "topo", help="show, trace and draw topology files",
        description="Inspect a topology file (see topologies/*.yaml).")
    commands = parser.add_subparsers(dest="topo_command", metavar="SUBCOMMAND", required=True)

    show = commands.add_parser("show", help="counts, links and switches of a topology")
    show.add_argument("file", metavar="FILE", help="topology file (YAML)")
    show.add_argument("--json", action="store_true", help="print the counts as JSON")
    show.set_defaults(func=_show)

    trace = commands.add_parser("paths", help="equal-cost paths between two GPUs")
    trace.add_argument("file", metavar="FILE", help="topology file (YAML)")
    trace.add_argument("src", metavar="SRC", help="source GPU, e.g. srv0/gpu1")
    trace.add_argument("dst", metavar="DST", help="destination GPU, e.g. srv3/gpu1")
    trace.add_argument("--json", action="store_true", help="print the paths as JSON")
    trace.set_defaults(func=_paths)

    draw = commands.add_parser("draw", help="draw a topology to an image (PNG, SVG, PDF)")
    draw.add_argument("file", metavar="FILE", help="topology file (YAML)")
    draw.add_argument("-o", "--output", metavar="OUT", required=True,
                      help="image file to write, e.g. results/topology.png")
    draw.add_argument("--aggregate", choices=AGGREGATE_MODES, default="auto",
                      help="draw pods, rails and leaf groups as blocks joined by link bundles "
                      f"(on), every node (off), or blocks above {AGGREGATE_NODES} servers and "
                      "switches (auto, the default)")
    draw.set_defaults(func=_draw)


def _show(args: argparse.Namespace) -> int:
    topology = load_topology(args.file)
    summary = counts(topology)
    if args.json:
        print(json.dumps(summary))
        return 0
    console = Console()
    console.print(f"[bold]{topology.name}[/bold] ({topology.kind}) from {args.file}")
    table = Table(title="counts", show_header=False)
    table.add_column("what")
    table.add_column("count", justify="right")
    for key, value in summary.items():
        table.add_row(key.replace("_", " "), str(value))
    console.print(table)

    links = Table(title="links")
    for column in ("kind", "count", "rate", "delay"):
        links.add_column(column, justify="right" if column == "count" else "left")
    # the backend's rows count its links only; the other networks have rows of their own
    for kind, link in (("host", topology.spec.host_link), ("fabric", topology.spec.fabric_link)):
        backend = sum(lk.kind == kind and lk.network == "backend" for lk in topology.links)
        links.add_row(kind, str(backend), format_rate(link.rate_bps), format_delay(link.delay_ns))
    for domain in topology.domains[:1]:  # every domain has the file's rate and hop
        links.add_row("scale-up (sim)", str(sum(len(d.gpus) for d in topology.domains)),
                      format_rate(domain.rate_bps), f"{format_delay(domain.hop_latency_ns)} hop")
    other: dict[tuple[str, str, int, int], int] = {}
    for lk in topology.links:
        if lk.network != "backend":
            key = (lk.network, lk.kind, lk.rate_bps, lk.delay_ns)
            other[key] = other.get(key, 0) + 1
    for (network, kind, rate_bps, delay_ns), count in other.items():
        links.add_row(f"{network} {kind}" if network != "dci" else "dci", str(count),
                      format_rate(rate_bps), format_delay(delay_ns))
    console.print(links)

    switches = Table(title="switches")
    for column in ("name", "role", "rail", "ports", "prefix", "router id"):
        switches.add_column(column)
    for switch in topology.switches:
        switches.add_row(switch.name, switch.role, "" if switch.rail is None else str(switch.rail),
                         str(len(switch.ports)), switch.prefix or "", switch.router_id)
    console.print(switches)
    return 0


def _paths(args: argparse.Namespace) -> int:
    topology = load_topology(args.file)
    found = paths(topology, args.src, args.dst)
    if args.json:
        print(json.dumps({"src": args.src, "dst": args.dst, "paths": found}))
        return 0
    for path in found:
        print(" -> ".join(path))
    return 0


def _draw(args: argparse.Namespace) -> int:
    # Imported here: matplotlib takes a while to load and only this command needs it.
    from emulator.topology.draw import draw_topology

    topology = load_topology(args.file)
    output = Path(args.output)
    if not output.parent.is_dir():
        raise TopologyError(f"{output}: directory {output.parent} does not exist")
    try:
        draw_topology(topology, output, aggregate=args.aggregate)
    except ValueError as exc:
        # matplotlib refuses unknown suffixes with a ValueError.
        raise TopologyError(f"{output}: cannot draw: {exc}") from None
    except OSError as exc:
        raise TopologyError(f"{output}: cannot write: {exc.strerror}") from None
    print(f"wrote {output}")
    return 0

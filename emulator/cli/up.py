"""``aifabric up TOPOLOGY``: bring a fabric up, program it, and open the
Mininet CLI (with ``counters``, ``queues``, ``pfc``, ``capture`` and ``paths``), or with
``--check`` ping every pair of GPUs on different servers and exit."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack

from emulator.cli.view import LiveView, add_view_options


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("up", help="bring a fabric up and program it",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("topology", help="topology file (topologies/*.yaml)")
    p.add_argument("--target", choices=("builtin", "bmv2"), default="builtin")
    p.add_argument("--check", action="store_true",
                   help="ping all ordered GPU pairs on different servers, print a summary, tear down")
    p.add_argument("--json", action="store_true", help="with --check: print the summary as JSON")
    p.add_argument("--workdir", help="keep logs, build outputs and captures here")
    add_view_options(p, speed=False)
    p.set_defaults(func=_up)


def _up(args: argparse.Namespace) -> int:
    from pathlib import Path

    from emulator.run.session import FabricSession
    from emulator.topology import load_topology

    topology = load_topology(args.topology)
    workdir = Path(args.workdir) if args.workdir else None
    with ExitStack() as stack:
        # the view first: a port in use stops us before the fabric is built
        view = LiveView(args.view, topology.name) if args.view else None
        if view is not None:
            stack.callback(view.stop)
        fabric = stack.enter_context(FabricSession(topology, target=args.target,
                                                   workdir=workdir))
        if view is not None:
            _watch(view, fabric, topology, args.target, stack)
        if args.check:
            summary = fabric.ping_all()
            if args.json:
                print(json.dumps(summary))
            else:
                print(f"{summary['reachable']}/{summary['pairs']} pairs reachable, "
                      f"{summary['loss_pct']}% loss, switch hops {summary['switch_hops']}")
                for pair in summary["unreachable"]:
                    print(f"unreachable: {pair}", file=sys.stderr)
            return 0 if summary["reachable"] == summary["pairs"] else 1
        from emulator.cli.fabric_cli import FabricCLI

        FabricCLI(fabric)
    return 0


def _watch(view: LiveView, fabric: object, topology: object, target: str,
           stack: ExitStack) -> None:
    """Feed the page from the switches' QueueControl channel (built-in target;
    BMv2 has none: the page shows the topology only)."""
    from emulator.view.sources import live_poller

    clients = {}
    if target == "builtin":
        from emulator.targets.builtin.queue_control import QueueControlClient

        for name, address in fabric.network.switch_addresses().items():  # type: ignore[attr-defined]
            clients[name] = stack.enter_context(QueueControlClient(address))
    view.feed.watch_fabric(topology, target, live_poller(clients))
    view.announce(lambda msg: print(msg, flush=True))

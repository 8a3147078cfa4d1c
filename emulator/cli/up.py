"""``aifabric up TOPOLOGY``: bring a fabric up, program it, and open the
Mininet CLI (with ``counters``, ``queues``, ``pfc``, ``capture`` and ``paths``), or with
``--check`` ping every pair of GPUs on different servers and exit."""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("up", help="bring a fabric up and program it",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("topology", help="topology file (topologies/*.yaml)")
    p.add_argument("--target", choices=("builtin", "bmv2"), default="builtin")
    p.add_argument("--check", action="store_true",
                   help="ping all ordered GPU pairs on different servers, print a summary, tear down")
    p.add_argument("--json", action="store_true", help="with --check: print the summary as JSON")
    p.add_argument("--workdir", help="keep logs, build outputs and captures here")
    p.set_defaults(func=_up)


def _up(args: argparse.Namespace) -> int:
    from pathlib import Path

    from emulator.run.session import FabricSession
    from emulator.topology import load_topology

    topology = load_topology(args.topology)
    workdir = Path(args.workdir) if args.workdir else None
    with FabricSession(topology, target=args.target, workdir=workdir) as fabric:
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

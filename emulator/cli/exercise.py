"""``aifabric exercise DIR``: run a p4lang tutorials exercise as its ``make
run`` does, on built-in switches instead of BMv2, and open the Mininet CLI
(with ``counters``, ``queues``, ``pfc`` and ``capture``); with ``--check``,
ping every pair of hosts and tear down.

    aifabric exercise DIR [--program FILE.p4] [--topo TOPOLOGY_JSON] [--check] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "exercise", help="run a p4lang tutorials exercise (as its 'make run' does)",
        description="Run a p4lang tutorials exercise as its 'make run' does: compile its "
                    "programs into DIR/build, bring up topology.json (the Makefile's TOPO) "
                    "in Mininet on aifabric switches, run the hosts' commands, program the "
                    "switches from their sN-runtime.json over P4Runtime, then open the "
                    "Mininet CLI. Logs go to DIR/logs, captures to DIR/pcaps.")
    p.add_argument("directory", metavar="DIR", help="the exercise directory")
    p.add_argument("--program", metavar="FILE.p4",
                   help="compile this program instead of the exercise's own NAME.p4 (e.g. "
                        "DIR/solution/NAME.p4); it becomes build/NAME.json")
    p.add_argument("--topo", metavar="TOPOLOGY_JSON",
                   help="topology file (default: the Makefile's TOPO, else DIR/topology.json)")
    p.add_argument("--check", action="store_true",
                   help="ping every ordered pair of hosts, print a summary, tear down "
                        "(exit 0 when every pair answered)")
    p.add_argument("--json", action="store_true",
                   help="with --check: progress to stderr, the summary as one JSON object")
    p.add_argument("--no-pcap", action="store_true", help="do not capture into DIR/pcaps")
    p.set_defaults(func=_exercise)


def _exercise(args: argparse.Namespace) -> int:
    from emulator.exercise.session import ExerciseSession
    from emulator.exercise.spec import read_exercise

    exercise = read_exercise(args.directory, args.program, args.topo)
    quiet = args.check and args.json

    def say(text: str) -> None:
        print(text, file=sys.stderr if quiet else sys.stdout, flush=True)

    with ExerciseSession(exercise, say=say, pcaps=not args.no_pcap) as run:
        if args.check:
            summary = run.ping_all()
            if args.json:
                print(json.dumps(summary), flush=True)
            else:
                print(f"{summary['pairs_ok']}/{summary['pairs']} host pairs answered")
                for src, dst in summary["failed"]:
                    print(f"no answer: {src} -> {dst}", file=sys.stderr)
            return 0 if summary["pairs_ok"] == summary["pairs"] else 1
        for line in run.describe():
            print(line)
        directory = run.directory
        print(f"\nSwitch logs: {directory / 'logs'}/<switch>.log; P4Runtime requests: "
              f"{directory / 'logs'}/<switch>-p4runtime-requests.txt")
        if not args.no_pcap:
            print(f"Captures: {directory / 'pcaps'}/<switch>-eth<port>_in.pcap and _out.pcap "
                  "(read them with 'aifabric inspect FILE' or 'tcpdump -r FILE')")
        print("aifabric commands: counters SWITCH, queues SWITCH, pfc SWITCH, "
              "capture SWITCH:PORT [COUNT] [FILE]; 'exit' tears the network down.\n")
        from emulator.cli.exercise_cli import ExerciseCLI

        ExerciseCLI(run)
    return 0

"""``aifabric bench collective``: nccl-tests' table for a collective on the
sim clock, one row per message size (:mod:`emulator.run.bench`)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emulator.scenario.errors import ScenarioError
from emulator.run.bench import OPS, bench_collective, parse_size, sizes


def register(subparsers: argparse._SubParsersAction) -> None:
    group = subparsers.add_parser("bench", help="benchmarks on the fabric (sim clock)")
    sub = group.add_subparsers(dest="bench_command", metavar="BENCH")
    p = sub.add_parser("collective", help="nccl-tests-style sweep of one collective [sim]")
    p.add_argument("--op", default="all_reduce", choices=sorted(OPS))
    p.add_argument("-b", "--minbytes", default="8", help="first size (e.g. 8, 64K)")
    p.add_argument("-e", "--maxbytes", default="128M", help="last size (e.g. 128M)")
    p.add_argument("-f", "--stepfactor", type=int, default=2, help="size multiplier")
    p.add_argument("--gpus", default="srv[0-3]/gpu0", help="ranks, a GPU pattern")
    p.add_argument("--topology", help="topology file (default: 4 servers, 100 Gb/s rail)")
    p.add_argument("--json", action="store_true", help="print the rows as JSON")
    p.set_defaults(func=_collective)


def _collective(args: argparse.Namespace) -> int:
    size_list = sizes(parse_size(args.minbytes, "-b"), parse_size(args.maxbytes, "-e"),
                      args.stepfactor)
    kwargs = {}
    if args.topology:
        path = Path(args.topology)
        if not path.is_file():
            what = "is a directory" if path.is_dir() else "does not exist"
            raise ScenarioError(f"--topology {args.topology}: {what}; give a topology file "
                                "(e.g. topologies/rail-4x4.yaml)")
        kwargs = {"topology": str(path.resolve()), "base_dir": "."}
    rows = bench_collective(args.op, size_list, args.gpus, **kwargs)
    if args.json:
        print(json.dumps({"op": args.op, "clock": "sim", "rows": rows}, indent=1))
        return 0
    print(f"# nccl-tests-style sweep on aifabric [sim]: {args.op}, ranks {args.gpus}")
    print("#")
    print(f"# {'size':>10} {'count':>12} {'type':>6} {'redop':>6} {'root':>6}"
          f" {'time':>10} {'algbw':>8} {'busbw':>8} {'#wrong':>6}")
    print(f"# {'(B)':>10} {'(elements)':>12} {'':>6} {'':>6} {'':>6}"
          f" {'(us)':>10} {'(GB/s)':>8} {'(GB/s)':>8} {'':>6}")
    for r in rows:
        t = "N/A" if r["time_us"] is None else f"{r['time_us']:.2f}"
        a = "N/A" if r["algbw_GBps"] is None else f"{r['algbw_GBps']:.2f}"
        b = "N/A" if r["busbw_GBps"] is None else f"{r['busbw_GBps']:.2f}"
        print(f"  {r['size_bytes']:>10} {r['count']:>12} {r['type']:>6} {r['redop']:>6}"
              f" {r['root']:>6} {t:>10} {a:>8} {b:>8} {r['wrong']:>6}")
    done = [r["busbw_GBps"] for r in rows if r["busbw_GBps"] is not None]
    if done:
        print(f"# Avg bus bandwidth    : {sum(done) / len(done):.3f} GB/s [sim]")
    return 0

"""Executor speed: compile time and microseconds per packet for IPv4
forwarding with a few tables' worth of entries.

Prints figures, not a verdict:  python benchmarks/p4_executor.py [--json]
With a P4 file (once the front end is available) ``--program FILE.p4``
compiles it from source and reports the front-end time too.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

from emulator.p4.exec.pipeline import V1ModelPipeline  # noqa: E402
from tests.unit.p4.irkit import basic_program  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=20000)
    parser.add_argument("--entries", type=int, default=256)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    t0 = time.perf_counter()
    program, _ = basic_program()
    pipe = V1ModelPipeline(program)
    compile_s = time.perf_counter() - t0

    table = pipe.table("MyIngress.ipv4_lpm")
    for i in range(args.entries):
        plen = 32 if i % 2 else 24
        key = table.canonical_key([((10 << 24) | (i << 8) | 1, plen)])
        table.insert(table.make_entry("MyIngress.ipv4_forward", [0x020000000000 + i, 1 + i % 8], key))
    frames = [bytes(Ether() / IP(dst=f"10.0.{i % args.entries}.1") / UDP() / (b"x" * 64))
              for i in range(64)]

    process = pipe.process
    for frame in frames:
        process(1, frame)
    t0 = time.perf_counter()
    n = args.packets
    for i in range(n):
        process(1, frames[i & 63])
    elapsed = time.perf_counter() - t0
    figures = {
        "program": "basic IPv4 LPM (hand-built IR)",
        "table_entries": args.entries,
        "compile_ms": round(compile_s * 1e3, 2),
        "packets": n,
        "us_per_packet": round(elapsed / n * 1e6, 2),
        "packets_per_s": round(n / elapsed),
    }
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>16}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

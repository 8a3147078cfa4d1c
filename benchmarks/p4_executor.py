"""Executor speed: front-end compile time (parse, check, code generation
separately) of a real P4 program and microseconds per packet through it,
with a few hundred LPM entries; the same packet figure for the hand-built IR
of basic forwarding, for comparison with earlier runs; and ``p4src/
fabric.p4`` as a scenario's leaf runs it (programmed by the controller over
P4Runtime, a RoCEv2 WRITE frame from one GPU to another through the leaf):
``fabric_us_per_packet`` is ingress plus egress, as the switch target calls
them, ``fabric_process_us`` the same through ``process()``.

Per-packet figures are CPU time (``time.process_time``), the least of five
repeats: other work on the machine only adds to them. Prints figures, not a
verdict:

    python benchmarks/p4_executor.py [--program FILE.p4] [--entries N] [--packets N] [--json]

The program (default ``tests/unit/p4/programs/basic_forwarding.p4``) must
have an ingress table with an ``lpm`` key on ``hdr.ipv4.dstAddr``; it gets
``--entries`` routes (half /24, half /32) to its first action with
parameters. Compile times: the first run includes building the LALR parser
tables (once per process); "warm" is the median of three more runs.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scapy.layers.inet import IP, UDP  # noqa: E402
from scapy.layers.l2 import Ether  # noqa: E402

from emulator.p4.check import check_program  # noqa: E402
from emulator.p4.exec.pipeline import V1ModelPipeline  # noqa: E402
from emulator.p4.exec.tables import Table  # noqa: E402
from emulator.p4.parser import parse_program  # noqa: E402
from tests.unit.p4.irkit import basic_program  # noqa: E402

DEFAULT_PROGRAM = ROOT / "tests" / "unit" / "p4" / "programs" / "basic_forwarding.p4"


def compile_times(path: Path) -> tuple[dict[str, float], V1ModelPipeline]:
    """(parse, check, codegen) in milliseconds for one compile of ``path``."""
    t0 = time.perf_counter()
    tree = parse_program(path)
    t1 = time.perf_counter()
    program = check_program(tree, str(path))
    t2 = time.perf_counter()
    pipe = V1ModelPipeline(program)
    t3 = time.perf_counter()
    return {"parse_ms": (t1 - t0) * 1e3, "check_ms": (t2 - t1) * 1e3, "codegen_ms": (t3 - t2) * 1e3}, pipe


def lpm_table(pipe: V1ModelPipeline) -> tuple[Table, str, list[int]]:
    """The first table keyed by an lpm match on an IPv4 destination, the
    action to install and parameter values that fit its widths."""
    for table in pipe.tables.values():
        kinds = [k.match_kind for k in table.keys]
        if kinds.count("lpm") == 1 and all(k in ("lpm", "exact") for k in kinds):
            for spec in table.actions.values():
                if spec.params:
                    params = [(1 << (w - 1)) | 1 if w > 1 else 1 for _, w in spec.params]
                    return table, spec.name, params
    raise SystemExit("the program needs a table with one lpm key and an action with parameters")


def fill(table: Table, action: str, params: list[int], entries: int) -> None:
    for i in range(entries):
        plen = 32 if i % 2 else 24
        match = []
        for k in table.keys:
            if k.match_kind == "lpm":
                match.append(((10 << 24) | ((i >> 8) << 16) | ((i & 0xFF) << 8) | 1, plen))
            else:
                match.append(0)
        ports = [p if n != "port" else 1 + i % 8 for (n, _), p in zip(table.actions[action].params, params)]
        table.insert(table.make_entry(action, ports, table.canonical_key(match)))


REPEATS = 5


def least_cpu_us(run: Callable[[int], None], packets: int) -> float:
    """CPU µs per packet of ``run(packets)``, the least of :data:`REPEATS`."""
    run(min(packets, 500))  # warm up (memoised lookups, caches)
    best = float("inf")
    for _ in range(REPEATS):
        t0 = time.process_time()
        run(packets)
        best = min(best, time.process_time() - t0)
    return best / packets * 1e6


def per_packet(pipe: V1ModelPipeline, entries: int, packets: int) -> float:
    """Microseconds per packet over ``packets`` frames hitting the routes."""
    frames = [bytes(Ether() / IP(dst=f"10.{(i >> 8) & 0xFF}.{i & 0xFF}.1") / UDP() / (b"x" * 64))
              for i in (j % max(entries, 1) for j in range(64))]
    process = pipe.process

    def run(n: int) -> None:
        for i in range(n):
            process(1, frames[i & 63])
    return least_cpu_us(run, packets)


def fabric_leaf(packets: int) -> dict[str, float]:
    """fabric.p4 on a leaf programmed as a scenario programs it (the
    calibration's): µs per RoCEv2 WRITE frame (1 KB payload) through
    ingress and egress."""
    from emulator.p4.exec.pipeline import QueueInfo
    from emulator.budget.calibrate import calibration_leaf

    with calibration_leaf() as leaf:
        pipe, port, frame = leaf.pipeline, leaf.port, leaf.frame
        ingress, egress = pipe.ingress, pipe.egress
        out = egress(ingress(port, frame).queued[0], QueueInfo()).outputs
        if len(out) != 1:
            raise SystemExit("fabric.p4 did not forward the benchmark frame")

        def through(n: int) -> None:
            for _ in range(n):
                for item in ingress(port, frame).queued:
                    egress(item, QueueInfo(0, 0, None))

        def process(n: int) -> None:
            for _ in range(n):
                pipe.process(port, frame)
        return {"fabric_us_per_packet": least_cpu_us(through, packets),
                "fabric_process_us": least_cpu_us(process, packets)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", type=Path, default=DEFAULT_PROGRAM, help="P4-16 v1model source file")
    parser.add_argument("--packets", type=int, default=20000)
    parser.add_argument("--entries", type=int, default=300)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    cold, pipe = compile_times(args.program)
    warm_runs = [compile_times(args.program)[0] for _ in range(3)]
    warm = {key: statistics.median(run[key] for run in warm_runs) for key in cold}
    table, action, params = lpm_table(pipe)
    fill(table, action, params, args.entries)
    us = per_packet(pipe, args.entries, args.packets)

    ir_program, _ = basic_program()
    ir_pipe = V1ModelPipeline(ir_program)
    fill(ir_pipe.table("MyIngress.ipv4_lpm"), "MyIngress.ipv4_forward", [0x020000000001, 1], args.entries)
    ir_us = per_packet(ir_pipe, args.entries, args.packets)

    figures = {
        "program": str(args.program.relative_to(ROOT) if args.program.is_relative_to(ROOT) else args.program),
        "table": table.name,
        "table_entries": args.entries,
        "cold_parse_ms": round(cold["parse_ms"], 1),
        "cold_check_ms": round(cold["check_ms"], 1),
        "cold_codegen_ms": round(cold["codegen_ms"], 1),
        "warm_parse_ms": round(warm["parse_ms"], 1),
        "warm_check_ms": round(warm["check_ms"], 1),
        "warm_codegen_ms": round(warm["codegen_ms"], 1),
        "packets": args.packets,
        "us_per_packet": round(us, 2),
        "packets_per_s": round(1e6 / us),
        "ir_us_per_packet": round(ir_us, 2),
    }
    figures.update({key: round(value, 2) for key, value in fabric_leaf(args.packets).items()})
    figures["clock"] = "CPU (process_time), least of 5"
    if args.json:
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            print(f"{key:>18}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

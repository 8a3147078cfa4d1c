"""Speed of the virtual-time target (``--target sim``): simulated link hops
per CPU second, wall time against fabric size for the same load per GPU,
and on several MPI ranks, the speed-up against one. Prints figures, not a
verdict:

    python benchmarks/sim_speed.py [--sizes 16,64,128] [--bytes-per-gpu 256KB]
        [--loads ring,permutation] [--k 8] [--ranks 1,2,4|all]
        [--executor auto|cython|python] [--json]

``--executor`` as ``aifabric run``'s: what runs the switches' P4 code
(compiled with Cython, the default where it can be built, or Python); the
figures say which ran, and whether the engine, data plane and agents ran
compiled (:mod:`emulator.speedups`; ``AIFABRIC_SPEEDUPS=0``: as Python).

Loads: ``ring`` (below) and ``permutation``, htsim's canonical case: a
k-ary fat-tree (k = 8: 128 hosts), 100 Gb/s and 1 us a hop, MTU 4096, PFC,
every host sends 2 MB to another (a permutation), the loaded fabric the
ring's easy load does not describe.

Ranks: 1 runs in this process on one engine; N > 1 runs ``aifabric run
--ranks N`` (mpiexec). Per rank count: the run's wall time (the slowest
rank's, waits included), hops per CPU second of each rank's engine, the
speed-up against one rank and the parallel efficiency (speed-up / N). The
results of every rank count are the same (tests/unit/sim/test_sim_ranks.py);
here only the figures are compared.

Load: every GPU writes ``--bytes-per-gpu`` to the GPU of the same index on
the next server (a rail-aligned ring shift: one leaf hop each, every host
link busy in both directions), all at once, on rail-optimized fabrics of
100 Gb/s links (16 GPUs: 4 servers x 4; 64: 8 x 8; 128: 16 x 8; 2/4/4
spines; 256, 512, 1,024: 32, 64, 128 servers x 8, 16 servers a leaf, 4/8/16
spines, so the shift crosses the spines between leaf groups), DCQCN and PFC at their defaults. A "hop" is a frame delivered at
the far end of a link; a data packet of this load takes two (NIC to leaf,
leaf to NIC), through one switch pipeline.

The ceiling: fabric.p4 on the executor alone, microseconds (of CPU time) per RoCE
packet through a programmed leaf (ingress, egress, deparser), the same
switch the engine drives; 1 / that is the most switch passes a second one
core can make, so about twice as many hops on this load.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import os  # noqa: E402
import subprocess  # noqa: E402

import yaml  # noqa: E402

from emulator.run.sim import run_sim  # noqa: E402
from emulator.scenario.loader import load_scenario, scenario_from_dict  # noqa: E402
from emulator.scenario.units import parse_size_bytes  # noqa: E402
from emulator.speedups import state as speedups_state  # noqa: E402

# GPUs: (servers, GPUs a server, spines, servers a leaf); 256 and up are
# topologies/rail-128x8.yaml's shape (16 servers a leaf, 8 rails) cut down.
SHAPES = {16: (4, 4, 2, 4), 64: (8, 8, 4, 8), 128: (16, 8, 4, 16), 256: (32, 8, 4, 16),
          512: (64, 8, 8, 16), 1024: (128, 8, 16, 16)}


def rank_counts(text: str) -> list[int]:
    """``1,2,4`` as given, or ``all``: 1, 2, 4, ... up to this machine's cores."""
    if text != "all":
        return [int(x) for x in text.split(",")]
    counts, n = [], 1
    while n <= (os.cpu_count() or 1):
        counts.append(n)
        n *= 2
    return counts


def ring_shift(gpus: int, size: str) -> dict:  # type: ignore[type-arg]
    if gpus not in SHAPES:
        raise SystemExit(f"--sizes: {gpus} GPUs is not one of {', '.join(map(str, SHAPES))}")
    servers, per_server, spines, per_leaf = SHAPES[gpus]
    flows = [{"id": f"s{s}g{g}", "src": f"srv{s}/gpu{g}", "dst": f"srv{(s + 1) % servers}/gpu{g}",
              "size": size, "start": "0s"}
             for s in range(servers) for g in range(per_server)]
    return {"name": f"bench-{gpus}", "target": "sim", "duration": "20ms", "seed": 1,
            "topology": {"name": f"bench-{gpus}", "kind": "rail-optimized", "servers": servers,
                         "gpus_per_server": per_server, "servers_per_leaf": per_leaf,
                         "spines": spines, "host_link": {"rate": "100Gbps", "delay": "1us"},
                         "fabric_link": {"rate": "100Gbps", "delay": "1us"}},
            "switches": {"buffer": "2MB"}, "workload": {"flows": flows}}


def executor_us_per_packet(packets: int = 20_000, executor: str = "auto") -> tuple[float, str]:
    """fabric.p4 through a programmed sim leaf, one RoCE WRITE frame: CPU µs
    per packet, and what ran it ("cython" or "python")."""
    from emulator.run.sim import p4_executor
    from emulator.sim.engine import Engine
    from emulator.sim.fabric import SimFabric
    from emulator.topology import build_topology, spec_from_dict
    from emulator.traffic.layers.opcodes import RC_RDMA_WRITE_MIDDLE
    from emulator.traffic.roce import RoceFlow

    topo = build_topology(spec_from_dict(ring_shift(16, "1KB")["topology"], "<bench>"))
    with tempfile.TemporaryDirectory() as tmp:
        fabric = SimFabric(topo, Engine(), workdir=Path(tmp), executor=p4_executor(executor))
        fabric.start()
        a, b = topo.gpu("srv0/gpu0"), topo.gpu("srv1/gpu0")
        flow = RoceFlow(a.mac, a.gateway_mac, a.ip, b.ip, 0xC001)
        frame = flow.packet(RC_RDMA_WRITE_MIDDLE, 0x100, 1, b"\x00" * 1024)
        pipe = fabric.switches[a.switch].dataplane.pipeline
        port = a.switch_port
        start = time.process_time()
        for _ in range(packets):
            pipe.process(port, frame)
        elapsed = time.process_time() - start
        fabric.stop()
    return elapsed / packets * 1e6, pipe.executor


def run_ranks(data: dict, ranks: int, tmp: Path,  # type: ignore[type-arg]
              partition: str = "auto", executor: str = "auto") -> dict:  # type: ignore[type-arg]
    """One run of scenario ``data`` on ``ranks`` ranks; its results."""
    path = tmp / f"{data['name']}.yaml"
    path.write_text(yaml.safe_dump(data))
    out = tmp / f"{data['name']}-{ranks}"
    wall = time.perf_counter()
    if ranks == 1:
        results = run_sim(load_scenario(path), out, progress=False, executor=executor)
    else:
        path_env = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        done = subprocess.run([sys.executable, "-m", "emulator.cli.main", "run", str(path),
                               "--target", "sim", "--ranks", str(ranks), "--out", str(out),
                               "--no-progress", "--partition", partition,
                               "--executor", executor], cwd=ROOT,
                              capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": path_env})
        if not (out / "results.json").exists():
            raise SystemExit(f"{ranks} ranks failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
        results = json.loads((out / "results.json").read_text())
    results["_total_wall_s"] = time.perf_counter() - wall
    return results


def scaling(loads: list[str], sizes: list[int], k: int, ranks_list: list[int],
            bytes_per_gpu: str, partition: str = "auto",
            executor: str = "auto") -> list[dict]:  # type: ignore[type-arg]
    """Each load on each rank count: wall time, hops per CPU second, speed-up."""
    rows = []
    for load in loads:
        scenarios = []
        if load == "ring":
            scenarios = [ring_shift(gpus, bytes_per_gpu) for gpus in sizes]
        elif load == "permutation":
            from tests.unit.sim.sim_kit import fat_tree_permutation
            scenarios = [fat_tree_permutation(k, dcqcn=False)]
        else:
            raise SystemExit(f"unknown load {load!r}: ring or permutation")
        for data in scenarios:
            base_wall = None
            first = None
            for ranks in ranks_list:
                with tempfile.TemporaryDirectory() as tmp:
                    results = run_ranks(data, ranks, Path(tmp), partition, executor)
                sim = results["sim"]
                if first is None:
                    first = results
                same = all(results["flows"][i].get("fct_s") == first["flows"][i].get("fct_s")
                           for i in range(len(first["flows"])))
                wall = sim["wall_s"]
                base_wall = base_wall or wall
                per_rank = sim.get("per_rank") or [{"rank": 0, "hops": sim["hops"],
                                                    "cpu_s": sim["cpu_s"], "wall_s": wall}]
                rows.append({
                    "load": data["name"], "ranks": ranks, "partition": partition,
                    "hops": sim["hops"],
                    "flows_completed": results["totals"]["flows_completed"],
                    "max_fct_us": round((results["totals"]["max_fct_s"] or 0) * 1e6, 1),
                    "wall_s": wall, "total_wall_s": round(results["_total_wall_s"], 2),
                    "hops_per_cpu_s": sim["hops_per_cpu_s"],
                    "hops_per_wall_s": sim["hops_per_wall_s"],
                    "speedup": round(base_wall / max(wall, 1e-9), 2),
                    "efficiency": round(base_wall / max(wall, 1e-9) / ranks, 2),
                    "per_rank_hops_per_cpu_s": [round(r["hops"] / max(r["cpu_s"], 1e-9))
                                                for r in per_rank],
                    "per_rank_wait_s": [r.get("wait_s", 0.0) for r in per_rank],
                    "windows": max((r.get("windows", 0) for r in per_rank), default=0),
                    "same_fcts_as_first": same})
    return rows


def load_average() -> tuple[float, float, float]:
    """The machine's 1, 5 and 15 minute load averages: how busy it was,
    which every CPU-second figure depends on (caches, frequency)."""
    return os.getloadavg()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="16,64,128",
                        help="GPU counts (16, 64, 128, 256, 512, 1024)")
    parser.add_argument("--bytes-per-gpu", default="256KB")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--ranks", default="", help="rank counts to compare, e.g. 1,2,4, or all "
                        "(1, 2, 4, ... up to the cores here; default: none, one engine)")
    parser.add_argument("--loads", default="ring", help="ring, permutation, or both "
                        "(ring,permutation); on one engine the ring at every --sizes and "
                        "the permutation on the k-ary fat-tree")
    parser.add_argument("--k", type=int, default=8, help="fat-tree k of the permutation")
    parser.add_argument("--partition", default="auto", help="auto, switch or a file")
    parser.add_argument("--executor", default="auto", choices=("auto", "cython", "python"),
                        help="what runs the switches' P4 code (as aifabric run's)")
    args = parser.parse_args()
    if args.ranks:
        ranks_list = rank_counts(args.ranks)
        rows = scaling(args.loads.split(","), [int(x) for x in args.sizes.split(",")], args.k,
                       ranks_list, args.bytes_per_gpu, args.partition, args.executor)
        if args.json:
            print(json.dumps({"clock": "virtual (sim)", "cores": os.cpu_count(),
                              "load_average": load_average(), "runs": rows}, indent=1))
            return 0
        print(f"virtual-time target on MPI ranks ({os.cpu_count()} cores here, "
              f"load average {load_average()[0]:.1f} after the runs)")
        print(f"{'load':>12} {'ranks':>5} {'hops':>9} {'done':>5} {'wall s':>8} "
              f"{'speed-up':>8} {'effic.':>6} {'hops/cpu-s':>10} {'windows':>8} same  "
              f"hops/cpu-s per rank")
        for r in rows:
            print(f"{r['load']:>12} {r['ranks']:>5} {r['hops']:>9} {r['flows_completed']:>5} "
                  f"{r['wall_s']:>8.2f} {r['speedup']:>8.2f} {r['efficiency']:>6.2f} "
                  f"{r['hops_per_cpu_s']:>10} {r['windows']:>8} {r['same_fcts_as_first']!s:>4}  "
                  f"{','.join(map(str, r['per_rank_hops_per_cpu_s']))}")
        return 0
    rows = []
    loads = args.loads.split(",")
    for load in loads:
        if load not in ("ring", "permutation"):
            raise SystemExit(f"--loads: unknown load {load!r}: ring or permutation")
    runs: list[tuple[str, int, dict]] = []  # type: ignore[type-arg]
    if "ring" in loads:
        runs += [("ring", gpus, ring_shift(gpus, args.bytes_per_gpu))
                 for gpus in (int(x) for x in args.sizes.split(","))]
    if "permutation" in loads:
        from tests.unit.sim.sim_kit import fat_tree_permutation
        runs.append(("permutation", args.k ** 3 // 4, fat_tree_permutation(args.k, dcqcn=False)))
    for load, gpus, data in runs:
        with tempfile.TemporaryDirectory() as tmp:
            wall = time.perf_counter()
            results = run_sim(scenario_from_dict(data, f"<bench-{gpus}>"), Path(tmp),
                              progress=False, executor=args.executor)
            total = time.perf_counter() - wall
        sim = results["sim"]
        rows.append({"load": load, "gpus": gpus, "switches": results["topology"]["switches"],
                     "flows_completed": results["totals"]["flows_completed"],
                     "payload_bytes": sum(parse_size_bytes(f["size"])
                                          for f in data["workload"]["flows"]),
                     "simulated_s": sim["simulated_s"], "max_fct_s": results["totals"]["max_fct_s"],
                     "events": sim["events"], "hops": sim["hops"], "engine_wall_s": sim["wall_s"],
                     "engine_cpu_s": sim["cpu_s"], "hops_per_cpu_s": sim["hops_per_cpu_s"],
                     "total_wall_s": round(total, 2), "hops_per_wall_s": sim["hops_per_wall_s"],
                     "events_per_wall_s": sim["events_per_wall_s"],
                     "p4_executor": sim.get("p4_executor", "python"),
                     "speedups": sim.get("speedups", "python")})
    us, executor = executor_us_per_packet(executor=args.executor)
    described = {"ring": f"ring shift, {args.bytes_per_gpu} per GPU",
                 "permutation": f"k={args.k} fat-tree permutation, 2 MB a host"}
    out = {"clock": "virtual (sim)",
           "load": "; ".join(described[x] for x in loads) + "; 100 Gb/s",
           "runs": rows, "executor_us_per_packet_fabric_p4": round(us, 2),
           "p4_executor": executor,
           "speedups": speedups_state(),
           "executor_ceiling_switch_passes_per_s": round(1e6 / us),
           "load_average": load_average()}
    if args.json:
        print(json.dumps(out, indent=1))
        return 0
    print(f"virtual-time target, {out['load']}; P4 code on {executor}; engine, data plane "
          f"and agents {out['speedups']} (emulator.speedups)")
    print(f"{'load':>11} {'GPUs':>5} {'switches':>8} {'done':>5} {'hops':>8} {'events':>8} "
          f"{'engine s':>9} {'cpu s':>7} {'total s':>8} {'hops/s':>8} {'hops/cpu-s':>10} "
          f"{'cpu per hop vs first':>20}")
    base = rows[0]["engine_cpu_s"] / max(rows[0]["hops"], 1) if rows else 0
    for r in rows:
        per_hop = r["engine_cpu_s"] / max(r["hops"], 1)
        print(f"{r['load']:>11} {r['gpus']:>5} {r['switches']:>8} {r['flows_completed']:>5} "
              f"{r['hops']:>8} {r['events']:>8} {r['engine_wall_s']:>9.2f} {r['engine_cpu_s']:>7.2f} "
              f"{r['total_wall_s']:>8.2f} {r['hops_per_wall_s']:>8} {r['hops_per_cpu_s']:>10} "
              f"{per_hop / base if base else 0:>20.2f}")
    print(f"fabric.p4 on the {executor} executor: {us:.1f} us per packet "
          f"(ceiling {1e6 / us:,.0f} switch passes/s on one core)")
    one, five, _ = out["load_average"]
    print(f"load average after the runs: {one:.1f} (1 min), {five:.1f} (5 min): CPU-second "
          f"figures drop when other work shares the cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())

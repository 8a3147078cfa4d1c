"""Bring-up and teardown time of whole fabrics (root).

Prints figures, not a verdict::

    python benchmarks/bringup.py [TOPOLOGY ...] [--repeat N] [--program p4src/fabric.p4] [--json]

For each topology (default: quickstart, rail-4x4, rail-8x8) and each
repetition: wall time from ``FabricNetwork.start()`` until every switch
serves gRPC, the phases of that (plan, Mininet nodes, veth links, host
configuration, waiting for the switches) and the teardown time. Switches
start with ``--no-p4`` unless ``--program`` gives a P4 file, which is then
compiled once and every switch loads it at start.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from emulator.network import FabricNetwork, NetworkOptions
from emulator.topology import counts, load_topology

REPO = Path(__file__).resolve().parents[1]
DEFAULT_TOPOLOGIES = ("quickstart", "rail-4x4", "rail-8x8")
PHASES = ("plan_s", "nodes_s", "links_s", "hosts_s", "switches_ready_s")


def measure(topology_name: str, device_config: bytes | None, timeout_s: float) -> dict:
    path = Path(topology_name)
    if not path.exists():
        path = REPO / "topologies" / f"{topology_name}.yaml"
    topology = load_topology(path)
    net = FabricNetwork(topology, device_config=device_config,
                        options=NetworkOptions(start_timeout_s=timeout_s))
    started = time.perf_counter()
    net.start()
    up_s = time.perf_counter() - started
    started = time.perf_counter()
    net.stop()
    down_s = time.perf_counter() - started
    size = counts(topology)
    return {"topology": topology.name, "switches": size["switches"], "hosts": size["hosts"],
            "nics": size["gpus"], "bringup_s": round(up_s, 2), "teardown_s": round(down_s, 2),
            **{phase: round(net.timings.get(phase, 0.0), 2) for phase in PHASES}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topologies", nargs="*", default=list(DEFAULT_TOPOLOGIES),
                        help="names in topologies/ or YAML files")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--program", help="P4 file every switch starts with")
    parser.add_argument("--timeout", type=float, default=120.0, help="switch start timeout, s")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("bringup.py: needs root (namespaces, veth pairs)", file=sys.stderr)
        return 2
    device_config = None
    if args.program:
        from emulator.p4.device import make_device_config

        device_config, _ = make_device_config(args.program)
    runs = [measure(name, device_config, args.timeout)
            for name in args.topologies for _ in range(args.repeat)]
    if args.json:
        print(json.dumps(runs))
        return 0
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}; "
          f"switches {'with ' + args.program if args.program else 'without a program (--no-p4)'}")
    print(f"{'topology':12} {'sw':>3} {'hosts':>5} {'nics':>4}  {'up s':>6} {'down s':>6}   "
          + " ".join(f"{p[:-2]:>8}" for p in PHASES))
    for run in runs:
        print(f"{run['topology']:12} {run['switches']:>3} {run['hosts']:>5} {run['nics']:>4}  "
              f"{run['bringup_s']:>6.2f} {run['teardown_s']:>6.2f}   "
              + " ".join(f"{run[p]:>8.2f}" for p in PHASES))
    for name in dict.fromkeys(r["topology"] for r in runs):
        ups = [r["bringup_s"] for r in runs if r["topology"] == name]
        downs = [r["teardown_s"] for r in runs if r["topology"] == name]
        print(f"{name}: bring-up median {statistics.median(ups):.2f} s (max {max(ups):.2f}), "
              f"teardown median {statistics.median(downs):.2f} s (max {max(downs):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Time to a running, programmed fabric (root): compile fabric.p4, bring the
Mininet network up, push the pipeline to every switch over P4Runtime, write
every switch's entries, configure queues; then teardown.

Prints figures, not a verdict::

    python benchmarks/fabric_up.py [TOPOLOGY ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from emulator.run.session import FabricSession
from emulator.topology import load_topology

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("topologies", nargs="*", default=["quickstart", "rail-4x4", "rail-8x8"])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    for name in args.topologies:
        path = Path(name) if Path(name).exists() else REPO / "topologies" / f"{name}.yaml"
        session = FabricSession(load_topology(path))
        with session:
            timings = dict(session.timings)
            t0 = time.perf_counter()
        timings["teardown_s"] = round(time.perf_counter() - t0, 3)
        rows.append({"topology": name, **timings})
    if args.json:
        print(json.dumps(rows))
    else:
        for row in rows:
            print("  ".join(f"{k}={v}" for k, v in row.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())

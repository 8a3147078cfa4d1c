"""htsim's canonical case on the virtual clock: a permutation of 2 MB flows
over a k-ary fat-tree (k = 8: 128 hosts), 100 Gb/s and 1 us a hop, MTU 4096,
PFC on the RoCE priority (buffer 400KB, xoff 60KB, xon 48KB), ECN and DCQCN
off (``--dcqcn``: on). Prints lossless drops, flows done, FCT median / p99 /
max and the wall time, as JSON. The k = 4 twin runs in the test suite
(tests/unit/sim/test_sim_buffers.py); k = 8 takes about a minute (PFC only)
to two and a half (DCQCN) on one core here. Run from the repository root::

    .venv/bin/python benchmarks/permutation_fat_tree.py [--k 8] [--dcqcn] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.unit.sim.sim_kit import fat_tree_permutation, fct_summary, run  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, default=8)
    parser.add_argument("--dcqcn", action="store_true")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    data = fat_tree_permutation(args.k, dcqcn=args.dcqcn, seed=args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        results = run(data, Path(tmp))
        summary = fct_summary(results)
        summary["wall_s"] = round(time.perf_counter() - start, 1)
        summary["drops_by_reason"] = {
            name: ports["_drops_by_reason"] for name, ports in results["switches"].items()
            if ports.get("_drops_by_reason")}
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

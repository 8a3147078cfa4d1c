"""CPU µs per frame of the built-in switch's data path around the P4
executor, on a programmed fabric.p4 leaf of the virtual-time fabric.

The harness is :func:`emulator.budget.calibrate.measure_switch_us`'s:
RoCEv2 WRITE frames of ``--frame-bytes`` enter the host port of srv0/gpu0
(``rx_link`` on, as a live host port receives) one at a time, each with
``dp.receive(port, frame, now); dp.run_due(now)``, so every frame takes the
whole path: rx → ARRIVE → ingress → cut-through enqueue → egress → TX_DONE
→ DELIVER → transmit (fidelity accounting, the port's send, counters). One
difference: the egress port (to srv1/gpu0) sends into a discarding sink, not
the sim's link (which would keep every frame in an engine heap that never
runs here); the leaf is calibrate's (:func:`calibration_leaf`).

Two figures, each the least of ``--repeats`` runs of CPU time
(``time.process_time``: other work on the machine only adds to it):

- ``total_us``: with the real executor (what calibrate measures);
- ``dataplane_us``: the executor replaced by a replay of the results it
  gave for that frame (same ProcessResult objects, no P4 run), so what is
  left is the data path alone, its working set warm in the caches;
- ``executor_us``: ``ingress()`` + ``egress()`` of the same frame alone, in
  a loop; ``around_us`` = ``total_us`` - ``executor_us``, the data path as
  it costs next to the executor (caches shared, the collector's passes
  over the executor's objects).

``--profile N`` prints the N costliest functions (cProfile, cumulative) of
a data-path-only run; ``--executor cython`` runs fabric.p4 compiled
(:mod:`emulator.p4.exec.compiled`). No root needed. Run from the repository root::

    .venv/bin/python benchmarks/dataplane_path.py [--frames 5000] [--json]
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from emulator.budget.calibrate import calibration_leaf  # noqa: E402

ROCE_HEADERS = 58  # bytes of a RoCEv2 WRITE frame around its payload (Eth, IPv4, UDP, BTH, ICRC)


class ReplayPipeline:
    """Gives back, for every packet, the results ``real`` gave for the first
    one (ingress and egress): the data plane's work without the executor's."""

    def __init__(self, real: Any, port: int, frame: bytes) -> None:
        self.clock_us = getattr(real, "clock_us", None) or real._clock_us
        self.priority_queues = real.priority_queues
        self.program = real.program   # what a Switch logs when it loads one
        self.tables = real.tables
        self._ingress = real.ingress(port, frame, 0, None)
        item = self._ingress.queued[0]
        from emulator.p4.exec.pipeline import QueueInfo
        self._egress = real.egress(item, QueueInfo(0, 0, None))

    def ingress(self, port: int, data: bytes, instance_type: int = 0,
                preserved: dict | None = None) -> Any:
        return self._ingress

    def egress(self, item: Any, queue: Any = None) -> Any:
        return self._egress


def run_frames(dp: Any, port: int, frame: bytes, frames: int, now: float, gap_s: float) -> float:
    receive = dp.receive
    run_due = dp.run_due
    for _ in range(frames):
        now += gap_s
        receive(port, frame, now)
        run_due(now)
    return now


def run_executor(pipe: Any, port: int, frame: bytes, frames: int) -> None:
    from emulator.p4.exec.pipeline import QueueInfo

    ingress = pipe.ingress
    egress = pipe.egress
    for _ in range(frames):
        egress(ingress(port, frame, 0, None).queued[0], QueueInfo(0, 0, None))


def measure_executor(frame_bytes: int, frames: int, repeats: int) -> float:
    """Least CPU µs per frame of the executor alone (ingress + egress)."""
    with calibration_leaf(frame_bytes - ROCE_HEADERS) as leaf:
        pipe, port, frame = leaf.pipeline, leaf.port, leaf.frame
        run_executor(pipe, port, frame, 300)
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            run_executor(pipe, port, frame, frames)
            best = min(best, time.process_time() - start)
    return best / frames * 1e6


def measure(frame_bytes: int, frames: int, repeats: int, replay: bool,
            profile: int = 0) -> float:
    """Least CPU µs per frame over ``repeats`` runs of ``frames`` through
    the data plane."""
    with calibration_leaf(frame_bytes - ROCE_HEADERS) as leaf:
        dp, port, frame = leaf.dataplane, leaf.port, leaf.frame
        if replay:
            dp.set_pipeline(ReplayPipeline(dp.pipeline, port, frame))
        gap_s = (frame_bytes + 24) * 8 / 100e9 * 1.5  # each frame leaves before the next
        now = run_frames(dp, port, frame, 300, 1.0, gap_s)  # warm up
        if profile:
            prof = cProfile.Profile()
            prof.enable()
            run_frames(dp, port, frame, frames, now, gap_s)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(profile)
            return 0.0
        best = float("inf")
        for _ in range(repeats):
            start = time.process_time()
            now = run_frames(dp, port, frame, frames, now, gap_s)
            best = min(best, time.process_time() - start)
        assert leaf.sink.sent >= frames * repeats, "frames did not leave the switch"
    return best / frames * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frame-bytes", type=int, action="append",
                        help="frame size (repeatable; default 1024)")
    parser.add_argument("--profile", type=int, default=0, metavar="N",
                        help="cProfile a data-path-only run, print the N costliest functions")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--executor", choices=("python", "cython"),
                        help="what runs fabric.p4's code (default: $AIFABRIC_P4_EXECUTOR, "
                             "else python)")
    args = parser.parse_args()
    if args.executor:
        from emulator.p4.exec.pipeline import EXECUTOR_ENV
        os.environ[EXECUTOR_ENV] = args.executor
    results = []
    for size in args.frame_bytes or [1024]:
        if args.profile:
            measure(size, args.frames, 1, True, args.profile)
            continue
        dataplane_us = measure(size, args.frames, args.repeats, True)
        total_us = measure(size, args.frames, args.repeats, False)
        executor_us = measure_executor(size, args.frames, args.repeats)
        with calibration_leaf(size - ROCE_HEADERS) as leaf:
            executor = leaf.pipeline.executor
        results.append({"frame_bytes": size, "executor": executor,
                        "dataplane_us": round(dataplane_us, 2),
                        "total_us": round(total_us, 2), "executor_us": round(executor_us, 2),
                        "around_us": round(total_us - executor_us, 2),
                        "clock": "cpu (process_time, least of repeats)",
                        "load_average": round(os.getloadavg()[0], 2)})
    if args.profile:
        return 0
    if args.json:
        print(json.dumps(results if len(results) > 1 else results[0]))
    else:
        for result in results:
            for key, value in result.items():
                print(f"{key:>14}: {value}")
            print()
    return 0


if __name__ == "__main__":
    sys.exit(main())

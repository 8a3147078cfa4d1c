"""Where the virtual-time target spends its CPU: one load (the k-ary
fat-tree permutation or benchmarks/sim_speed.py's ring shift) run on one
engine, its output folder kept, its hops per CPU second printed and, with
``--profile``, cProfile's top functions by own time in the engine's runs
(setup, compiles and plots left out):

    python benchmarks/sim_profile.py --load permutation --k 4 --out /tmp/run-a [--profile]
    python benchmarks/sim_profile.py --compare /tmp/run-a /tmp/run-b
    python benchmarks/sim_profile.py --load permutation --k 4 --size 400KB --bytecodes

``--bytecodes`` counts the Python bytecodes the engine's runs execute
(``sys.settrace`` with opcode events; about 7x slower), per hop and by
function: a figure of the code alone, the same on every machine and every
run, where CPU time on a shared machine moves by 15 % or more from run to
run. Bytecodes are not all equal (a C call such as ``struct.pack`` is one),
so confirm a change that moves them with a timed figure
(``benchmarks/dataplane_path.py`` takes the least of several runs).

``--callgrind`` runs the same load under valgrind's callgrind, counting
the machine instructions of the engine's runs only (needs valgrind and the
compiled engine, ``python -m emulator.speedups build``; about 50x slower):
instructions per hop, the same on every run of the same code, for the
compiled code that ``--bytecodes`` cannot see. The counts are kept beside
the output folder (``OUT.callgrind``) for ``callgrind_annotate``.

``--compare`` checks that two output folders hold the same bytes, machine
figures aside (results.json's wall/CPU times and per-second rates), so a
speed change can be shown to change no result.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import pstats
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

MACHINE_KEYS = ("wall", "cpu", "per_s", "per_wall", "per_cpu", "seconds_taken", "started", "timings",
                "finished", "host", "python", "p4_executor", "speedups")


def _strip(value: Any) -> Any:
    """``value`` without machine figures (keys naming wall/CPU time or rates)."""
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items()
                if not any(m in k for m in MACHINE_KEYS)}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def generated_summary(stats: pstats.Stats, top: int) -> str:
    """The generated P4 code's functions (``<p4 PROGRAM SWITCH>``), every
    switch's summed per program and function: calls, own and cumulative s."""
    sums: dict[tuple[str, str], list[float]] = {}
    for (filename, _line, fn), (_cc, calls, tottime, cumtime, _callers) in \
            stats.stats.items():  # type: ignore[attr-defined]
        if not filename.startswith("<p4 "):
            continue
        program = filename[4:-1].split(" ")[0]
        row = sums.setdefault((program, fn), [0, 0.0, 0.0])
        row[0] += calls
        row[1] += tottime
        row[2] += cumtime
    lines = ["generated P4 code, all switches summed:",
             f"{'calls':>10} {'own s':>8} {'cum s':>8}  function"]
    for (program, fn), (calls, own, cum) in sorted(sums.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{int(calls):>10} {own:>8.3f} {cum:>8.3f}  {program}:{fn}")
    return "\n".join(lines)


def compare(a: Path, b: Path) -> list[str]:
    """Files that differ between run folders ``a`` and ``b``."""
    names = sorted({p.relative_to(a) for p in a.rglob("*") if p.is_file()}
                   | {p.relative_to(b) for p in b.rglob("*") if p.is_file()})
    diffs = []
    for name in names:
        pa, pb = a / name, b / name
        if not (pa.exists() and pb.exists()):
            diffs.append(f"{name}: only in {'a' if pa.exists() else 'b'}")
        elif name.suffix == ".json":
            if _strip(json.loads(pa.read_text())) != _strip(json.loads(pb.read_text())):
                diffs.append(f"{name}: differs beyond machine figures")
        elif name.suffix in (".png", ".html", ".log"):
            continue
        elif pa.read_bytes() != pb.read_bytes():
            diffs.append(f"{name}: bytes differ")
    return diffs


class BytecodeCounter:
    """Bytecodes executed while :meth:`on` is the trace function, per
    (file, function)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}

    def on(self, frame: Any, event: str, _arg: Any) -> Any:
        frame.f_trace_opcodes = True
        if event == "opcode":
            code = frame.f_code
            key = (code.co_filename, code.co_name)
            self.counts[key] = self.counts.get(key, 0) + 1
        return self.on

    def report(self, hops: int, top: int) -> str:
        total = sum(self.counts.values())
        lines = [f"{total / hops:,.1f} bytecodes per hop [deterministic count], by function:"]
        for (filename, name), n in sorted(self.counts.items(), key=lambda kv: -kv[1])[:top]:
            where = filename.rsplit("/", 1)[-1]
            lines.append(f"{n / hops:10.1f}  {where}:{name}")
        return "\n".join(lines)


# The compiled engine's event loop (Engine._run as Cython names its C function):
# callgrind counts from its entry to its return.
ENGINE_RUN_SYMBOL = "__pyx_f_8emulator_3sim_6engine_6Engine__run"


def callgrind(argv: list[str], out: Path) -> str:
    """Run this script with ``argv`` (without ``--callgrind``) under
    callgrind, counting the engine's runs only; the report line, or why
    it cannot be had."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return "--callgrind needs valgrind (apt install valgrind)"
    from emulator import speedups
    import emulator.sim.engine  # noqa: F401  (imported: loaded() looks at sys.modules)
    if "emulator.sim.engine" not in speedups.loaded():
        return ("--callgrind needs the compiled engine, which runs as Python here: "
                f"python -m emulator.speedups build (and {speedups.ENV} not 0)")
    counts = Path(f"{out}.callgrind")
    done = subprocess.run(
        [valgrind, "--tool=callgrind", f"--callgrind-out-file={counts}", "--collect-atstart=no",
         f"--toggle-collect={ENGINE_RUN_SYMBOL}", sys.executable, __file__, *argv],
        capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return f"valgrind failed (rc {done.returncode}): {done.stderr.strip().splitlines()[-1:]}"
    total = next((int(line.split()[1]) for line in counts.read_text().splitlines()
                  if line.startswith(("summary:", "totals:"))), None)
    if not total:
        return f"no instructions counted in {ENGINE_RUN_SYMBOL} ({counts})"
    hops = json.loads((out / "results.json").read_text())["sim"]["hops"]
    return (f"{hops} hops, {total:,} instructions in the engine's runs, {total / hops:,.0f} "
            f"per hop [count: callgrind, deterministic]; details: callgrind_annotate {counts}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--load", default="permutation", help="permutation or ring")
    parser.add_argument("--k", type=int, default=4, help="fat-tree k of the permutation")
    parser.add_argument("--gpus", type=int, default=16, help="GPUs of the ring shift")
    parser.add_argument("--out", type=Path, default=Path("/tmp/sim-profile"))
    parser.add_argument("--size", default="2MB", help="bytes per flow of the permutation")
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--bytecodes", action="store_true",
                        help="count the bytecodes the engine runs (deterministic)")
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime", help="pstats order: tottime, cumtime, ...")
    parser.add_argument("--callgrind", action="store_true",
                        help="count the engine's machine instructions under valgrind (deterministic)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("A", "B"))
    args = parser.parse_args()
    if args.callgrind:
        line = callgrind([a for a in sys.argv[1:] if a != "--callgrind"], args.out)
        print(f"{args.load}: {line}")
        return 0 if "[count: callgrind" in line else 1
    if args.compare:
        diffs = compare(*args.compare)
        print("\n".join(diffs) if diffs else "same outputs (machine figures aside)")
        return 1 if diffs else 0
    from emulator.run.sim import run_sim
    from emulator.scenario.loader import scenario_from_dict
    if args.load == "permutation":
        from tests.unit.sim.sim_kit import fat_tree_permutation
        from emulator.scenario.units import parse_size_bytes
        data = fat_tree_permutation(args.k, dcqcn=False, size_bytes=parse_size_bytes(args.size))
    else:
        from benchmarks.sim_speed import ring_shift
        data = ring_shift(args.gpus, "256KB")
    scenario = scenario_from_dict(data, f"<{args.load}>")
    prof = cProfile.Profile() if args.profile else None
    counter = BytecodeCounter() if args.bytecodes else None
    if counter is not None or prof:
        # only the engine's runs (the events), not setup, P4 compiles or plots;
        # a subclass, not a patch (Engine may be an extension type)
        import emulator.sim.engine as engine_module
        import emulator.sim.links  # noqa: F401  (its types import the real Engine first)
        plain = engine_module.Engine

        class Measured(plain):  # type: ignore[misc, valid-type]
            def _run(self, *a: Any) -> float:
                if counter is not None:
                    sys.settrace(counter.on)
                if prof is not None:
                    prof.enable()
                try:
                    return super()._run(*a)
                finally:
                    if prof is not None:
                        prof.disable()
                    sys.settrace(None)
        engine_module.Engine = Measured  # type: ignore[misc]
    results = run_sim(scenario, args.out, progress=False)
    if prof:
        stats = pstats.Stats(prof)
        stats.sort_stats(args.sort).print_stats(args.top)
        print(generated_summary(stats, args.top))
    sim = results["sim"]
    if counter is not None:
        print(counter.report(sim["hops"], args.top))
    print(f"{args.load}: {sim['hops']} hops, {sim['cpu_s']:.2f} s CPU, "
          f"{sim['hops_per_cpu_s']} hops per CPU second [CPU]")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The engine, links, data plane and NIC agents compiled (emulator.speedups)
or run as Python: the same results.json (machine figures aside), CSVs and
pcaps, on the scenario with every kind of event the ranks must agree on
(PFC, DCQCN, a link down and up, a pause storm, a stopped flow, captures)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from emulator import speedups
from emulator.speedups.build import build
from emulator.speedups.toolchain import missing

from test_sim_ranks import compare_runs, everything_scenario

ROOT = Path(__file__).resolve().parents[3]


def _run(scenario_file: Path, out: Path, on: bool) -> dict:  # type: ignore[type-arg]
    env = {**os.environ, "PYTHONPATH": str(ROOT), speedups.ENV: "1" if on else "0"}
    done = subprocess.run([sys.executable, "-m", "emulator.cli.main", "run", str(scenario_file),
                           "--target", "sim", "--out", str(out), "--no-progress"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return json.loads((out / "results.json").read_text())


@pytest.mark.skipif(missing() is not None, reason=f"cannot build extensions: {missing()}")
def test_compiled_and_python_modules_give_the_same_bytes(tmp_path: Path) -> None:
    build()  # what make setup did (at once where it did)
    scenario_file = tmp_path / "everything.yaml"
    scenario_file.write_text(yaml.safe_dump(everything_scenario()))
    compiled = _run(scenario_file, tmp_path / "compiled", on=True)
    python = _run(scenario_file, tmp_path / "python", on=False)
    assert compiled["sim"]["speedups"] == "compiled"
    assert python["sim"]["speedups"] == f"python ({speedups.ENV}=0)"
    assert compiled["totals"]["pfc_tx"] > 0 and compiled["totals"]["ecn_marked"] > 0
    problems = compare_runs(tmp_path / "compiled", tmp_path / "python")
    assert problems == [] or problems == ["results.json"], problems
    for results in (compiled, python):
        results.pop("timings", None)
        for key in ("wall_s", "cpu_s", "events_per_wall_s", "hops_per_wall_s",
                    "hops_per_cpu_s", "speedups"):
            results["sim"].pop(key)
    assert compiled == python

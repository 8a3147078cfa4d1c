"""The virtual-time target is deterministic: the same file and seed give
byte-identical results.json (wall-clock fields aside), flows.csv, series and
pcaps, in separate processes with different hash seeds; another seed draws
other ECN marks."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from emulator.speedups.toolchain import missing

from sim_kit import scenario, topology

REPO = Path(__file__).resolve().parents[3]
WALL_CLOCK = ("timings",)
WALL_CLOCK_SIM = ("wall_s", "cpu_s", "events_per_wall_s", "hops_per_wall_s", "hops_per_cpu_s")


def _incast(seed: int) -> dict:  # type: ignore[type-arg]
    return scenario("det", topology(3, 1, rate="100Gbps", delay="1us"),
                    {"generators": [{"kind": "incast", "id": "in", "senders": ["srv[0-1]/gpu0"],
                                     "receiver": "srv2/gpu0", "size": "1MB", "start": "0s",
                                     "stagger": "1us"}]},
                    duration="400us", seed=seed,
                    switches={"buffer": "2MB", "ecn": {"kmin": "10KB", "kmax": "200KB",
                                                       "pmax": 0.5}},
                    capture={"ports": ["leaf-r0-0:3", "srv0/gpu0"], "max_packets": 100000})


def _run(tmp: Path, name: str, data: dict, hash_seed: str,  # type: ignore[type-arg]
         *options: str) -> Path:
    source = tmp / f"{name}.yaml"
    source.write_text(yaml.safe_dump(data))
    out = tmp / name
    subprocess.run([sys.executable, "-m", "emulator.cli.main", "run", str(source),
                    "--out", str(out), "--no-progress", *options], cwd=REPO, check=False,
                   capture_output=True, timeout=300,
                   env={**os.environ, "PYTHONHASHSEED": hash_seed})
    assert (out / "results.json").exists(), f"no results in {out}"
    return out


def _results(out: Path) -> dict:  # type: ignore[type-arg]
    results = json.loads((out / "results.json").read_text())
    for key in WALL_CLOCK:
        results.pop(key)
    for key in WALL_CLOCK_SIM:
        results["sim"].pop(key)
    return results


def test_same_file_and_seed_give_the_same_bytes(tmp_path: Path) -> None:
    a = _run(tmp_path, "a", _incast(7), "1")
    b = _run(tmp_path, "b", _incast(7), "12345")
    ra, rb = _results(a), _results(b)
    assert ra["totals"]["ecn_marked"] > 0  # the random stream is in play
    assert ra == rb
    for name in ("flows.csv", "ports.csv", "links.csv", "queues.csv", "series.csv",
                 "rates.csv", "pauses.csv", "pcaps/leaf-r0-0-p3.pcap", "pcaps/srv0-gpu0.pcap"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    c = _run(tmp_path, "c", _incast(8), "1")
    assert (a / "pcaps/leaf-r0-0-p3.pcap").read_bytes() != \
        (c / "pcaps/leaf-r0-0-p3.pcap").read_bytes()


def test_the_p4_executors_give_the_same_bytes(tmp_path: Path) -> None:
    """The switches' P4 code compiled (Cython) or run as Python: the same
    results, CSVs and pcaps; results.json says which ran it."""
    py = _run(tmp_path, "py", _incast(7), "1", "--executor", "python")
    cy = _run(tmp_path, "cy", _incast(7), "1")  # auto: Cython where it can be built
    rp, rc = _results(py), _results(cy)
    assert rp["sim"].pop("p4_executor") == "python"
    executor = rc["sim"].pop("p4_executor")
    rc["sim"].pop("p4_executor_note", None)
    assert executor == "cython" or missing() is not None, executor
    assert rp == rc
    for name in ("flows.csv", "ports.csv", "links.csv", "queues.csv", "series.csv",
                 "rates.csv", "pauses.csv", "pcaps/leaf-r0-0-p3.pcap", "pcaps/srv0-gpu0.pcap"):
        assert (py / name).read_bytes() == (cy / name).read_bytes(), name

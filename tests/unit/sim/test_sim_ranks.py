"""One sim run over several MPI ranks gives the same results as on one
engine, to the byte: results.json (but for the machine's figures), every
CSV, every pcap and the agents' stats, for 1, 2, 3 and 4 ranks on this
2-core machine (oversubscribed). A partition that cannot run, and a rank
that fails, each stop the run with one line on every rank.

The ranks run as ``mpiexec -n N python -m emulator.cli.main run ...`` (Open
MPI or MPICH from Debian, mpi4py); where neither is installed the tests
skip with one line (``make setup`` installs them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from emulator.run.sim import run_sim
from emulator.scenario.loader import load_scenario
from emulator.sim.partition import PartitionError, partition
from emulator.topology import build_topology, spec_from_dict

ROOT = Path(__file__).resolve().parents[3]
# What a run's machine or split may change in results.json: everything else
# must be the same to the byte.
MACHINE_FIGURES = ("wall_s", "cpu_s", "events", "events_per_wall_s", "hops_per_wall_s",
                   "hops_per_cpu_s", "ranks", "partition", "per_rank")


def _mpi_missing() -> str | None:
    if shutil.which("mpiexec") is None:
        return "needs an MPI launcher (mpiexec): make setup installs openmpi-bin"
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        return "needs mpi4py: make setup installs python3-mpi4py"
    return None


needs_mpi = pytest.mark.skipif(_mpi_missing() is not None, reason=_mpi_missing() or "")

FAT_TREE = {"name": "ft4", "kind": "fat-tree", "k": 4,
            "host_link": {"rate": "10Gbps", "delay": "1us"},
            "fabric_link": {"rate": "10Gbps", "delay": "1us"}}


def everything_scenario() -> dict:
    """Cross-pod flows on a k=4 fat-tree with every kind of event and both
    kinds of capture, PFC and DCQCN on: what the ranks must agree on."""
    return {
        "name": "ranks", "target": "sim", "seed": 7, "duration": "5ms",
        "topology": FAT_TREE,
        "switches": {"pfc": {"enabled": True}, "ecn": {"kmin": "20KB", "kmax": "80KB"}},
        "hosts": {"dcqcn": {"enabled": True}},
        "workload": {
            "flows": [
                {"id": "a", "src": "srv0/gpu0", "dst": "srv15/gpu0", "size": "600KB"},
                {"id": "b", "src": "srv1/gpu0", "dst": "srv15/gpu0", "size": "600KB"},
                {"id": "c", "src": "srv4/gpu0", "dst": "srv15/gpu0", "size": "600KB",
                 "start": "100us"},
                {"id": "d", "src": "srv9/gpu0", "dst": "srv2/gpu0", "size": "unlimited"},
                {"id": "e", "src": "srv12/gpu0", "dst": "srv6/gpu0", "size": "400KB"}],
        },
        "events": [
            {"at": "500us", "kind": "stop_flow", "flow": "d"},
            {"at": "300us", "kind": "link_down", "link": ["edge-p1-0", "agg-p1-0"]},
            {"at": "900us", "kind": "link_up", "link": ["edge-p1-0", "agg-p1-0"]},
            {"at": "200us", "kind": "pfc_storm_start", "gpu": "srv3/gpu0"},
            {"at": "400us", "kind": "pfc_storm_stop", "gpu": "srv3/gpu0"}],
        "capture": {"ports": ["edge-p3-1:2", "srv0/gpu0", "core0:1"], "max_packets": 300},
    }


def normalised(results: dict) -> dict:
    results = json.loads(json.dumps(results))
    results.pop("timings", None)
    for key in MACHINE_FIGURES:
        results.get("sim", {}).pop(key, None)
    return results


def compare_runs(one: Path, other: Path) -> list[str]:
    """What differs between two runs' folders (nothing, when the same)."""
    problems = []
    if normalised(json.loads((one / "results.json").read_text())) != \
            normalised(json.loads((other / "results.json").read_text())):
        problems.append("results.json")
    for path in sorted(one.rglob("*")):
        if path.is_file() and (path.suffix in (".csv", ".pcap")
                               or path.name.endswith((".stats.json", ".config.json"))):
            twin = other / path.relative_to(one)
            if not twin.is_file():
                problems.append(f"missing {path.relative_to(one)}")
            elif twin.read_bytes() != path.read_bytes():
                problems.append(f"differs {path.relative_to(one)}")
    return problems


def mpi_run(scenario_file: Path, out: Path, ranks: int, *extra: str,
            timeout_s: float = 600) -> subprocess.CompletedProcess:
    """``aifabric run --ranks N`` (which starts mpiexec itself)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "emulator.cli.main", "run", str(scenario_file),
                           "--target", "sim", "--out", str(out), "--no-progress",
                           "--ranks", str(ranks), *extra],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout_s)


@pytest.fixture(scope="module")
def one_engine(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    base = tmp_path_factory.mktemp("ranks")
    data = everything_scenario()
    scenario_file = base / "ranks.yaml"
    scenario_file.write_text(yaml.safe_dump(data))
    out = base / "one"
    results = run_sim(load_scenario(scenario_file), out, progress=False)
    return scenario_file, out, results


def test_the_scenario_exercises_what_the_ranks_must_agree_on(one_engine) -> None:
    _, out, results = one_engine
    kinds = [e["kind"] for e in results["events"]]
    assert sorted(kinds) == sorted(["stop_flow", "link_down", "link_up", "pfc_storm_start",
                                    "pfc_storm_stop"])
    assert results["sim"]["ranks"] == 1
    assert all(c["packets"] > 0 for c in results["captures"].values())
    assert results["totals"]["pfc_tx"] > 0 and results["totals"]["ecn_marked"] > 0
    assert sum(1 for f in results["flows"] if f["completed"]) >= 4


@needs_mpi
@pytest.mark.parametrize("ranks", [1, 2, 3, 4])
def test_every_rank_count_gives_the_same_results(one_engine, tmp_path: Path, ranks: int) -> None:
    scenario_file, one, _ = one_engine
    out = tmp_path / f"ranks-{ranks}"
    done = mpi_run(scenario_file, out, ranks)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert compare_runs(one, out) == []
    results = json.loads((out / "results.json").read_text())
    sim = results["sim"]
    assert sim["ranks"] == ranks
    if ranks > 1:
        per_rank = sim["per_rank"]
        assert [r["rank"] for r in per_rank] == list(range(ranks))
        assert sum(r["hops"] for r in per_rank) == sim["hops"]
        assert sim["partition"]["lookahead_s"] == pytest.approx(1e-6)
        assert all(r["windows"] > 0 for r in per_rank)


@needs_mpi
def test_a_file_partition_gives_the_same_results_too(one_engine, tmp_path: Path) -> None:
    scenario_file, one, _ = one_engine
    topo = build_topology(spec_from_dict(FAT_TREE))
    # every other switch and server on the other rank: many cut links
    ranks = {0: [], 1: []}
    for i, sw in enumerate(topo.switches):
        ranks[i % 2].append(sw.name)
    for i, server in enumerate(topo.servers):
        ranks[(i + 1) % 2].append(server.name)
    part = tmp_path / "split.yaml"
    part.write_text(yaml.safe_dump(ranks))
    out = tmp_path / "file"
    done = mpi_run(scenario_file, out, 2, "--partition", str(part))
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert compare_runs(one, out) == []


def test_auto_partition_keeps_pods_together_and_balances_the_work() -> None:
    topo = build_topology(spec_from_dict(FAT_TREE))
    from emulator.sim.partition import FlowLoad
    flows = [FlowLoad(f"srv{s}/gpu0", f"srv{(s + 4) % 16}/gpu0", 1000.0) for s in range(16)]
    part = partition(topo, 4, flows)
    for pod in range(4):
        members = [sw.name for sw in topo.switches if sw.pod == pod]
        members += [s.name for s in topo.servers if s.pod == pod]
        assert len({part.rank_of[name] for name in members}) == 1, pod
    assert max(part.work) <= 1.5 * min(part.work)
    assert part.lookahead_s == pytest.approx(1e-6)
    fine = partition(topo, 4, flows, "switch")
    assert len(fine.cut_links) > len(part.cut_links)


def test_a_cut_link_without_delay_is_refused_naming_it() -> None:
    topo = build_topology(spec_from_dict({**FAT_TREE, "fabric_link": {"rate": "10Gbps",
                                                                       "delay": "0ns"}}))
    with pytest.raises(PartitionError, match=r"link edge-p\d-\d:\d<->agg-p\d-\d:\d joins rank "
                                             r"\d and rank \d with no delay"):
        partition(topo, 2, [], "switch")
    assert partition(topo, 1, []).cut_links == []


@pytest.mark.parametrize("content, message", [
    ({0: ["core0"]}, "no rank for"),
    ({0: ["core0", "core0"]}, "placed twice"),
    ({0: ["nosuch"]}, "neither a switch nor a server"),
    ({5: ["core0"]}, "rank 5 is not one of 0..1"),
])
def test_partition_files_with_mistakes_get_one_line(tmp_path: Path, content, message) -> None:
    topo = build_topology(spec_from_dict(FAT_TREE))
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(content))
    with pytest.raises(PartitionError, match=message) as err:
        partition(topo, 2, [], path)
    assert "\n" not in str(err.value) and str(path) in str(err.value)


@needs_mpi
def test_zero_lookahead_stops_every_rank_with_one_line(tmp_path: Path) -> None:
    data = {**everything_scenario(), "topology": {**FAT_TREE, "fabric_link": {
        "rate": "10Gbps", "delay": "0ns"}}, "events": []}
    del data["capture"]
    scenario_file = tmp_path / "zero.yaml"
    scenario_file.write_text(yaml.safe_dump(data))
    done = mpi_run(scenario_file, tmp_path / "out", 2, "--partition", "switch", timeout_s=120)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.startswith("aifabric:")]
    assert lines and all("with no delay" in line for line in lines)
    assert "Traceback" not in done.stderr


@needs_mpi
def test_a_rank_that_fails_stops_the_others(tmp_path: Path) -> None:
    """A component of rank 1 raises in the middle of the run: rank 0 does
    not wait for it forever, both say what rank 1 said."""
    script = tmp_path / "fail.py"
    script.write_text(
        "from mpi4py import MPI\n"
        "from emulator.sim.engine import Engine\n"
        "from emulator.sim.parallel import RankError, run_windows\n"
        "comm = MPI.COMM_WORLD\n"
        "engine = Engine()\n"
        "def boom(now):\n"
        "    raise ValueError('the switch fell over')\n"
        "engine.every(1e-6, lambda now: None)\n"
        "if comm.Get_rank() == 1:\n"
        "    engine.call_at(5e-6, boom)\n"
        "try:\n"
        "    run_windows(engine, comm, 1e-3, 1e-6, {}, {})\n"
        "except RankError as exc:\n"
        f"    open(f'{tmp_path}/rank{{comm.Get_rank()}}.txt', 'w').write(f'stopped: {{exc}}')\n")
    from emulator.run.mpi import mpiexec_command
    done = subprocess.run(mpiexec_command(2, [sys.executable, str(script)]), cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)
    stopped = [(tmp_path / f"rank{r}.txt") for r in (0, 1)]
    assert all(path.is_file() for path in stopped), done.stdout + done.stderr
    assert all("rank 1: ValueError: the switch fell over" in path.read_text()
               for path in stopped)


@needs_mpi
def test_ctrl_c_on_one_rank_stops_every_rank_and_progress_follows_the_slowest(
        tmp_path: Path) -> None:
    """Rank 1 gets SIGINT (Ctrl-C) at 50 us of simulated time: both ranks
    leave the windows interrupted, at the same agreement, not a hang. Rank 0
    has its next event 30 us ahead of rank 1's at every step: the time each
    window reports (the progress bar's) is rank 1's, never ahead of it."""
    script = tmp_path / "sigint.py"
    script.write_text(
        "import json, signal\n"
        "from mpi4py import MPI\n"
        "from emulator.sim.engine import Engine\n"
        "from emulator.sim.parallel import run_windows\n"
        "comm = MPI.COMM_WORLD\n"
        "rank = comm.Get_rank()\n"
        "engine = Engine()\n"
        "seen = []\n"
        "if rank == 0:\n"
        "    engine.call_at(30e-6, lambda now: engine.every(1e-6, lambda now: None))\n"
        "else:\n"
        "    engine.every(1e-6, lambda now: None)\n"
        "    engine.call_at(50e-6, lambda now: signal.raise_signal(signal.SIGINT))\n"
        "stats = run_windows(engine, comm, 1e-3, 1e-6, {}, {}, on_window=seen.append)\n"
        f"open(f'{tmp_path}/rank{{rank}}.json', 'w').write(json.dumps(\n"
        "    {'interrupted': stats.interrupted, 'windows': stats.windows, 'seen': seen}))\n")
    from emulator.run.mpi import mpiexec_command
    done = subprocess.run(mpiexec_command(2, [sys.executable, str(script)]), cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True,
                          text=True, timeout=120)
    paths = [tmp_path / f"rank{r}.json" for r in (0, 1)]
    assert all(path.is_file() for path in paths), done.stdout + done.stderr
    zero, one = (json.loads(path.read_text()) for path in paths)
    assert zero["interrupted"] and one["interrupted"]
    assert zero["windows"] == one["windows"] and zero["seen"] == one["seen"]
    assert zero["seen"][0] == 0.0 and zero["seen"] == sorted(zero["seen"])
    assert 49e-6 <= zero["seen"][-1] <= 51e-6, zero["seen"][-1]


def test_ranks_need_the_sim_target(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-m", "emulator.cli.main", "run",
                           "scenarios/quickstart.yaml", "--target", "builtin", "--ranks", "2"],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines()[-1].startswith("aifabric: --ranks and mpiexec run "
                                                           "the virtual clock only")


@needs_mpi
def test_a_run_of_only_sized_work_ends_at_the_same_instant_on_every_rank_count(
        tmp_path: Path) -> None:
    """Without the endless flow (and its stop), the run ends once all flows
    are acknowledged and the switches are empty: a decision the ranks take
    together (their counts summed), so 3 ranks end where one engine does."""
    data = everything_scenario()
    data["workload"]["flows"] = [f for f in data["workload"]["flows"] if f["id"] != "d"]
    data["events"] = [e for e in data["events"] if e["kind"] != "stop_flow"]
    scenario_file = tmp_path / "sized.yaml"
    scenario_file.write_text(yaml.safe_dump(data))
    one = tmp_path / "one"
    results = run_sim(load_scenario(scenario_file), one, progress=False)
    ended = results["ended"]
    assert ended["reason"] == "work done" and 0.0009 <= ended["at_s"] < 0.005, ended
    assert results["totals"]["flows_completed"] == 4
    done = mpi_run(scenario_file, tmp_path / "three", 3)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert compare_runs(one, tmp_path / "three") == []

"""Run records: reservation, contents, liveness, loading (no root)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from emulator.network.cleanup import clean
from emulator.network.errors import NetworkError
from emulator.network.record import FORMAT, RunRecord, load_records


def ids(*values):
    it = iter(values)
    return lambda: next(it)


def test_create_reserves_the_id_and_writes_the_owner(tmp_path):
    record = RunRecord.create(tmp_path, new_id=ids("k3f9"), topology="quickstart",
                              target="builtin")
    data = json.loads((tmp_path / "k3f9.json").read_text())
    assert data["format"] == FORMAT and data["run_id"] == "k3f9" == record.run_id
    assert data["owner"]["pid"] == os.getpid() and data["owner"]["start_time"] > 0
    assert (data["state"], data["topology"], data["target"]) == ("starting", "quickstart",
                                                                 "builtin")
    assert record.owner_alive()


def test_a_taken_id_is_skipped(tmp_path):
    RunRecord.create(tmp_path, new_id=ids("k3f9"))
    second = RunRecord.create(tmp_path, new_id=ids("k3f9", "k3f9", "m2aa"))
    assert second.run_id == "m2aa"


def test_resources_round_trip(tmp_path):
    record = RunRecord.create(tmp_path, new_id=ids("k3f9"))
    record.add_process(os.getpid(), "switch", "leaf-r0-0")
    record.add_netns("afx-k3f9-srv0", "/run/netns/afx-k3f9-srv0", "srv0", 4026532000)
    record.add_interfaces(["afxk3f9s0p1", "afxk3f9s0p2"])
    record.add_interfaces(["afxk3f9s0p2", "afxk3f9s0p3"])
    record.add_file(tmp_path / "x.log", keep=True)
    record.set_state("up")
    record.save()
    loaded = RunRecord.load(record.path)
    assert loaded.data["processes"][0]["role"] == "switch"
    assert loaded.data["processes"][0]["start_time"] is not None
    assert loaded.data["interfaces"] == ["afxk3f9s0p1", "afxk3f9s0p2", "afxk3f9s0p3"]
    assert loaded.data["netns"][0]["inode"] == 4026532000
    assert loaded.data["files"] == [{"path": str(tmp_path / "x.log"), "keep": True}]
    assert loaded.data["state"] == "up"
    assert not list(tmp_path.glob(".*.tmp")), "saved atomically, no temporary left"
    with pytest.raises(ValueError):
        record.add_process(1, "controller", "x")
    record.remove()
    record.remove()
    assert not record.path.exists()


def dead_owner(record: RunRecord) -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    record.data["owner"] = {"pid": child.pid, "start_time": 1}
    record.save()


def test_a_dead_owner_is_detected_even_if_the_pid_is_reused(tmp_path):
    record = RunRecord.create(tmp_path, new_id=ids("k3f9"))
    record.data["owner"]["start_time"] += 1  # same pid (ours), another process
    assert not record.owner_alive()
    dead_owner(record)
    assert not RunRecord.load(record.path).owner_alive()


def test_load_records_sorts_out_broken_ones(tmp_path):
    RunRecord.create(tmp_path, new_id=ids("k3f9"))
    (tmp_path / "zzzz.json").write_text("{not json")
    (tmp_path / "yyyy.json").write_text(json.dumps({"format": "other", "run_id": "yyyy"}))
    records, broken = load_records(tmp_path)
    assert [r.run_id for r in records] == ["k3f9"]
    assert sorted(broken) == [str(tmp_path / "yyyy.json"), str(tmp_path / "zzzz.json")]
    assert load_records(tmp_path / "absent") == ([], [])
    with pytest.raises(NetworkError, match="unreadable"):
        RunRecord.load(tmp_path / "zzzz.json")


def test_clean_removes_a_dead_runs_record_and_temporary_files(tmp_path):
    records = tmp_path / "records"
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    kept = tmp_path / "kept.log"
    kept.write_text("log")
    record = RunRecord.create(records, new_id=ids("q7zz"))
    record.add_file(scratch, keep=False)
    record.add_file(kept, keep=True)
    record.add_interfaces(["afxq7zzs0p1"])  # does not exist: nothing to delete
    dead_owner(record)
    dry = clean(str(records), dry_run=True, run_ids=["q7zz"])
    assert dry.removed == [f"run q7zz: file {scratch}", f"run q7zz: run record {record.path}"]
    assert scratch.exists() and record.path.exists()
    report = clean(str(records), run_ids=["q7zz"])
    assert report.ok and report.removed == dry.removed
    assert not scratch.exists() and not record.path.exists() and kept.exists()


def test_clean_leaves_a_live_run_alone(tmp_path):
    record = RunRecord.create(tmp_path, new_id=ids("q7zy"))
    report = clean(str(tmp_path), run_ids=["q7zy"])
    assert report.removed == [] and report.live_runs == [f"q7zy (pid {os.getpid()})"]
    assert record.path.exists()


def test_clean_removes_scratch_folders_whose_process_is_gone(tmp_path):
    """A sim rank (or the MPI launcher) killed before its ``with`` ended
    leaves ``aifabric-<kind>-<pid>-*``: clean removes it once the pid is
    gone, never a live process's, nor anything else in the folder."""
    from emulator.network.naming import owner_of_scratch, scratch_dir

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    records, scratch = tmp_path / "records", tmp_path / "tmp"
    records.mkdir()
    scratch.mkdir()
    dead = scratch / f"aifabric-rank-{gone.pid}-k2x_9abc"
    (dead / "fabric").mkdir(parents=True)
    (dead / "fabric" / "s0.pcap").write_bytes(b"\0" * 24)
    live = scratch / f"aifabric-mpi-{os.getpid()}-q1w2e3r4"
    live.mkdir()
    others = [scratch / f"aifabric-view-{gone.pid}-abc", scratch / f"aifabric-rank-{gone.pid}",
              scratch / "aifabric-rank-x-abc"]
    for path in others:
        path.mkdir()
    (scratch / f"aifabric-cal-{gone.pid}-file1").write_text("a file, not a folder")
    def scratch_lines(lines):  # (a whole clean: other runs' leftovers are not this test's)
        return [line for line in lines if "scratch folder" in line]
    dry = clean(str(records), dry_run=True, scratch_root=str(scratch))
    assert scratch_lines(dry.removed) == [f"scratch folder {dead} (process {gone.pid} is gone)"]
    assert dead.exists()
    report = clean(str(records), scratch_root=str(scratch))
    assert scratch_lines(report.removed) == scratch_lines(dry.removed)
    assert scratch_lines(report.failed) == []
    assert not dead.exists() and live.exists() and all(path.exists() for path in others)
    with scratch_dir("rank") as made:  # what the runs make is what clean knows
        assert os.path.basename(made).startswith(f"aifabric-rank-{os.getpid()}-")
        assert owner_of_scratch(os.path.basename(made)) == os.getpid()
    assert not os.path.exists(made)
    with pytest.raises(ValueError, match="not one of rank, mpi, cal, bench"):
        scratch_dir("view")

"""``aifabric exercise`` on an exercise in the tutorials' layout
(``tests/tutorial_kit/exercise``, copied per test): the solution answers
every host pair and the skeleton none; files land where the tutorials put
them; the CLI's commands; teardown on SIGTERM, and ``aifabric clean`` after
a SIGKILL."""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulator.network.record import DEFAULT_RECORD_DIR

pytestmark = pytest.mark.root

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "tutorial_kit" / "exercise"
AIFABRIC = str(Path(sys.executable).parent / "aifabric")


@pytest.fixture
def exercise(tmp_path) -> Path:
    directory = tmp_path / f"relay{os.getpid()}"
    shutil.copytree(FIXTURE, directory)
    return directory


def run(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([AIFABRIC, "exercise", *args], capture_output=True, text=True,
                          timeout=timeout)


def leftovers(run_id: str) -> list[str]:
    found = [f"record {run_id}"] if Path(DEFAULT_RECORD_DIR, f"{run_id}.json").exists() else []
    links = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True).stdout
    found += [line.split(":")[1].strip() for line in links.splitlines() if f"afx{run_id}s" in line]
    netns = Path("/run/netns")
    found += [p.name for p in netns.glob(f"afx-{run_id}-*")] if netns.exists() else []
    return found


def test_the_solution_answers_every_pair_and_files_land_where_the_tutorials_put_them(exercise):
    done = run(str(exercise), "--program", str(exercise / "solution" / "relay.p4"), "--check",
               "--json")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr
    assert (summary["pairs"], summary["pairs_ok"], summary["failed"]) == (6, 6, [])
    assert summary["topology"].endswith("line-topo/topology.json")  # the Makefile's TOPO
    assert "s2: programmed from line-topo/s2-runtime.json: 7 table entries" in done.stderr
    assert "note: " not in done.stderr  # every host command worked
    for name in ("build/relay.json", "build/relay.p4.p4info.txtpb", "logs/s1.log",
                 "logs/s3-p4runtime-requests.txt"):
        assert (exercise / name).is_file(), name
    capture = exercise / "pcaps" / "s1-eth1_in.pcap"
    assert capture.is_file() and not capture.is_symlink() and capture.stat().st_size > 24
    assert not list((exercise / "pcaps").glob("afx*"))
    assert leftovers(summary["run_id"]) == []


def test_the_skeleton_answers_no_pair(exercise):
    done = run(str(exercise), "--check", "--json")
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert done.returncode == 1
    assert summary["program"].endswith("relay.p4") and "solution" not in summary["program"]
    assert (summary["pairs"], summary["pairs_ok"]) == (6, 0)
    assert leftovers(summary["run_id"]) == []


def test_mistakes_are_one_line(exercise):
    topology = exercise / "line-topo" / "topology.json"
    data = json.loads(topology.read_text())
    data["hosts"]["h2"]["ipv4"] = data["hosts"]["h2"].pop("ip")
    topology.write_text(json.dumps(data))
    done = run(str(exercise), "--check")
    assert done.returncode == 2
    assert done.stderr.strip() == (f"aifabric: {topology}: hosts.h2: unknown key 'ipv4'; "
                                   "allowed: ip, mac, commands")
    done = run(str(exercise), "--topo", str(exercise / "nope.json"))
    assert done.returncode == 2 and "nope.json: no such file (from --topo)" in done.stderr


def test_cli_commands_on_a_running_exercise(exercise, tmp_path):
    from emulator.cli.exercise_cli import ExerciseCLI
    from emulator.exercise.session import ExerciseSession
    from emulator.exercise.spec import read_exercise

    said: list[str] = []
    with ExerciseSession(read_exercise(exercise, exercise / "solution" / "relay.p4"),
                         say=said.append) as session:
        netns = session.network.netns_name("h1")
        pinged = subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "3", "-i", "0.2",
                                 "-q", "10.0.2.2"], capture_output=True, text=True)
        assert pinged.returncode == 0
        # h1-s1 has 4 ms, s1-s2 1 ms, h2-s2 0 ms: both ways, 10 ms a round trip.
        rtt_min_ms = float(pinged.stdout.strip().splitlines()[-1].split("=")[1].split("/")[0])
        assert 10.0 <= rtt_min_ms < 10.0 + 15.0, pinged.stdout
        subprocess.run(["ip", "netns", "exec", netns, "ping", "-c", "2", "-i", "0.2", "10.0.3.3"],
                       capture_output=True)
        script = tmp_path / "commands"
        script.write_text(f"counters s1\nqueues s1\ncounters s9\ncapture s1:1 2 "
                          f"{tmp_path / 'cap.pcap'}\ncapture s1:9\nh1 ping -c 1 h2\n")
        pinger = subprocess.Popen(["ip", "netns", "exec", netns, "ping", "-c", "20", "-i", "0.2",
                                   "10.0.2.2"], stdout=subprocess.DEVNULL)
        out = io.StringIO()
        with open(script) as stdin:  # Mininet's CLI polls a real file descriptor
            ExerciseCLI(session, script=str(script), stdin=stdin, stdout=out)
        pinger.wait(timeout=15)
        text = out.getvalue()
        described = "\n".join(session.describe())
    assert "RelayIngress.rx_port[1]: packets=" in text
    assert "RelayIngress.routes entry (0a000300/24): packets=" in text  # direct, to h3's /24
    assert "port 1 prio 0: depth" in text
    assert "usage: SWITCH, one of s1, s2, s3" in text
    assert "captured 2 frames on s1:1" in text and "unknown port s1:9" in text
    assert "s1 -> gRPC port 50051, device id 0" in described
    assert "h3: eth0 10.0.3.3/24 08:00:00:00:03:33 (to s3 port 1)" in described


def _wait_up(exercise: Path, proc: subprocess.Popen, timeout_s: float = 120) -> str:
    """The run id of the exercise's run once its record says it is up."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
        for path in Path(DEFAULT_RECORD_DIR).glob("*.json"):
            try:
                record = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if record.get("topology") == exercise.name and record.get("state") == "up":
                return record["run_id"]
        time.sleep(0.2)
    raise AssertionError("the exercise did not come up")


@pytest.mark.parametrize("sig, check", [(signal.SIGTERM, False), (signal.SIGHUP, False),
                                        (signal.SIGINT, True)])
def test_a_signal_tears_the_exercise_down(exercise, sig, check):
    # In the CLI, Ctrl-C only interrupts the command that runs (as in
    # Mininet's CLI); SIGTERM and SIGHUP end the run. Outside it, all do.
    # With --check, the skeleton: no ping answers, so the check runs seconds.
    extra = ["--check"] if check else ["--program", str(exercise / "solution" / "relay.p4")]
    proc = subprocess.Popen([AIFABRIC, "exercise", str(exercise), *extra],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        run_id = _wait_up(exercise, proc)
        time.sleep(0.2 if check else 1.5)  # programming or pinging / in the CLI
        proc.send_signal(sig)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    output = proc.stdout.read() if proc.stdout else ""
    assert proc.returncode == 130, (proc.returncode, output)
    assert leftovers(run_id) == [], output


def test_clean_removes_what_a_killed_exercise_left(exercise):
    proc = subprocess.Popen([AIFABRIC, "exercise", str(exercise), "--program",
                             str(exercise / "solution" / "relay.p4")],
                            stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, text=True)
    try:
        run_id = _wait_up(exercise, proc)
    finally:
        proc.kill()
        proc.wait(10)
    assert leftovers(run_id), "SIGKILL should leave the run behind"
    done = subprocess.run([AIFABRIC, "clean", "--run", run_id], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert leftovers(run_id) == []

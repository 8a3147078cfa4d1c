"""Teardown when things go wrong: a switch killed mid-run, a switch that
cannot start, SIGTERM/SIGINT to the process that owns the network, and
``aifabric clean`` after that process was SIGKILLed."""

from __future__ import annotations

import os
import signal
import time

import pytest

from emulator.cli.main import main as aifabric
from emulator.network import FabricNetwork, NetworkOptions, SwitchDiedError, SwitchStartError
from emulator.network.process import pid_alive
from emulator.topology import load_topology
from tests.root.test_network_support import TOPOLOGIES, ChildRun, leftovers, wait_until

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def topology():
    return load_topology(TOPOLOGIES / "quickstart.yaml")


def test_a_killed_switch_stops_the_run_and_teardown_is_clean(topology):
    with pytest.raises(SwitchDiedError) as info:
        with FabricNetwork(topology) as net:
            run_id, record = net.run_id, str(net.record_path)
            pids = list(net.pids.values())
            os.kill(net.pids["spine0"], signal.SIGKILL)
            time.sleep(10)  # the monitor interrupts this
            pytest.fail("the dead switch went unnoticed")
    error = info.value
    assert error.switch == "spine0" and error.status == -signal.SIGKILL
    assert "switch spine0 was killed by SIGKILL" in str(error)
    assert "spine0.log" in str(error) and "aifabric-switch" in error.log_tail
    assert leftovers(run_id, pids, record) == []


def test_a_switch_that_cannot_start_is_named_with_its_log(topology, tmp_path):
    options = NetworkOptions(start_timeout_s=20)
    with pytest.raises(SwitchStartError) as info:
        with FabricNetwork(topology, workdir=tmp_path, device_config=b"not a device config",
                           options=options):
            pytest.fail("started with a broken device config")
    message = str(info.value)
    assert "exited with status" in message and "before it was ready" in message
    assert any(f"switch {s.name} " in message for s in topology.switches)
    assert "--- last lines of" in message and "device config" in message
    # Outputs stay in the given workdir; nothing else of the run does.
    assert (tmp_path / "switches" / "spine0.out").exists()
    assert not (tmp_path / "device_config.json").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_the_owner_tears_everything_down(sig):
    child = ChildRun()
    assert leftovers(child.run_id, child.pids, child.record) != []
    status = child.signal(sig)
    assert status != 0, child.stderr()
    assert "FabricInterrupted" in child.stderr()
    assert leftovers(child.run_id, child.pids, child.record) == []


def test_clean_removes_a_sigkilled_runs_leftovers(capsys):
    child = ChildRun()
    child.signal(signal.SIGKILL)
    # The switches and the process inside srv0 outlive their owner.
    assert wait_until(lambda: not pid_alive(child.info["pids"]["srv0"]))
    left = leftovers(child.run_id, child.pids, child.record)
    assert any(item.startswith("switch process") for item in left)
    assert any(item.startswith("netns") for item in left)
    assert pid_alive(child.info["sleeper"])
    assert aifabric(["clean", "--run", child.run_id]) == 0
    out = capsys.readouterr().out
    assert f"removed run {child.run_id}: switch process" in out
    assert f"run record {child.record}" in out
    assert leftovers(child.run_id, child.pids, child.record) == []
    assert not os.path.exists(child.info["workdir"])
    assert aifabric(["clean", "--run", child.run_id]) == 0
    assert "nothing to clean" in capsys.readouterr().out

"""Queue settings over Thrift (network/bmv2.set_queues) against a stand-in
``simple_switch_CLI`` that behaves as the real one does while the switch's
Thrift server is not up yet (exit 1) and after a failed command (exit 0,
the error printed). No BMv2 needed."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from emulator.network import bmv2
from emulator.network.errors import SwitchStartError
from emulator.network.plan import switch_port_plan
from emulator.topology import load_topology

QUICKSTART = Path(__file__).resolve().parents[2] / "topologies" / "quickstart.yaml"


def _ports():  # type: ignore[no-untyped-def]
    return switch_port_plan(load_topology(QUICKSTART), "k3f9", 96_000)["leaf-r0-0"]


def _cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail_first: int, last_line: str) -> Path:
    """A simple_switch_CLI that cannot connect ``fail_first`` times, then
    logs the commands it reads and prints ``last_line``."""
    calls = tmp_path / "calls"
    calls.write_text("")
    cli = tmp_path / "simple_switch_CLI"
    cli.write_text(f"""#!/bin/sh
echo try >>{calls}
if [ "$(wc -l <{calls})" -le {fail_first} ]; then
    echo "Could not connect to thrift client on port $2"; exit 1
fi
cat >{tmp_path}/commands
echo "RuntimeCmd: {last_line}"
""")
    cli.chmod(cli.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    return calls


def test_waits_for_the_thrift_server(tmp_path, monkeypatch):
    calls = _cli(tmp_path, monkeypatch, fail_first=3, last_line="")
    monkeypatch.setattr(bmv2, "THRIFT_RETRY_S", 0.01)
    bmv2.set_queues("leaf-r0-0", 9090, _ports())
    assert calls.read_text().count("try") == 4
    sent = (tmp_path / "commands").read_text().splitlines()
    assert sent == bmv2.queue_commands(_ports())


def test_gives_up_after_the_wait_with_the_cli_output(tmp_path, monkeypatch):
    calls = _cli(tmp_path, monkeypatch, fail_first=10_000, last_line="")
    monkeypatch.setattr(bmv2, "THRIFT_WAIT_S", 0.3)
    monkeypatch.setattr(bmv2, "THRIFT_RETRY_S", 0.05)
    with pytest.raises(SwitchStartError) as info:
        bmv2.set_queues("leaf-r0-0", 9091, _ports())
    assert "Could not connect to thrift client on port 9091" in str(info.value)
    assert 2 <= calls.read_text().count("try") <= 10


@pytest.mark.parametrize("line", ["Error: Invalid egress_port", "Invalid table operation (BAD)"])
def test_a_failed_command_is_an_error_although_the_cli_exits_0(tmp_path, monkeypatch, line):
    calls = _cli(tmp_path, monkeypatch, fail_first=0, last_line=line)
    with pytest.raises(SwitchStartError) as info:
        bmv2.set_queues("leaf-r0-0", 9090, _ports())
    assert line in str(info.value)
    assert calls.read_text().count("try") == 1

"""compile_fabric for target bmv2 where BMv2 or p4c is missing or fails:
one line for the user, never a traceback (no BMv2 needed)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from emulator.cli.errors import user_error_types
from emulator.cli.main import main
from emulator.control.compile import TargetUnavailable, compile_fabric
from emulator.network import bmv2
from emulator.network.errors import NetworkError

# The shape of `simple_switch_grpc --help` (BMv2 1.15.1 and later; 1.15.0
# has no --priority-queues).
HELP_1_15_0 = """Usage: SWITCH_NAME [options] <path to JSON config file>
Target specific options:
  --grpc-server-addr arg   Bind gRPC server to given address [default is 0.0.0.0:9559]
  --cpu-port arg           Choose a numerical value for the CPU port
"""
HELP_1_15_1 = HELP_1_15_0 + "  --priority-queues arg    Number of priority queues (default is 1)\n"


def _tool(directory: Path, name: str, body: str) -> None:
    path = directory / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_missing_tools_are_named_in_one_line(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "simple_switch_grpc", "exit 0")
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(TargetUnavailable) as info:
        compile_fabric("bmv2", tmp_path / "build")
    message = str(info.value)
    assert "\n" not in message
    assert "p4c-bm2-ss" in message and "simple_switch_CLI" in message
    assert "simple_switch_grpc" not in message
    assert isinstance(info.value, user_error_types())


def test_p4c_failure_is_a_network_error_with_its_stderr(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "p4c-bm2-ss", "echo 'fabric.p4(12): [--Werror=type-error] error: bad' >&2; exit 1")
    _tool(bin_dir, "simple_switch_grpc", f"cat <<'EOF'\n{HELP_1_15_1}EOF")
    _tool(bin_dir, "simple_switch_CLI", "exit 0")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(NetworkError) as info:
        compile_fabric("bmv2", tmp_path / "build")
    assert "p4c-bm2-ss failed on" in str(info.value)
    assert "fabric.p4(12)" in str(info.value)


def test_up_on_bmv2_without_bmv2_exits_2_with_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    topology = Path(__file__).resolve().parents[3] / "topologies" / "rail-4x4.yaml"
    code = main(["up", str(topology), "--target", "bmv2", "--check", "--json"])
    err = capsys.readouterr().err.strip()
    assert code == 2
    assert err.startswith("aifabric: ") and "\n" not in err and "not installed here" in err


def test_a_switch_without_priority_queues_is_refused_before_compiling(tmp_path, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _tool(bin_dir, "p4c-bm2-ss", f"touch {tmp_path}/p4c-ran; exit 1")
    _tool(bin_dir, "simple_switch_grpc", f"cat <<'EOF'\n{HELP_1_15_0}EOF")
    _tool(bin_dir, "simple_switch_CLI", "exit 0")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin:/bin")
    with pytest.raises(NetworkError) as info:
        compile_fabric("bmv2", tmp_path / "build")
    message = str(info.value)
    assert "\n" not in message and "--priority-queues" in message and "1.15.1" in message
    assert not (tmp_path / "p4c-ran").exists()


def test_priority_queues_read_from_the_help_text():
    assert bmv2.has_priority_queues(HELP_1_15_1)
    assert not bmv2.has_priority_queues(HELP_1_15_0)

"""The switch command line (one shape, two binaries) and BMv2's extras (no
root, no BMv2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from emulator.network import bmv2
from emulator.network.command import SwitchLaunch, builtin_port_config, switch_args
from emulator.network.errors import NetworkError
from emulator.network.plan import PortPlan, switch_port_plan
from emulator.network.switches import BUILTIN_BINARY, SWITCH_CLASSES, builtin_binary
from emulator.targets.builtin.cli import parse_args, parse_interfaces, switch_options
from emulator.targets.builtin.config import load_port_config_file
from emulator.topology import load_topology

QUICKSTART = Path(__file__).resolve().parents[2] / "topologies" / "quickstart.yaml"


def ports(buffer_bytes: int = 96_000) -> tuple[PortPlan, ...]:
    return switch_port_plan(load_topology(QUICKSTART), "k3f9", buffer_bytes)["leaf-r0-0"]


def launch(**changes) -> SwitchLaunch:
    fields = dict(name="leaf-r0-0", device_id=1, ports=ports(), grpc_port=50001,
                  thrift_port=9091, log_file="/w/switches/leaf-r0-0.log",
                  output_file="/w/switches/leaf-r0-0.out")
    fields.update(changes)
    return SwitchLaunch(**fields)


def test_bmv2_shape():
    args = switch_args(["simple_switch_grpc"], launch(device_config="/w/fabric.json"))
    assert args == [
        "simple_switch_grpc", "-i", "1@afxk3f9s0p1", "-i", "2@afxk3f9s0p2", "-i", "3@afxk3f9s0p3",
        "--device-id", "1", "--thrift-port", "9091", "--log-file", "/w/switches/leaf-r0-0.log",
        "--log-level", "info", "/w/fabric.json", "--",
        "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255", "--priority-queues", "8"]


def test_no_program_and_captures():
    args = switch_args(["sw"], launch(pcap_dir="/w/pcap/leaf-r0-0", cpu_port=None))
    assert args[args.index("--pcap") + 1] == "/w/pcap/leaf-r0-0"
    assert args.index("--no-p4") < args.index("--")
    assert "--cpu-port" not in args


def test_cpu_port_must_not_be_a_data_port():
    with pytest.raises(ValueError, match="CPU port 2 is also a data port"):
        switch_args(["sw"], launch(cpu_port=2))


def test_builtin_switch_accepts_the_command_line(tmp_path):
    """The same list, through aifabric-switch's own argument parser."""
    config = tmp_path / "ports.json"
    config.write_text(json.dumps(builtin_port_config(ports(50_000))))
    spec = launch(port_config_file=str(config), pcap_dir=str(tmp_path / "pcap"))
    argv = switch_args(builtin_binary(), spec, ["--port-config", str(config)])
    args = parse_args(argv[len(builtin_binary()):])
    assert parse_interfaces(args.interface) == [(1, "afxk3f9s0p1"), (2, "afxk3f9s0p2"),
                                                (3, "afxk3f9s0p3")]
    assert (args.device_id, args.grpc_server_addr, args.cpu_port, args.no_p4) == \
        (1, "127.0.0.1:50001", 255, True)
    options = switch_options(args)
    for port in (1, 2, 3):
        config_of_port = options.port_config(port)
        assert (config_of_port.rate_bps, config_of_port.delay_us,
                config_of_port.buffer_bytes) == (100e6, 5.0, 50_000)


def test_builtin_port_config_file_loads():
    data = builtin_port_config(ports())
    assert data["default"] == {"buffer_bytes": 96_000}
    assert data["ports"]["3"] == {"rate_bps": 100_000_000, "delay_us": 5.0}


def test_port_config_with_mixed_buffers(tmp_path):
    mixed = list(ports())
    mixed[0] = PortPlan(**{**mixed[0].__dict__, "buffer_bytes": 1000})
    path = tmp_path / "p.json"
    path.write_text(json.dumps(builtin_port_config(mixed)))
    default, per_port = load_port_config_file(path)
    assert default == {}
    assert per_port[1]["buffer_bytes"] == 1000 and per_port[2]["buffer_bytes"] == 96_000


def test_builtin_binary_is_the_venv_script_or_the_module():
    binary = builtin_binary()
    assert binary[0].endswith(BUILTIN_BINARY) or binary[-1] == "emulator.targets.builtin.cli"


def test_one_class_per_target():
    assert set(SWITCH_CLASSES) == {"builtin", "bmv2"}
    assert all(cls.target == name for name, cls in SWITCH_CLASSES.items())


def test_bmv2_compile_command():
    command = bmv2.compile_command("p4src/fabric.p4", "out/fabric.json", "out/fabric.p4info.txtpb")
    assert command == [
        "p4c-bm2-ss", "--p4v", "16", "--p4runtime-files", "out/fabric.p4info.txtpb",
        "-o", "out/fabric.json", "p4src/fabric.p4"]


def test_bmv2_queue_commands_in_frames():
    commands = bmv2.queue_commands(ports(96_000)[:1])
    # 96000 B / 1514 B = 63 frames; 100 Mb/s / (8 * 1514 b) = 8256 frames/s
    assert commands == ["set_queue_depth 63 1", "set_queue_rate 8256 1"]
    # Counted in a run's RoCE data frames (1024 B MTU + 58 B): 88 frames, 11553/s.
    assert bmv2.queue_commands(ports(96_000)[:1], 1082) == [
        "set_queue_depth 88 1", "set_queue_rate 11553 1"]


def test_missing_bmv2_tool_is_one_line():
    with pytest.raises(NetworkError) as info:
        bmv2.require_tool("simple_switch_grpc-surely-absent")
    assert "\n" not in str(info.value)
    assert "not installed here" in str(info.value) and "Vagrant" in str(info.value)

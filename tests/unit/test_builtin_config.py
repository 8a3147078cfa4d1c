"""Settings, command line, device-config loading and the process life cycle
of the built-in switch (no interfaces, no root)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal

import pytest

from emulator.targets.builtin import cli
from emulator.targets.builtin.config import (
    ALL_PRIORITIES, PortConfig, SwitchOptions, load_port_config_file, parse_port_setting,
)
from emulator.targets.builtin.errors import PipelineLoadError, PortConfigError, SwitchError
from emulator.targets.builtin.loader import load_device_config
from emulator.targets.builtin.queue_control import QueueControlClient
from tests.unit.test_builtin_support import basic_pipeline


def test_port_config_defaults_and_updates():
    cfg = PortConfig()
    assert (cfg.rate_bps, cfg.delay_us, cfg.pfc_priorities) == (0.0, 0.0, ALL_PRIORITIES)
    new = cfg.updated({"rate_bps": "10e6", "buffer_bytes": 5000.0, "pfc_priorities": "3,4"})
    assert (new.rate_bps, new.buffer_bytes, new.pfc_priorities) == (10e6, 5000, {3, 4})
    assert cfg.updated({"pfc_priorities": "none"}).pfc_priorities == frozenset()
    for bad in ({"rate_bps": -1}, {"delay_us": "x"}, {"buffer_bytes": 1.5},
                {"pfc_priorities": [8]}, {"speed": 1}, {"rate_bps": True}):
        with pytest.raises(PortConfigError):
            cfg.updated(bad)


def test_port_setting_and_file(tmp_path):
    assert parse_port_setting("3:rate_bps=1e9,pfc_priorities=3+4") == (
        3, {"rate_bps": "1e9", "pfc_priorities": "3,4"})
    with pytest.raises(PortConfigError):
        parse_port_setting("3")
    path = tmp_path / "ports.json"
    path.write_text(json.dumps({"default": {"rate_bps": 10e6},
                                "ports": {"2": {"delay_us": 7, "pfc_priorities": [3]}}}))
    default, per_port = load_port_config_file(path)
    assert default == {"rate_bps": 10e6} and per_port == {2: {"delay_us": 7, "pfc_priorities": [3]}}
    path.write_text(json.dumps({"ports": {"2": {"delay": 7}}}))
    with pytest.raises(PortConfigError, match="port 2: unknown port setting"):
        load_port_config_file(path)
    path.write_text("{")
    with pytest.raises(PortConfigError, match="invalid JSON"):
        load_port_config_file(path)


def test_command_line_shape_of_simple_switch_grpc(tmp_path):
    ports = tmp_path / "ports.json"
    ports.write_text(json.dumps({"default": {"rate_bps": 5e6, "delay_us": 3},
                                 "ports": {"1": {"rate_bps": 1e9}}}))
    args = cli.parse_args([
        "-i", "1@veth1", "-i", "2@veth2", "--device-id", "4", "--thrift-port", "9090",
        "--no-p4", "--port-config", str(ports), "--rate-bps", "10e6",
        "--port-set", "2:buffer_bytes=1000", f"--pcap={tmp_path}/cap",
        "--", "--grpc-server-addr", "127.0.0.1:50001", "--cpu-port", "255",
        "--priority-queues", "4"])
    assert cli.parse_interfaces(args.interface) == [(1, "veth1"), (2, "veth2")]
    assert args.grpc_server_addr == "127.0.0.1:50001"
    options = cli.switch_options(args)
    assert (options.device_id, options.cpu_port, options.priority_queues) == (4, 255, 4)
    # the command line wins over the file's default; a port's own settings win over both
    assert options.port_config(1).rate_bps == 1e9
    assert options.port_config(2).rate_bps == 10e6 and options.port_config(2).buffer_bytes == 1000
    assert options.port_config(2).delay_us == 3
    assert os.path.isdir(options.pcap_dir)
    assert cli.parse_args([]).grpc_server_addr == "127.0.0.1:9559"
    with pytest.raises(SwitchError):
        cli.parse_interfaces(["veth1"])
    with pytest.raises(SwitchError):
        cli.parse_interfaces(["1@a", "1@b"])
    with pytest.raises(PortConfigError):
        SwitchOptions(priority_queues=9)


def test_default_loader_says_when_there_is_no_front_end(tmp_path):
    path = tmp_path / "prog.json"
    path.write_text("{}")
    if importlib.util.find_spec("emulator.p4.device") is None:
        with pytest.raises(PipelineLoadError, match="no P4 front end available"):
            load_device_config(path)
    with pytest.raises(PipelineLoadError, match="no such file|No such file"):
        load_device_config(tmp_path / "missing.json")


def test_loader_is_injectable():
    pipe = basic_pipeline()
    calls = []

    def loader(config: bytes, *, priority_queues: int):
        calls.append((config, priority_queues))
        return pipe

    assert load_device_config(b"abc", loader, priority_queues=4) is pipe
    assert calls == [(b"abc", 4)]

    def broken(config: bytes, *, priority_queues: int):
        raise ValueError("line 3: syntax error")

    with pytest.raises(PipelineLoadError, match="line 3: syntax error"):
        load_device_config(b"abc", broken)


def test_main_reports_usage_errors_in_one_line(capsys):
    assert cli.main(["-i", "1@veth1"]) == 2
    assert "give a device config, or --no-p4" in capsys.readouterr().err
    assert cli.main(["--no-p4", "-i", "1@afx-no-such-if0"]) == 2
    assert "cannot open interface afx-no-such-if0" in capsys.readouterr().err


def test_run_switch_serves_until_sigterm_and_leaves_nothing(tmp_path):
    sock = tmp_path / "ctl.sock"
    log = tmp_path / "switch.log"
    seen = {}

    def ready(switch, server):
        with QueueControlClient(f"unix:{sock}") as client:
            client.wait_ready()
            seen["ports"] = client.get_port_config()
        os.kill(os.getpid(), signal.SIGTERM)

    status = cli.run_switch(["--grpc-server-addr", f"unix:{sock}", "--cpu-port", "7",
                             "--log-file", str(log)], pipeline=basic_pipeline(), ready=ready)
    assert status == 0
    assert [p["port"] for p in seen["ports"]] == [7]
    assert not sock.exists()
    text = log.read_text()
    assert "program loaded: basic.p4" in text and "ready" in text and "switch stopped" in text
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

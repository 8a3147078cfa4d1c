"""Live runs: every switch draws from its own random stream (the seed the
network layer gives it, the same function the virtual-time target uses)
and host-facing ports realise the NIC's direction of the link."""

from __future__ import annotations

from types import SimpleNamespace

from emulator.network.command import SwitchLaunch, builtin_port_config
from emulator.network.switches import REALTIME_PRIORITY, BuiltinSwitchNode
from emulator.targets.builtin.config import switch_seed
from emulator.targets.builtin.cli import parse_args, switch_options
from emulator.targets.builtin.loader import load_device_config


def test_switch_seeds_differ_per_switch_and_per_run():
    names = ["leaf-r0-0", "leaf-r1-0", "spine0"]
    seeds = {switch_seed(7, n) for n in names}
    assert len(seeds) == 3
    assert switch_seed(7, "spine0") != switch_seed(8, "spine0")
    assert switch_seed(7, "spine0") == switch_seed(7, "spine0")


def test_builtin_switches_get_their_seed_and_a_realtime_priority():
    launch = SwitchLaunch(name="spine0", device_id=3, ports=(), grpc_port=1, thrift_port=2,
                          log_file="l", output_file="o", port_config_file="p.json", run_seed=5)
    args = BuiltinSwitchNode.target_args(SimpleNamespace(launch_spec=launch))
    assert args[:4] == ["--seed", str(switch_seed(5, "spine0")), "--rt-priority",
                        str(REALTIME_PRIORITY)]
    assert args[-2:] == ["--port-config", "p.json"]
    options = switch_options(parse_args(["--no-p4", "--rt-priority", "10", "--seed", "3"]))
    assert options.realtime_priority == 10


def test_the_seed_reaches_the_program_random_stream():
    seen = []

    def loader(config, *, priority_queues, seed=0):
        seen.append(seed)
        return SimpleNamespace(seed=seed)

    load_device_config(b"{}", loader, seed=11)
    load_device_config(b"{}", loader)
    assert seen == [11, 0]


def test_host_ports_realise_the_nic_side_of_the_link():
    host = SimpleNamespace(port=1, kind="host", rate_bps=10**8, delay_us=5.0, buffer_bytes=1000)
    fabric = SimpleNamespace(port=2, kind="fabric", rate_bps=10**8, delay_us=5.0,
                             buffer_bytes=1000)
    config = builtin_port_config([host, fabric])
    assert config["ports"]["1"]["rx_link"] is True
    assert "rx_link" not in config["ports"]["2"]

"""The switch command line, built once for both targets.

Both targets take BMv2 ``simple_switch_grpc``'s shape (see
:mod:`emulator.targets`); only the binary and the target-specific tail
differ, and the node class picks them::

    BINARY -i 1@IFACE ... --device-id N --thrift-port P --log-file FILE
           [--log-level L] [--pcap DIR] (DEVICE_CONFIG | --no-p4)
           -- --grpc-server-addr 127.0.0.1:PORT [--cpu-port 255]
              --priority-queues 8 [TARGET ARGS...]

``aifabric-switch`` ignores ``--thrift-port`` and gets its port settings
from ``--port-config FILE.json`` and its random seed from ``--seed`` (its
tail); BMv2 gets them over Thrift after start (:mod:`.bmv2`).

Seeds: each switch's random stream (ECN marking draws) is seeded apart,
:func:`~emulator.targets.builtin.config.switch_seed` of the run's seed and
the switch's name, the function the virtual-time target uses too, so no two switches mark in step and
a switch draws the same stream on either clock. Host-facing ports get
``rx_link``: the NIC agent hands frames over undelayed, so the switch
realises that direction of the host link (delay and serialisation).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Sequence

from emulator.network.plan import PortPlan

LOOPBACK = "127.0.0.1"
DEFAULT_CPU_PORT = 255


@dataclass(frozen=True)
class SwitchLaunch:
    """Everything one switch process is started with."""

    name: str
    device_id: int
    ports: tuple[PortPlan, ...]
    grpc_port: int
    thrift_port: int
    log_file: str
    output_file: str  # the process's stdout and stderr
    pcap_dir: str | None = None
    device_config: str | None = None  # path; None starts the switch with --no-p4
    cpu_port: int | None = DEFAULT_CPU_PORT
    priority_queues: int = 8
    log_level: str = "info"
    port_config_file: str | None = None  # aifabric-switch only
    run_seed: int = 0  # aifabric-switch only: --seed is switch_seed(run_seed, name)
    queue_frame_bytes: int = 1514  # BMv2 only: queue rate/depth counted in frames of this size

    @property
    def grpc_addr(self) -> str:
        return f"{LOOPBACK}:{self.grpc_port}"

    @property
    def interfaces(self) -> tuple[tuple[int, str], ...]:
        return tuple((p.port, p.ifname) for p in self.ports)


def switch_args(binary: Sequence[str], launch: SwitchLaunch,
                target_args: Sequence[str] = ()) -> list[str]:
    """The argument list of a switch process (``binary`` may be several words,
    e.g. an interpreter and a module)."""
    if launch.cpu_port is not None and launch.cpu_port in {p for p, _ in launch.interfaces}:
        raise ValueError(f"switch {launch.name}: CPU port {launch.cpu_port} is also a data port")
    args = list(binary)
    for port, ifname in launch.interfaces:
        args += ["-i", f"{port}@{ifname}"]
    args += ["--device-id", str(launch.device_id), "--thrift-port", str(launch.thrift_port),
             "--log-file", launch.log_file, "--log-level", launch.log_level]
    if launch.pcap_dir is not None:
        args += ["--pcap", launch.pcap_dir]
    args.append(launch.device_config if launch.device_config is not None else "--no-p4")
    args += ["--", "--grpc-server-addr", launch.grpc_addr]
    if launch.cpu_port is not None:
        args += ["--cpu-port", str(launch.cpu_port)]
    args += ["--priority-queues", str(launch.priority_queues)]
    args += list(target_args)
    return args


def builtin_port_config(ports: Sequence[PortPlan]) -> dict[str, Any]:
    """The ``--port-config`` object of ``aifabric-switch`` for these ports
    (see :mod:`emulator.targets.builtin.config`)."""
    buffers = {p.buffer_bytes for p in ports}
    default: dict[str, Any] = {}
    if len(buffers) == 1:
        default["buffer_bytes"] = buffers.pop()
    settings: dict[str, dict[str, Any]] = {}
    for p in ports:
        one: dict[str, Any] = {"rate_bps": p.rate_bps, "delay_us": p.delay_us}
        if p.kind == "host":
            one["rx_link"] = True
        if "buffer_bytes" not in default:
            one["buffer_bytes"] = p.buffer_bytes
        settings[str(p.port)] = one
    return {"default": default, "ports": settings}


def builtin_port_config_text(ports: Sequence[PortPlan]) -> str:
    return json.dumps(builtin_port_config(ports), indent=1, sort_keys=True) + "\n"

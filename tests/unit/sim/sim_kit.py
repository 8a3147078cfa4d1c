"""Shared pieces of the virtual-time tests: small scenarios written inline,
run on the sim target into a temporary directory, and the frame arithmetic
the expected values are computed with."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from emulator.scenario.loader import scenario_from_dict
from emulator.run.sim import run_sim

# RoCEv2 frame of one WRITE packet: Ethernet 14, IPv4 20, UDP 8, BTH 12,
# ICRC 4; the first packet carries a RETH (16) too. An ACK adds AETH (4).
HEADER_BYTES = 58
RETH_BYTES = 16
ACK_BYTES = 14 + 20 + 8 + 12 + 4 + 4


def topology(servers: int, gpus: int, *, rate: str, delay: str, spines: int = 1,
             per_leaf: int | None = None) -> dict[str, Any]:
    return {"name": f"sim-{servers}x{gpus}", "kind": "rail-optimized", "servers": servers,
            "gpus_per_server": gpus, "servers_per_leaf": per_leaf or servers,
            "spines": spines, "host_link": {"rate": rate, "delay": delay},
            "fabric_link": {"rate": rate, "delay": delay}}


def scenario(name: str, topo: dict[str, Any], workload: dict[str, Any], *,
             duration: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "target": "sim", "topology": topo, "duration": duration,
            "seed": extra.pop("seed", 1), "workload": workload, **extra}


def run(data: dict[str, Any], out: Path) -> dict[str, Any]:
    """Run a scenario dict on sim; the results (also in ``out``)."""
    return run_sim(scenario_from_dict(data, f"<{data['name']}>"), out, progress=False)


def write_wire_bytes(size_bytes: int, mtu_bytes: int = 1024) -> tuple[int, int]:
    """(wire bytes of a WRITE of ``size_bytes``, bytes of its last frame)."""
    packets = math.ceil(size_bytes / mtu_bytes)
    last_payload = size_bytes - (packets - 1) * mtu_bytes
    total = size_bytes + packets * HEADER_BYTES + RETH_BYTES
    last = last_payload + HEADER_BYTES + (RETH_BYTES if packets == 1 else 0)
    return total, last


def load(out: Path, name: str) -> Any:
    return json.loads((out / name).read_text())

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


def permutation_cm(hosts: int, size_bytes: int, seed: int) -> str:
    """A connection matrix in htsim's ``.cm`` format: a random permutation
    of ``hosts`` hosts, nobody sending to itself, every flow ``size_bytes``
    from time 0 (what htsim's ``perm_<N>n_<N>c_2MB`` files are)."""
    import random

    rng = random.Random(seed)
    while True:
        dst = list(range(hosts))
        rng.shuffle(dst)
        if all(s != d for s, d in enumerate(dst)):
            break
    lines = [f"Nodes {hosts}", f"Connections {hosts}"]
    lines += [f"{s}->{d} id {s + 1} start 0 size {size_bytes}" for s, d in enumerate(dst)]
    return "\n".join(lines) + "\n"


def fat_tree_permutation(k: int, *, dcqcn: bool, size_bytes: int = 2_000_000, seed: int = 1,
                         duration: str = "20ms", switches: dict[str, Any] | None = None
                         ) -> dict[str, Any]:
    """htsim's canonical case as a scenario: a k-ary fat-tree, 100 Gb/s and
    1 us a hop, MTU 4096, PFC on the RoCE priority (buffer 400KB, xoff 60KB,
    xon 48KB), a permutation of ``size_bytes`` flows (converted from a
    ``.cm`` matrix), ECN and DCQCN on or off together."""
    from emulator.scenario.htsim import flows_from_cm
    from emulator.topology import topology_from_dict

    topo = {"name": f"ft{k}", "kind": "fat-tree", "k": k,
            "host_link": {"rate": "100Gbps", "delay": "1us"},
            "fabric_link": {"rate": "100Gbps", "delay": "1us"}}
    hosts = k ** 3 // 4
    gpus = [g.name for g in topology_from_dict(topo).gpus]
    flows = flows_from_cm(permutation_cm(hosts, size_bytes, seed), gpus)
    return scenario(f"perm-{hosts}", topo, {"flows": flows}, duration=duration, seed=seed,
                    switches=switches or {
                        "buffer": "400KB",
                        "ecn": {"enabled": dcqcn},
                        "pfc": {"enabled": True, "xoff": "60KB", "xon": "48KB"}},
                    hosts={"mtu": "4096B", "dcqcn": {"enabled": dcqcn}})


def fct_summary(results: dict[str, Any]) -> dict[str, Any]:
    """Flows done, FCT median / p99 / max (us) and lossless drops of a run."""
    fcts = sorted(f["fct_s"] for f in results["flows"] if f["completed"])
    def pick(q: float) -> float | None:
        return round(fcts[min(len(fcts) - 1, int(q * len(fcts)))] * 1e6, 1) if fcts else None
    return {"flows": len(results["flows"]), "done": len(fcts), "fct_median_us": pick(0.5),
            "fct_p99_us": pick(0.99), "fct_max_us": round(fcts[-1] * 1e6, 1) if fcts else None,
            "drops": results["totals"]["drops"], "pfc_tx": results["totals"]["pfc_tx"]}

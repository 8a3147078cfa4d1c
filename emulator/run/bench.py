"""nccl-tests on the fabric: one sim run of a collective per message size
(``-b``..``-e`` by factor ``-f``), read back as nccl-tests' rows.

Each size is a scenario with one collective (the plans of
:mod:`emulator.scenario.collectives`) run by :func:`emulator.run.sim.run_sim`;
time, algbw and busbw come from the run's results
(:mod:`emulator.measure.collective_metrics`, nccl-tests' busbw factors).
"""

from __future__ import annotations

import re
from typing import Any, Mapping

from emulator.network.naming import scratch_dir
from emulator.run.sim import run_sim
from emulator.scenario.errors import ScenarioError
from emulator.scenario.loader import scenario_from_dict

# nccl-tests' op names -> the scenario's collective kinds
OPS: dict[str, str] = {"all_reduce": "all-reduce", "all_gather": "all-gather",
                       "reduce_scatter": "reduce-scatter", "alltoall": "all-to-all",
                       "sendrecv": "send-recv"}
ELEMENT_BYTES = 4  # float, as nccl-tests' default -d float
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}

DEFAULT_TOPOLOGY: dict[str, Any] = {
    "name": "bench-rail-4", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 1,
    "servers_per_leaf": 4, "spines": 1,
    "host_link": {"rate": "100Gbps", "delay": "1us"},
    "fabric_link": {"rate": "100Gbps", "delay": "1us"}}


def parse_size(text: str, flag: str) -> int:
    """nccl-tests' size syntax: a number with an optional K/M/G (powers of 2)."""
    match = re.fullmatch(r"(\d+)([KMG]?)", text.strip().upper())
    if not match or int(match.group(1)) <= 0:
        raise ScenarioError(f"{flag} {text!r}: a positive byte count with an optional "
                            "K, M or G (e.g. 8, 64K, 128M)")
    return int(match.group(1)) * _UNITS[match.group(2)]


def sizes(begin_bytes: int, end_bytes: int, factor: int) -> list[int]:
    if factor < 2:
        raise ScenarioError(f"-f {factor}: the size factor must be an integer >= 2")
    if end_bytes < begin_bytes:
        raise ScenarioError(f"-e {end_bytes} is below -b {begin_bytes}: the end size must be "
                            "at least the begin size")
    out, size = [], begin_bytes
    while size <= end_bytes:
        out.append(size)
        size *= factor
    return out


def bench_scenario(op: str, size_bytes: int, gpus: str,
                   topology: str | Mapping[str, Any]) -> dict[str, Any]:
    """The scenario mapping for one size of the sweep."""
    if op not in OPS:
        raise ScenarioError(f"--op {op!r}: one of {', '.join(OPS)}")
    return {"name": f"bench-{op}-{size_bytes}", "topology": topology, "duration": "60s",
            "workload": {"collectives": [
                {"kind": OPS[op], "id": "bench", "gpus": [gpus], "size": f"{size_bytes}B"}]}}


def bench_collective(op: str, size_list: list[int], gpus: str,
                     topology: str | Mapping[str, Any] = DEFAULT_TOPOLOGY,
                     base_dir: str = ".") -> list[dict[str, Any]]:
    """One row per size: nccl-tests' columns, times [sim]."""
    rows = []
    for size in size_list:
        scenario = scenario_from_dict(bench_scenario(op, size, gpus, topology),
                                      "<bench>", base_dir, "sim")
        with scratch_dir("bench") as out:
            result = run_sim(scenario, out, progress=False)
        coll = result["collectives"][0]
        time_s = coll["time_s"]
        rows.append({"size_bytes": size, "count": size // ELEMENT_BYTES, "type": "float",
                     "redop": "sum" if op in ("all_reduce", "reduce_scatter") else "none",
                     "root": -1, "ranks": coll["ranks"],
                     "time_us": None if time_s is None else round(time_s * 1e6, 3),
                     "algbw_GBps": None if coll["algbw_bps"] is None
                     else coll["algbw_bps"] / 8e9,
                     "busbw_GBps": None if coll["busbw_bps"] is None
                     else coll["busbw_bps"] / 8e9,
                     "wrong": 0 if coll["completed"] else "N/A",
                     "completed": coll["completed"]})
    return rows

"""Generators become concrete flows, the same ones on every run."""

from __future__ import annotations

import random
from collections import Counter
from pathlib import Path

import pytest

from emulator.scenario import expand_workload, load_scenario, scenario_from_dict
from emulator.scenario.spec import GeneratorSpec
from emulator.scenario.workload import expand_generator, permutation
from emulator.topology import load_topology

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scenarios"


def scenario(generators, seed=0, topology="rail-4x4", flows=()):
    return scenario_from_dict({
        "name": "t", "topology": f"{topology}.yaml", "duration": "10s", "seed": seed,
        "workload": {"flows": list(flows), "generators": generators},
    }, base_dir=ROOT / "topologies")


def test_written_flows_come_first_then_each_generator_in_order():
    flows = expand_workload(load_scenario(DATA / "full.yaml"))
    assert [f.id for f in flows][:6] == ["f1", "bg", "incast-0", "incast-1", "incast-2", "g1-0"]
    assert [f.generator for f in flows][:3] == [None, None, "incast"]
    assert len(flows) == 2 + 3 + 4 + 6 + 1
    assert len({f.id for f in flows}) == len(flows)


def test_incast_staggers_its_senders():
    flows = expand_workload(scenario([{
        "kind": "incast", "id": "in", "senders": ["srv*/gpu0"], "receiver": "srv3/gpu0",
        "size": "2MB", "start": "1s", "stagger": "10us", "qps": 4, "op": "send"}]))
    assert [(f.id, f.src, f.dst, f.start_ns) for f in flows] == [
        ("in-0", "srv0/gpu0", "srv3/gpu0", 10**9),
        ("in-1", "srv1/gpu0", "srv3/gpu0", 10**9 + 10_000),
        ("in-2", "srv2/gpu0", "srv3/gpu0", 10**9 + 20_000),
    ]
    assert {(f.size_bytes, f.qps, f.op, f.priority, f.dscp) for f in flows} == {
        (2_000_000, 4, "send", 3, 26)}


def _check_permutation(flows, gpus):
    server = {g: g.split("/")[0] for g in gpus}
    assert sorted(f.src for f in flows) == sorted(gpus)
    assert sorted(f.dst for f in flows) == sorted(gpus)
    assert all(server[f.src] != server[f.dst] for f in flows)


@pytest.mark.parametrize("seed", range(6))
def test_permutation_sends_each_gpu_to_one_gpu_of_another_server(seed):
    flows = expand_workload(scenario([{"kind": "permutation", "size": "1MB"}], seed=seed))
    gpus = [f"srv{s}/gpu{r}" for s in range(4) for r in range(4)]
    assert [f.src for f in flows] == gpus  # in topology order
    _check_permutation(flows, gpus)


def test_permutation_is_deterministic_and_depends_on_seed_and_id():
    def destinations(seed, gid="p"):
        flows = expand_workload(scenario([{"kind": "permutation", "id": gid, "size": "1MB"}],
                                         seed=seed))
        return [f.dst for f in flows]

    assert destinations(1) == destinations(1)
    assert len({tuple(destinations(seed)) for seed in range(8)}) > 1
    assert len({tuple(destinations(1, gid)) for gid in ("a", "b", "c", "d")}) > 1


def test_permutation_on_two_crowded_servers_still_works():
    """Half the GPUs on each of two servers: only cross-server maps exist."""
    gpus = tuple(f"srv{s}/gpu{r}" for s in range(2) for r in range(8))
    server_of = {g: g.split("/")[0] for g in gpus}
    for seed in range(5):
        mapping = permutation(gpus, server_of, random.Random(seed))
        assert sorted(mapping) == sorted(mapping.values()) == sorted(gpus)
        assert all(server_of[a] != server_of[b] for a, b in mapping.items())


def test_permutation_mixes_the_destinations():
    """Over many seeds every GPU reaches most GPUs of other servers."""
    topology = load_topology(ROOT / "topologies" / "rail-4x4.yaml")
    gpus = tuple(g.name for g in topology.gpus)
    server_of = {g.name: g.server for g in topology.gpus}
    seen = Counter()
    for seed in range(200):
        for src, dst in permutation(gpus, server_of, random.Random(seed)).items():
            seen[(src, dst)] += 1
    reachable = [(a, b) for a in gpus for b in gpus if server_of[a] != server_of[b]]
    assert sum(1 for pair in reachable if seen[pair]) > 0.9 * len(reachable)


def test_permutation_refuses_a_server_with_more_than_half():
    gpus = ("srv0/gpu0", "srv0/gpu1", "srv1/gpu0")
    with pytest.raises(ValueError, match="srv0 holds 2 of the 3 GPUs"):
        permutation(gpus, {g: g.split("/")[0] for g in gpus}, random.Random(0))


def test_all_to_all_skips_pairs_inside_a_server():
    flows = expand_workload(scenario([{"kind": "all-to-all", "size": "64KiB",
                                       "gpus": ["srv0/gpu0", "srv0/gpu1", "srv1/gpu0"]}]))
    assert [(f.src, f.dst) for f in flows] == [
        ("srv0/gpu0", "srv1/gpu0"), ("srv0/gpu1", "srv1/gpu0"),
        ("srv1/gpu0", "srv0/gpu0"), ("srv1/gpu0", "srv0/gpu1")]
    assert [f.id for f in flows] == ["g0-0", "g0-1", "g0-2", "g0-3"]


def test_all_to_all_of_every_gpu():
    flows = expand_workload(scenario([{"kind": "all-to-all", "size": "1KB"}]))
    assert len(flows) == 16 * 12  # each GPU to the 12 GPUs of the other three servers


def test_pairs_keep_their_order_and_options():
    flows = expand_workload(scenario([{
        "kind": "pairs", "pairs": [["srv0/gpu1", "srv2/gpu3"], ["srv3/gpu0", "srv1/gpu0"]],
        "size": "unlimited", "priority": 0, "rate": "10Mbps", "op": "read"}]))
    assert [(f.src, f.dst, f.size_bytes, f.priority, f.dscp, f.rate_bps, f.op) for f in flows] == [
        ("srv0/gpu1", "srv2/gpu3", None, 0, 0, 10_000_000, "read"),
        ("srv3/gpu0", "srv1/gpu0", None, 0, 0, 10_000_000, "read"),
    ]


def test_expanding_twice_gives_the_same_flows():
    loaded = load_scenario(DATA / "inline-fat-tree.yaml")
    assert expand_workload(loaded) == expand_workload(loaded)
    assert expand_workload(loaded) == expand_workload(load_scenario(DATA / "inline-fat-tree.yaml"))


def test_expand_generator_refuses_an_empty_incast():
    generator = GeneratorSpec(kind="incast", id="x", size_bytes=1, receiver="srv0/gpu0")
    with pytest.raises(ValueError, match="has no sender left"):
        expand_generator(generator, 0, {"srv0/gpu0": "srv0"})

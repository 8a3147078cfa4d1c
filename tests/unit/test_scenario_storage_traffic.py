"""Storage and front-end traffic kinds (:mod:`emulator.scenario.storage_traffic`):
which NICs each kind's flows join, how shards stripe over storage nodes, and
one-line errors where the topology or the keys cannot make them."""

from __future__ import annotations

from collections import Counter

import pytest

from emulator.scenario import ScenarioError
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.workload import expand_workload

LINK = {"rate": "100Gbps", "delay": "1us"}


def topology(network: str | None = "separate", front_end: bool = True) -> dict:
    data = {"name": "st", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 2,
            "servers_per_leaf": 4, "spines": 2, "host_link": LINK, "fabric_link": LINK}
    if front_end:
        data["front_end"] = {"nics_per_server": 1, "link": LINK, "clients": 2}
    if network is not None:
        data["storage"] = {"nodes": 2, "nics_per_node": 2, "link": LINK, "network": network}
    return data


def flows(generator: dict, **topo):
    scenario = scenario_from_dict({"name": "s", "target": "sim", "topology": topology(**topo),
                                   "duration": "1ms", "workload": {"generators": [generator]}},
                                  "s.yaml")
    return expand_workload(scenario)


def test_a_checkpoint_stripes_every_gpus_shard_over_the_storage_nodes():
    made = flows({"kind": "checkpoint", "id": "ck", "size": "2MB"})
    assert len(made) == 8 * 2 and {f.size_bytes for f in made} == {1_000_000}
    # a GPU's shard leaves through its server's storage NIC, to both nodes
    first = [f for f in made if f.id in ("ck-0", "ck-1")]
    assert [(f.src, f.dst) for f in first] == [("srv0/st0", "stor0/nic0"),
                                               ("srv0/st0", "stor1/nic0")]
    # every node and every node NIC takes the same share
    assert Counter(f.dst for f in made) == {"stor0/nic0": 4, "stor0/nic1": 4,
                                            "stor1/nic0": 4, "stor1/nic1": 4}
    assert {f.priority for f in made} == {3} and {f.generator for f in made} == {"ck"}


@pytest.mark.parametrize("network,src", [("backend", "srv1/gpu1"), ("front-end", "srv1/fe0"),
                                         ("separate", "srv1/st0")])
def test_the_storage_path_follows_where_storage_sits(network, src):
    made = flows({"kind": "kv-offload", "id": "kv", "size": "64KB", "gpus": ["srv1/gpu1"]},
                 network=network)
    assert len(made) == 1 and made[0].src == src and made[0].dst.startswith("stor")


def test_weight_loading_and_kv_fetch_come_from_storage():
    made = flows({"kind": "weight-load", "id": "w", "size": "4MB", "gpus": ["srv*/gpu0"]})
    assert len(made) == 4 * 2 and all(f.src.startswith("stor") for f in made)
    assert {f.dst for f in made} == {f"srv{s}/st0" for s in range(4)}
    fetch = flows({"kind": "kv-fetch", "id": "f", "size": "1MB", "stripe": 2, "op": "read",
                   "priority": 0})
    assert len(fetch) == 16 and {(f.op, f.priority, f.dscp) for f in fetch} == {("read", 0, 0)}


def test_requests_come_in_and_tokens_go_out_on_the_front_end():
    requests = flows({"kind": "requests", "id": "rq", "size": "4KB"})
    assert [(f.src, f.dst) for f in requests] == [
        ("cli0/nic0", "srv0/fe0"), ("cli1/nic0", "srv1/fe0"), ("cli0/nic0", "srv2/fe0"),
        ("cli1/nic0", "srv3/fe0")]
    tokens = flows({"kind": "tokens", "id": "tk", "size": "64KB", "gpus": ["srv2/*"]})
    assert [(f.src, f.dst) for f in tokens] == [("srv2/fe0", "cli0/nic0")]


BAD = [
    ({"kind": "checkpoint", "id": "c", "size": "1MB"}, {"network": None},
     "workload.generators[0]", "checkpoint needs storage nodes"),
    ({"kind": "requests", "id": "r", "size": "1MB"}, {"front_end": False},
     "workload.generators[0]", "requests needs front-end clients"),
    ({"kind": "checkpoint", "id": "c", "size": "1000001B"}, {},
     "workload.generators[0]", "does not split evenly over stripe 2"),
    ({"kind": "kv-fetch", "id": "c", "size": "1MB", "stripe": 3}, {},
     "workload.generators[0]", "stripe 3 is more than the 2 storage nodes"),
    ({"kind": "checkpoint", "id": "c", "size": "1MB", "stripe": 0}, {},
     "workload.generators[0].stripe", "0 is too small; use a whole number >= 1"),
    ({"kind": "tokens", "id": "t", "size": "1MB", "stripe": 2}, {},
     "workload.generators[0].stripe", "unknown key"),
    ({"kind": "pairs", "id": "p", "size": "1MB", "pairs": [["srv0/gpu0", "stor0/nic0"]]}, {},
     "workload.generators[0].pairs", "fabrics with no link between them"),
]


@pytest.mark.parametrize("generator,topo,key,message", BAD)
def test_what_cannot_be_made_gets_one_line(generator, topo, key, message):
    with pytest.raises(ScenarioError) as info:
        flows(generator, **topo)
    text = str(info.value)
    assert "\n" not in text and f"'{key}'" in text and message in text, text

"""``--partition auto`` on the issue's two big fabrics, by the numbers: the
k = 8 fat-tree under htsim's 128-host permutation and the 1,024-GPU rail
fabric under its 64 MB all-reduce (scenarios/allreduce-1024gpu.yaml), split
2, 4, 8 and 16 ways. The estimated work of the busiest rank stays within
10 % of the mean (imbalance = max / mean <= 1.10), and ``auto`` cuts no more
links than ``switch`` while pods or leaf groups stay whole (up to 8 ranks
here; on the rail fabric as many, its leaf links being the cut either way),
about as many once it must halve them (k = 8 at 16 ranks: 240 against 238). Figures
in README "On many cores and machines (MPI)". About 10 s here [wall]."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario.collectives import plan_collective
from emulator.scenario.loader import load_scenario, scenario_from_dict
from emulator.sim.partition import flow_loads, partition
from tests.unit.sim.sim_kit import fat_tree_permutation

ROOT = Path(__file__).resolve().parents[3]
IMBALANCE_BOUND = 1.10


def _loads(scenario):
    flows = list(scenario.flows)
    for spec in scenario.collectives:
        flows += plan_collective(spec, scenario.topology, scenario.seed).flows
    return flow_loads(scenario.topology, flows, scenario.hosts.mtu_bytes, scenario.duration_s)


@pytest.fixture(scope="module")
def fabrics():
    perm = scenario_from_dict(fat_tree_permutation(8, dcqcn=False), "perm-128", ROOT)
    ar = load_scenario(ROOT / "scenarios" / "allreduce-1024gpu.yaml")
    return {"k8-permutation": (perm, _loads(perm)), "rail-1024-allreduce": (ar, _loads(ar))}


@pytest.mark.parametrize("fabric", ["k8-permutation", "rail-1024-allreduce"])
@pytest.mark.parametrize("ranks", [2, 4, 8, 16])
def test_auto_balances_the_work_and_cuts_no_more_than_switch(fabrics, fabric, ranks):
    scenario, loads = fabrics[fabric]
    auto = partition(scenario.topology, ranks, loads, "auto")
    fine = partition(scenario.topology, ranks, loads, "switch")
    mean = sum(auto.work) / ranks
    assert max(auto.work) / mean <= IMBALANCE_BOUND, (fabric, ranks, auto.work)
    cut, fine_cut = len(auto.cut_links), len(fine.cut_links)
    assert cut <= fine_cut if ranks <= 8 else cut <= 1.02 * fine_cut, (cut, fine_cut)
    assert set(auto.rank_of.values()) == set(range(ranks))
    assert sum(auto.work) == pytest.approx(sum(fine.work))


def test_pods_and_leaf_groups_stay_whole_while_they_fit(fabrics):
    """Up to 8 ranks every pod (k = 8: 8 pods) and every leaf group (8 per
    rail) is on one rank: only links to cores and spines are cut."""
    for name, (scenario, loads) in fabrics.items():
        part = partition(scenario.topology, 8, loads, "auto")
        topo = scenario.topology
        for link in topo.links:
            if link.kind == "host":
                gpu = topo.gpu(link.gpu)
                assert part.rank_of[gpu.server] == part.rank_of[gpu.switch], (name, link)
        upper = {sw.name for sw in topo.switches if sw.pod is None and sw.leaf_index is None}
        assert all(not ({a.split(":")[0], b.split(":")[0]} <= set(part.rank_of) - upper)
                   for a, b in (c.split("<->") for c in part.cut_links)), name

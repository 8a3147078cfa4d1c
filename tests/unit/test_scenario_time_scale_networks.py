"""``time_scale`` slows every network a live run builds, not only the
backend's host and fabric links: the DCI, the front-end and storage
fabrics, and the scale-up tier's rate and hop (README "The AI cluster")."""

from __future__ import annotations

from pathlib import Path

import yaml

from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.scale import fastest_link_bps

SCENARIOS = Path(__file__).resolve().parents[2] / "scenarios"


def _live(name: str, k: int):
    data = yaml.safe_load((SCENARIOS / name).read_text())
    data["time_scale"] = k
    return scenario_from_dict(data, str(SCENARIOS / name), SCENARIOS, "builtin")


def test_every_network_of_the_ai_cluster_is_slowed_by_the_time_scale():
    k = 100_000
    scenario = _live("checkpoint-burst.yaml", k)
    written = scenario.written.topology
    emulated = scenario.topology
    assert len(written.links) == len(emulated.links)
    networks = set()
    for before, after in zip(written.links, emulated.links):
        assert (before.node_a, before.port_a, before.network) == (
            after.node_a, after.port_a, after.network)
        assert after.rate_bps == round(before.rate_bps / k), before
        assert after.delay_ns == before.delay_ns * k, before
        networks.add(before.network)
    assert networks == {"backend", "dci", "front-end", "storage"}
    # the DCI's 10 km (50 us) becomes 5 s; its file form is now a delay
    assert emulated.spec.sites.dci_link.delay_ns == 50_000 * k
    assert emulated.spec.sites.distance_m is None
    # the fastest class here is the 400 Gb/s backend and DCI
    assert fastest_link_bps(written) == 400_000_000_000


def test_the_scale_up_rate_and_hop_are_slowed_too():
    k = 10_000
    scenario = _live("scale-up-allreduce.yaml", k)
    spec = scenario.topology.spec.scale_up
    assert (spec.rate_bps, spec.hop_latency_ns) == (3_600_000_000_000 // k, 250 * k)
    assert scenario.topology.domains[0].rate_bps == 3_600_000_000_000 // k

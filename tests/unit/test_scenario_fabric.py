"""A scenario's switch settings become the controller's FabricSettings."""

from __future__ import annotations

from dataclasses import replace

from pathlib import Path

import pytest

from emulator.control.fabric_plan import (
    ECN_CONFIG,
    PFC_INGRESS,
    EcnSettings,
    FabricSettings,
    PfcSettings,
    plan_fabric,
)
from emulator.scenario import buffer_bytes, load_scenario, scenario_from_dict, to_fabric_settings
from emulator.scenario.spec import ROCE_FRAME_OVERHEAD_BYTES
from emulator.traffic.layers.opcodes import RC_RDMA_WRITE_MIDDLE, RC_SEND_MIDDLE
from emulator.traffic.roce import roce_packet

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data" / "scenarios"


def test_full_example_converts_bytes_to_packets_rounding_up():
    scenario = load_scenario(DATA / "full.yaml")
    settings = to_fabric_settings(scenario)
    ecn = EcnSettings(enabled=True, kmin_pkts=19, kmax_pkts=74, pmax=0.2, priorities=(3,))
    pfc = PfcSettings(enabled=True, priorities=(3,), xoff_bytes=40_000, xon_bytes=20_000,
                      quanta=65535)
    # the spine0 override (ECN kmin 10KB) travels with the fabric's settings, per port
    spine = {(n, p): settings.ports[(n, p)] for n, p in settings.ports}
    assert {n for n, _ in spine} == {"spine0"}
    assert all(e.kmin_pkts == 10 for e, _ in spine.values())
    assert settings == FabricSettings(
        roce_dscp=26, roce_priority=3, cnp_dscp=48, cnp_priority=6,
        # 20KB / 1082B = 18.5 -> 19; 80KB / 1082B = 73.9 -> 74
        ecn=ecn, pfc=pfc, ports=settings.ports,
        # the largest frame: 1082 B and a WRITE's first packet's RETH
        max_frame_bytes=1082 + 16)
    assert settings.for_port("leaf-r0-0", 1) == (ecn, pfc)


def test_packet_thresholds_pass_through_and_pfc_packets_become_frames():
    scenario = load_scenario(DATA / "inline-fat-tree.yaml")
    settings = to_fabric_settings(scenario)
    assert (settings.ecn.kmin_pkts, settings.ecn.kmax_pkts, settings.ecn.pmax) == (8, 32, 0.1)
    frame = 4096 + 58
    assert (settings.pfc.xoff_bytes, settings.pfc.xon_bytes) == (12 * frame, 6 * frame)
    assert settings.pfc.quanta == 1000
    assert (settings.roce_priority, settings.roce_dscp, settings.ecn.priorities,
            settings.pfc.priorities) == (5, 34, (5,), (5,))


def test_per_port_settings_apply_overrides():
    scenario = load_scenario(DATA / "full.yaml")
    spine = to_fabric_settings(scenario, "spine0", 2)
    assert (spine.ecn.kmin_pkts, spine.ecn.kmax_pkts) == (10, 40)
    assert to_fabric_settings(scenario, "spine1", 2).ecn.kmin_pkts == 19
    assert buffer_bytes(scenario, "leaf-r0-0", 3) == 64_000
    assert buffer_bytes(scenario, "leaf-r0-0", 1) == 256_000
    edge = to_fabric_settings(load_scenario(DATA / "inline-fat-tree.yaml"), "edge-p0-0", 1)
    assert not edge.ecn.enabled and not edge.pfc.enabled


@pytest.mark.parametrize("mtu", [256, 1024, 4096])
@pytest.mark.parametrize("opcode", [RC_RDMA_WRITE_MIDDLE, RC_SEND_MIDDLE])
def test_frame_overhead_is_what_the_nic_agent_sends(mtu, opcode):
    frame = roce_packet("02:00:0a:00:00:01", "02:01:00:00:00:01", "10.0.0.1", "10.0.1.1",
                        0xC000, opcode, 17, 5, bytes(mtu))
    assert len(frame) == mtu + ROCE_FRAME_OVERHEAD_BYTES


def test_plan_fabric_takes_the_settings():
    scenario = load_scenario(DATA / "full.yaml")
    plans = plan_fabric(scenario.topology, to_fabric_settings(scenario))
    ecn = plans["leaf-r0-0"].table(ECN_CONFIG)[0]
    assert dict(ecn.params)["min_pkts"] == 19 and dict(ecn.params)["max_pkts"] == 74
    # The built-in target's buffer generates PFC: the ports carry the thresholds.
    assert not plans["spine0"].table(PFC_INGRESS)
    assert {p.lossless["xoff_bytes"] for p in plans["spine0"].ports} == {40_000}
    # BMv2's fabric.p4 generates it: the tables carry them.
    p4_plans = plan_fabric(scenario.topology, replace(to_fabric_settings(scenario),
                                                      pfc_in_p4=True))
    pfc = p4_plans["spine0"].table(PFC_INGRESS)[0]
    assert dict(pfc.params)["xoff"] == 40_000
    assert all(not p.lossless for p in p4_plans["spine0"].ports)


def test_ecn_and_pfc_off():
    scenario = scenario_from_dict({
        "name": "off", "topology": "quickstart.yaml", "duration": "1s",
        "switches": {"ecn": {"enabled": False}, "pfc": {"enabled": False}},
        "workload": {"flows": [{"id": "f", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": 1}]},
    }, base_dir=ROOT / "topologies")
    settings = to_fabric_settings(scenario)
    assert not settings.ecn.enabled and not settings.pfc.enabled
    plans = plan_fabric(scenario.topology, settings)
    assert not plans["leaf-r0-0"].table(ECN_CONFIG) and not plans["leaf-r0-0"].table(PFC_INGRESS)
    assert all(p.lossless["lossless_priorities"] == [] for p in plans["leaf-r0-0"].ports)

"""Agent configs built from a scenario's flows (pure: no root, no network)."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario import ScenarioError, expand_workload, load_scenario, scenario_from_dict
from emulator.run.agent_config import build_agent_configs, dcqcn_params
from emulator.run.feeder import Feeder
from emulator.run.live import link_interfaces
from emulator.run.qps import QPN_BASE, plan_qps
from emulator.scenario.spec import DcqcnSpec, stripes
from emulator.traffic.agent.config import parse_config

ROOT = Path(__file__).resolve().parents[2]


def scenario(flows, **top):
    return scenario_from_dict({"name": "t", "topology": "quickstart.yaml", "duration": "2s",
                               "workload": {"flows": flows}, **top},
                              base_dir=ROOT / "topologies")


FLOWS = [{"id": "a", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "1MB", "start": "100ms"},
         {"id": "b", "src": "srv1/gpu1", "dst": "srv0/gpu0", "size": "1000001B", "qps": 3,
          "op": "read"}]


def test_stripes_sum_to_the_size():
    assert stripes(10, 3) == [4, 3, 3]
    assert sum(stripes(1_000_001, 7)) == 1_000_001
    assert stripes(None, 2) == [None, None]


def test_qps_are_unique_and_numbered_in_flow_order():
    s = scenario(FLOWS)
    qps = plan_qps(s, expand_workload(s))
    assert [q.qpn for q in qps] == [QPN_BASE + i for i in range(4)]
    assert [(q.flow, q.stripe) for q in qps] == [("a", 0), ("b", 0), ("b", 1), ("b", 2)]
    assert sum(q.size_bytes for q in qps if q.flow == "b") == 1_000_001
    assert not any(q.fed for q in qps)


def test_configs_have_both_ends_and_parse():
    s = scenario(FLOWS)
    flows = expand_workload(s)
    configs = build_agent_configs(s, flows, start_at_unix=1234.5)
    assert set(configs) == {"srv0", "srv1"}
    parsed = {name: parse_config(cfg) for name, cfg in configs.items()}  # the agent accepts them
    topo = s.topology
    for q in plan_qps(s, flows):
        src = next(x for x in parsed[q.src_server].qps if x.qpn == q.qpn)
        dst = next(x for x in parsed[q.dst_server].qps if x.qpn == q.qpn)
        assert src.remote_qpn == dst.qpn == q.qpn
        assert src.remote_ip == topo.gpu(q.dst_gpu).ip and dst.remote_ip == topo.gpu(q.src_gpu).ip
        assert src.nic == topo.gpu(q.src_gpu).intf and dst.nic == topo.gpu(q.dst_gpu).intf
    srv0 = parsed["srv0"]
    assert srv0.start_at_unix == 1234.5
    assert [n.name for n in srv0.nics] == ["srv0-eth0"]  # only the GPUs that take part
    assert srv0.nics[0].line_rate_bps == 100e6  # the host link's rate
    assert srv0.nics[0].pfc_priorities == (3,)
    # messages: on the requester only, at the flow's start, one per stripe
    assert [(m.qp, m.size_bytes, m.at_s, m.op) for m in srv0.messages] == [
        (QPN_BASE, 1_000_000, 0.1, "write")]
    assert sorted(m.size_bytes for m in parsed["srv1"].messages) == [333_333, 333_334, 333_334]
    assert {m.op for m in parsed["srv1"].messages} == {"write"}  # read carried as a write


def test_dcqcn_defaults_stay_scaled_and_changes_go_unscaled():
    assert dcqcn_params(DcqcnSpec(), 100e6) == {"enabled": True}
    assert dcqcn_params(DcqcnSpec(enabled=False), 100e6) == {"enabled": False}
    p = dcqcn_params(DcqcnSpec(rate_ai_bps=2_000_000, timer_ns=100_000), 100e6)
    assert p["time_scale"] == 1.0 and p["reference_rate_bps"] == 100e6
    assert p["rate_ai_bps"] == 2e6 and p["rate_timer_us"] == 100.0
    s = scenario(FLOWS, hosts={"dcqcn": {"rate_ai": "2Mbps"}})
    cfg = parse_config(build_agent_configs(s, expand_workload(s))["srv0"])
    assert cfg.qps[0].dcqcn.time_scale == 1.0 and cfg.qps[0].dcqcn.rate_ai_bps == 2e6


def test_pfc_off_means_nics_honour_nothing():
    s = scenario(FLOWS, switches={"pfc": {"enabled": False}})
    cfg = build_agent_configs(s, expand_workload(s))["srv0"]
    assert cfg["nics"][0]["pfc_priorities"] == []


def test_stopped_and_unlimited_flows_are_fed_by_the_runner():
    s = scenario([{"id": "u", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "unlimited"},
                  {"id": "s", "src": "srv0/gpu1", "dst": "srv1/gpu1", "size": "1MB",
                   "start": "1s"}],
                 events=[{"at": "1500ms", "kind": "stop_flow", "flow": "s"}])
    flows = expand_workload(s)
    qps = plan_qps(s, flows)
    assert all(q.fed for q in qps)
    assert build_agent_configs(s, flows, qps=qps)["srv0"]["workload"]["messages"] == []
    feeder = Feeder(s, qps, {"u": "write", "s": "write"})
    status = {"srv0": {"qps": {str(q.qpn): {"outstanding": 0} for q in qps}}}
    posts = feeder.tick(0.0, status)
    assert {p[1] for p in posts} == {qps[0].qpn}  # "s" has not started
    chunk = posts[0][2]
    assert chunk % 1024 == 0 and chunk >= 1024
    posts = feeder.tick(1.2, status)
    assert sum(p[2] for p in posts if p[1] == qps[1].qpn) <= 1_000_000
    assert feeder.tick(1.6, status) and all(p[1] == qps[0].qpn for p in feeder.tick(1.6, status))
    feeder.stop_flow("u")
    assert feeder.tick(1.7, status) == []


def test_feeder_never_posts_past_the_size():
    s = scenario([{"id": "s", "src": "srv0/gpu0", "dst": "srv1/gpu0", "size": "5000B"}],
                 events=[{"at": "1s", "kind": "stop_flow", "flow": "s"}])
    qps = plan_qps(s, expand_workload(s))
    feeder = Feeder(s, qps, {"s": "write"})
    status = {"srv0": {"qps": {str(qps[0].qpn): {"outstanding": 0}}}}
    assert sum(p[2] for p in feeder.tick(0.0, status)) == 5000
    assert feeder.tick(0.1, status) == []


def test_a_flow_rate_cap_is_shared_by_its_qps():
    s = scenario([{**FLOWS[0], "rate": "10Mbps", "qps": 4}])
    configs = build_agent_configs(s, expand_workload(s))
    sent = [q for q in configs["srv0"]["qps"]]
    assert [q["max_rate_bps"] for q in sent] == [2.5e6] * 4
    parse_config(configs["srv0"])  # the agent takes it


def test_per_port_ecn_and_pfc_overrides_reach_the_plan():
    from emulator.control.fabric_plan import ECN_CONFIG, PFC_INGRESS, plan_fabric
    from emulator.scenario.fabric import to_fabric_settings

    s = scenario(FLOWS, switches={"overrides": [
        {"switch": "spine0", "ecn": {"kmin": "10pkts", "kmax": "20pkts"}},
        {"switch": "spine0", "port": 1, "pfc": {"enabled": False}}]})
    settings = to_fabric_settings(s)
    assert settings.ecn.kmin_pkts == 5 and set(settings.ports) == {
        ("spine0", p.number) for p in s.topology.switch("spine0").ports}
    plans = plan_fabric(s.topology, settings)
    spine = plans["spine0"]
    ecn = {e.match[0][1]: dict(e.params)["min_pkts"] for e in spine.table(ECN_CONFIG)}
    assert set(ecn.values()) == {10}
    assert {dict(e.params)["min_pkts"] for e in plans["leaf-r0-0"].table(ECN_CONFIG)} == {5}
    assert not spine.table(PFC_INGRESS)  # the built-in target's buffer generates PFC
    lossless_ports = {p.port for p in spine.ports if p.lossless["lossless_priorities"]}
    assert 1 not in lossless_ports and len(lossless_ports) == len(spine.ports) - 1
    assert next(p for p in spine.ports if p.port == 1).pfc_priorities == ()


def test_link_events_find_the_switch_interfaces():
    s = scenario(FLOWS)
    leaf = s.topology.switch("leaf-r0-0")
    up = next(p for p in leaf.ports if p.peer == "spine0")
    spine = s.topology.switch("spine0")
    down = next(p for p in spine.ports if p.peer == "leaf-r0-0")
    ifaces = {"leaf-r0-0": {up.number: "if-leaf"}, "spine0": {down.number: "if-spine"}}
    assert sorted(link_interfaces(s, ifaces, ("leaf-r0-0", "spine0"))) == ["if-leaf", "if-spine"]
    gpu = s.topology.gpu("srv0/gpu0")
    ifaces = {gpu.switch: {gpu.switch_port: "if-host"}}
    assert link_interfaces(s, ifaces, ("srv0/gpu0", gpu.switch)) == ["if-host"]


def test_quickstart_scenario_is_valid_and_small():
    s = load_scenario(ROOT / "scenarios" / "quickstart.yaml")
    flows = expand_workload(s)
    # emulated: time_scale auto slows it about 20 times here (a frame time of
    # 60 switch passes), so a minute or so of traffic
    assert 2 <= len(flows) <= 4 and s.written.duration_s <= 5 and s.duration_s <= 90
    assert {f.src.split("/")[1] == f.dst.split("/")[1] for f in flows} == {True, False}
    build_agent_configs(s, flows)

"""The agent's JSON config: defaults, merging, and errors that say where."""

from __future__ import annotations

import json

import pytest

from emulator.traffic.agent.config import ConfigError, load_config, parse_config
from emulator.traffic.agent.dcqcn import DcqcnParams
from tests.unit.test_agent_support import host_config


def test_minimal_config_gets_the_documented_defaults():
    cfg = parse_config(host_config("a"))
    nic, qp = cfg.nics[0], cfg.qps[0]
    assert (nic.mtu_bytes, nic.overhead_bytes, nic.pfc_priorities, nic.max_lag_us) == \
        (1500, 0, tuple(range(8)), 5000.0)
    assert (qp.priority, qp.dscp, qp.start_psn, qp.remote_start_psn, qp.ecn) == \
        (3, 26, 0, 0, "auto")
    assert qp.remote_mac is None and qp.sport == 0xC000 | 0x11
    t = qp.transport
    assert (t.path_mtu_bytes, t.ack_req_every, t.ack_every, t.timeout_ms, t.retry_count) == \
        (1024, 16, 0, 200.0, 7)
    assert qp.dcqcn == DcqcnParams()
    assert (cfg.cnp_dscp, cfg.cnp_priority) == (48, 6)
    assert cfg.run.duration_s is None and cfg.run.check_icrc is False


def test_defaults_merge_under_each_qp_key_by_key():
    raw = host_config("a", qp={"transport": {"retry_count": 2}, "dcqcn": {"g": 0.5}})
    raw["defaults"] = {"priority": 5, "dscp": 10, "transport": {"path_mtu_bytes": 512,
                                                                "retry_count": 9},
                       "dcqcn": {"time_scale": 10, "g": 0.25}}
    qp = parse_config(raw).qps[0]
    assert (qp.priority, qp.dscp) == (5, 10)
    assert (qp.transport.path_mtu_bytes, qp.transport.retry_count) == (512, 2)
    assert (qp.dcqcn.time_scale, qp.dcqcn.g) == (10, 0.5)


def test_workload_and_run_sections():
    raw = host_config("a", messages=[{"qp": 0x11, "size_bytes": 10, "op": "send", "at_s": 1.5,
                                      "count": 3, "interval_s": 0.1}],
                      run={"duration_s": 4, "stats_path": "/tmp/x.json"})
    raw["workload"]["start_at_unix"] = 1.7e9
    cfg = parse_config(raw)
    m = cfg.messages[0]
    assert (m.qp, m.size_bytes, m.op, m.at_s, m.count, m.interval_s) == (0x11, 10, "send", 1.5,
                                                                         3, 0.1)
    assert cfg.start_at_unix == 1.7e9 and cfg.run.duration_s == 4.0
    assert json.loads(json.dumps(cfg.to_dict()))["nics"][0]["name"] == "eth0"


@pytest.mark.parametrize("change, message", [
    (lambda c: c.pop("nics"), "nics must be a list"),
    (lambda c: c.update(nics=[]), "at least one NIC"),
    (lambda c: c["nics"][0].pop("ip"), "nics[0]: missing 'ip'"),
    (lambda c: c["nics"][0].update(mac="02:00"), "nics[0].mac: not a MAC"),
    (lambda c: c["nics"][0].update(ip="10.0.0.300"), "nics[0].ip: not an IPv4"),
    (lambda c: c["nics"][0].update(line_rate_bps=0), "line_rate_bps must be a positive"),
    (lambda c: c["nics"][0].update(speed=1), "nics[0]: unknown keys ['speed']"),
    (lambda c: c["qps"][0].update(nic="eth9"), "qps[0].nic: no NIC named 'eth9'"),
    (lambda c: c["qps"][0].update(qpn=1 << 24), "qps[0].qpn = 16777216 is not in"),
    (lambda c: c["qps"][0].update(priority=8), "qps[0].priority = 8"),
    (lambda c: c["qps"][0].update(ecn="ce"), "qps[0].ecn must be one of"),
    (lambda c: c["qps"].append(dict(c["qps"][0])), "qpn 17 appears twice"),
    (lambda c: c["qps"][0].update(transport={"path_mtu_bytes": 1022}), "multiple of 4"),
    (lambda c: c["qps"][0].update(transport={"path_mtu_bytes": 4096}), "more than NIC eth0's"),
    (lambda c: c["qps"][0].update(transport={"acks": 1}), "transport: unknown keys ['acks']"),
    (lambda c: c["qps"][0].update(dcqcn={"g": 2}), "dcqcn.g must be in"),
    (lambda c: c["workload"].update(messages=[{"qp": 5, "size_bytes": 1}]), "no queue pair 5"),
    (lambda c: c["workload"].update(messages=[{"qp": 17, "size_bytes": 1, "op": "read"}]),
     "op must be one of write, send"),
    (lambda c: c.update(run={"duration_s": -1}), "run.duration_s must not be negative"),
])
def test_errors_name_the_place(change, message):
    raw = host_config("a")
    change(raw)
    with pytest.raises(ConfigError) as err:
        parse_config(raw)
    assert message in str(err.value)


def test_load_config_reads_a_file(tmp_path):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(host_config("b")))
    assert load_config(path).name == "b"
    path.write_text("{nope")
    with pytest.raises(ConfigError, match="not JSON"):
        load_config(path)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.json")

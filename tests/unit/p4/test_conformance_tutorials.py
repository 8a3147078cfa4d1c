"""Conformance: the p4lang tutorials' kind of programs (``tests/unit/p4/
programs/``) with runtime JSON as the tutorials' ``sN-runtime.json`` give it,
packets built with Scapy and the expected outputs worked out by hand: basic
forwarding, tunnel, ECN, MRI (header stack in IP options), source routing,
calculator, multicast, firewall (registers as a Bloom filter), QoS with DSCP,
and hash-based load balancing."""

import json
import zlib
from pathlib import Path

from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from emulator.cli.main import main
from emulator.p4.exec.pipeline import QueueInfo, V1ModelPipeline
from emulator.p4.frontend import compile_file
from emulator.p4.runtime_json import apply_runtime_config
from tests.unit.p4.conformance_kit import StepClock, crc16_arc

PROGRAMS = Path(__file__).parent / "programs"
CONFORMANCE = Path(__file__).parent / "conformance"
MAC1, MAC2, MAC3 = "08:00:00:00:01:11", "08:00:00:00:02:22", "08:00:00:00:03:33"
SW = "00:00:00:00:01:01"


def pipeline(path: Path, runtime: dict | None = None, **kw) -> V1ModelPipeline:  # type: ignore[no-untyped-def]
    pipe = V1ModelPipeline(compile_file(path), clock_us=StepClock(), **kw)
    if runtime:
        apply_runtime_config(pipe, runtime, path.name)
    return pipe


def routed(pkt: Ether, dst_mac: str, ttl_delta: int = -1) -> bytes:
    """``pkt`` as ipv4_forward leaves it: MACs rewritten, TTL down, new checksum."""
    out = Ether(bytes(pkt))
    out.src, out.dst = out.dst, dst_mac
    out[IP].ttl += ttl_delta
    del out[IP].chksum
    return bytes(Ether(bytes(out)))


LPM_RUNTIME = {
    "target": "bmv2", "p4info": "build/basic.p4.p4info.txt", "bmv2_json": "build/basic.json",
    "table_entries": [
        {"table": "MyIngress.ipv4_lpm", "default_action": True, "action_name": "MyIngress.drop",
         "action_params": {}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.1.1", 32]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": MAC1, "port": 1}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.2.2", 32]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": MAC2, "port": 2}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.3.0", 24]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": MAC3, "port": 3}},
    ],
}


def test_basic_forwarding_through_the_cli(tmp_path, capsys):
    entries = tmp_path / "s1-runtime.json"
    entries.write_text(json.dumps(LPM_RUNTIME))
    p1 = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.2.2", ttl=64) / UDP(sport=1234, dport=80) / b"hi"
    p2 = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.3.7", ttl=2) / TCP() / b"x"
    p3 = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.9.9.9") / b"lost"
    p4 = Ether(src=MAC1, dst=SW, type=0x86DD) / (b"\x60" + b"\0" * 39)
    args = ["p4", "run", str(PROGRAMS / "basic_forwarding.p4"), "--entries", str(entries), "--json"]
    for i, p in enumerate((p1, p2, p3, p4)):
        args += ["--packet", f"{i}:{bytes(p).hex()}"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["outputs"] == [
        {"port": 2, "hex": routed(p1, MAC2).hex()},
        {"port": 3, "hex": routed(p2, MAC3).hex()},
        {"port": 0, "hex": bytes(p4).hex()},          # not IPv4: egress_spec stays 0
    ]
    assert result["dropped"] == 1


def test_basic_tunnel_encap_forward_and_decap():
    runtime = {"table_entries": LPM_RUNTIME["table_entries"][1:2] + [
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.2.0", 24]},
         "action_name": "MyIngress.myTunnel_ingress", "action_params": {"dst_id": 2}},
        {"table": "MyIngress.myTunnel_exact", "match": {"hdr.myTunnel.dst_id": 2},
         "action_name": "MyIngress.myTunnel_forward", "action_params": {"port": 4}},
        {"table": "MyIngress.myTunnel_exact", "match": {"hdr.myTunnel.dst_id": 1},
         "action_name": "MyIngress.myTunnel_egress", "action_params": {"dstAddr": MAC1, "port": 1}},
    ]}
    pipe = pipeline(PROGRAMS / "basic_tunnel.p4", runtime)
    ip = IP(src="10.0.1.1", dst="10.0.2.2", ttl=64) / UDP() / b"payload"
    pkt = bytes(Ether(src=MAC1, dst=SW) / ip)
    out = pipe.process(1, pkt).outputs
    expected = bytes.fromhex(SW.replace(":", "") + MAC1.replace(":", "") + "1212" + "0800" + "0002") + bytes(ip)
    assert [(o.port, o.data) for o in out] == [(4, expected)]
    # the far end: tunnel id 1 is decapsulated to the host
    inbound = bytes.fromhex("ffffffffffff" + MAC2.replace(":", "") + "1212" + "0800" + "0001") + bytes(ip)
    out = pipe.process(4, inbound).outputs
    assert [(o.port, o.data) for o in out] == [(1, bytes.fromhex(MAC1.replace(":", "") + MAC2.replace(":", "")
                                                                 + "0800") + bytes(ip))]
    assert pipe.counters["MyIngress.ingressTunnelCounter"].packets[2] == 1
    assert pipe.counters["MyIngress.egressTunnelCounter"].packets[1] == 1


def test_ecn_marks_congestion_experienced_above_the_threshold():
    pipe = pipeline(PROGRAMS / "ecn_marking.p4", LPM_RUNTIME)
    pkt = bytes(Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.2.2", tos=0x01) / UDP() / b"x")
    for depth, ecn in ((0, 1), (9, 1), (10, 3), (50, 3)):
        res = pipe.ingress(1, pkt)
        (item,) = res.queued
        (out,) = pipe.egress(item, QueueInfo(enq_qdepth=depth)).outputs
        assert IP(out.data[14:]).tos & 3 == ecn
        assert _csum(out.data[14:34]) == 0                 # checksum updated
    not_ect = bytes(Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.2.2", tos=0) / UDP())
    (item,) = pipe.ingress(1, not_ect).queued
    (out,) = pipe.egress(item, QueueInfo(enq_qdepth=50)).outputs
    assert IP(out.data[14:]).tos & 3 == 0


def _csum(data: bytes) -> int:
    s = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def _mri_ip(traces: list[tuple[int, int]], payload: bytes = b"\x00" * 8) -> bytes:
    """IPv4 with the MRI option (copy 0, class 2, option 31), count, traces."""
    option = bytes([0x5F, 4 + 8 * len(traces)]) + len(traces).to_bytes(2, "big") + b"".join(
        swid.to_bytes(4, "big") + q.to_bytes(4, "big") for swid, q in traces)
    ihl = 5 + len(option) // 4
    total = ihl * 4 + len(payload)
    hdr = bytearray(bytes([0x40 | ihl, 0]) + total.to_bytes(2, "big") + bytes.fromhex("00014000") +
                    bytes([64, 17, 0, 0]) + bytes([10, 0, 1, 1]) + bytes([10, 0, 2, 2]))
    hdr[10:12] = _csum(bytes(hdr) + option).to_bytes(2, "big")
    return bytes(hdr) + option + payload


def test_mri_pushes_a_switch_trace_into_the_ip_options():
    runtime = {"table_entries": LPM_RUNTIME["table_entries"] + [
        {"table": "MyEgress.swtrace", "default_action": True, "action_name": "MyEgress.add_swtrace",
         "action_params": {"swid": 7}}]}
    pipe = pipeline(PROGRAMS / "mri.p4", runtime)
    eth_in = bytes.fromhex(SW.replace(":", "") + MAC1.replace(":", "") + "0800")
    eth_out = bytes.fromhex(MAC2.replace(":", "") + SW.replace(":", "") + "0800")
    pkt = eth_in + _mri_ip([(3, 0)])
    (out,) = pipe.process(1, pkt).outputs
    expected = bytearray(_mri_ip([(7, 0), (3, 0)]))
    expected[8] = 63                                      # ttl
    expected[10:12] = b"\0\0"
    # the tutorial's update_checksum lists the fixed fields only, not the options
    expected[10:12] = _csum(bytes(expected[:20])).to_bytes(2, "big")
    assert (out.port, out.data) == (2, eth_out + bytes(expected))


def test_source_routing_pops_hops_and_finishes_with_ipv4():
    pipe = pipeline(PROGRAMS / "source_routing.p4")
    eth = bytes.fromhex(SW.replace(":", "") + MAC1.replace(":", ""))
    ip = bytes(IP(src="10.0.1.1", dst="10.0.2.2", ttl=10) / UDP())
    hops = bytes.fromhex("0002" "0003" "8004")           # bos bit is the top bit
    ttl_down = bytearray(ip)
    ttl_down[8] -= 1                                       # no checksum update in this program
    (out,) = pipe.process(1, eth + b"\x12\x34" + hops + ip).outputs
    assert (out.port, out.data) == (2, eth + b"\x12\x34" + bytes.fromhex("0003" "8004") + bytes(ttl_down))
    (out,) = pipe.process(1, eth + b"\x12\x34" + bytes.fromhex("8004") + ip).outputs
    assert (out.port, out.data) == (4, eth + b"\x08\x00" + bytes(ttl_down))
    assert pipe.process(1, eth + b"\x08\x00" + ip).outputs == []


def test_calculator_operations_and_reply_to_the_ingress_port():
    pipe = pipeline(PROGRAMS / "calc.p4")
    eth = bytes.fromhex("000000000002" "000000000001" "1234")

    def calc(op: str, a: int, b: int) -> bytes:
        return b"P4\x01" + op.encode() + a.to_bytes(4, "big") + b.to_bytes(4, "big") + bytes(4)
    for op, a, b, res in (("+", 7, 5, 12), ("-", 5, 7, 2**32 - 2), ("&", 0xF0F0, 0xFF00, 0xF000),
                          ("|", 1, 2, 3), ("^", 0xFF, 0x0F, 0xF0)):
        (out,) = pipe.process(3, eth + calc(op, a, b)).outputs
        reply = bytes.fromhex("000000000001" "000000000002" "1234") + calc(op, a, b)[:-4] + res.to_bytes(4, "big")
        assert (out.port, out.data) == (3, reply)
    assert pipe.process(3, eth + calc("*", 1, 1)).outputs == []
    assert pipe.process(3, eth + b"P5\x01+" + bytes(12)).outputs == []


def test_multicast_floods_to_the_group_but_not_back():
    runtime = {
        "table_entries": [{"table": "MyIngress.mac_lookup", "match": {"hdr.ethernet.dstAddr": MAC2},
                           "action_name": "MyIngress.forward", "action_params": {"port": 2}}],
        "multicast_group_entries": [{"multicast_group_id": 1, "replicas": [
            {"egress_port": 4, "instance": 1}, {"egress_port": 1, "instance": 1},
            {"egress_port": 2, "instance": 1}, {"egress_port": 3, "instance": 1}]}],
    }
    pipe = pipeline(PROGRAMS / "multicast.p4", runtime)
    frame = bytes(Ether(src=MAC1, dst="ff:ff:ff:ff:ff:ff") / b"broadcast")
    assert [o.port for o in pipe.process(1, frame).outputs] == [2, 3, 4]
    assert [o.port for o in pipe.process(3, bytes(Ether(src=MAC1, dst=MAC2))).outputs] == [2]


def test_firewall_bloom_filter_allows_only_replies_to_inside_connections():
    runtime = {"table_entries": [
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.1.1", 32]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": MAC1, "port": 1}},
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.3.3", 32]},
         "action_name": "MyIngress.ipv4_forward", "action_params": {"dstAddr": MAC3, "port": 3}},
        {"table": "MyIngress.check_ports", "match": {"standard_metadata.ingress_port": 1,
                                                     "standard_metadata.egress_spec": 3},
         "action_name": "MyIngress.set_direction", "action_params": {"dir": 0}},
        {"table": "MyIngress.check_ports", "match": {"standard_metadata.ingress_port": 3,
                                                     "standard_metadata.egress_spec": 1},
         "action_name": "MyIngress.set_direction", "action_params": {"dir": 1}},
    ]}
    pipe = pipeline(PROGRAMS / "firewall.p4", runtime)
    syn = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.3.3") / TCP(sport=5000, dport=80, flags="S")
    reply = Ether(src=MAC3, dst=SW) / IP(src="10.0.3.3", dst="10.0.1.1") / TCP(sport=80, dport=5000, flags="SA")
    stranger = Ether(src=MAC3, dst=SW) / IP(src="10.0.3.3", dst="10.0.1.1") / TCP(sport=80, dport=5001, flags="S")
    assert pipe.process(3, bytes(reply)).outputs == []        # nothing learnt yet
    assert [o.port for o in pipe.process(1, bytes(syn)).outputs] == [3]
    assert [o.port for o in pipe.process(3, bytes(reply)).outputs] == [1]
    assert pipe.process(3, bytes(stranger)).outputs == []
    # the filter positions are crc16/crc32 of (src, dst, sport, dport, proto) mod 4096
    key = bytes([10, 0, 1, 1, 10, 0, 3, 3]) + (5000).to_bytes(2, "big") + (80).to_bytes(2, "big") + b"\x06"
    assert pipe.registers["MyIngress.bloom_filter_2"].values[zlib.crc32(key) % 4096] == 1
    assert sum(pipe.registers["MyIngress.bloom_filter_1"].values) == 1


def test_qos_classifies_dscp_polices_and_picks_the_queue():
    runtime = {"table_entries": [
        {"table": "MyIngress.ipv4_lpm", "match": {"hdr.ipv4.dstAddr": ["10.0.2.0", 24]},
         "action_name": "MyIngress.forward", "action_params": {"port": 2}}]}
    pipe = pipeline(PROGRAMS / "qos.p4", runtime)
    roce = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.2.2", tos=0) / UDP(sport=1, dport=4791) / b"x"
    (out,) = pipe.process(1, bytes(roce)).outputs
    assert IP(out.data[14:]).tos >> 2 == 34 and out.priority > 0     # AF41
    other = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.2.2", tos=0) / UDP(sport=1, dport=53)
    (out,) = pipe.process(1, bytes(other)).outputs
    assert IP(out.data[14:]).tos == 0


def test_load_balance_hash_picks_the_next_hop():
    pipe = pipeline(CONFORMANCE / "ecmp_hash.p4", {"table_entries": [
        {"table": "MyIngress.ecmp_group", "match": {"hdr.ipv4.dstAddr": ["10.0.0.1", 32]},
         "action_name": "MyIngress.set_ecmp_select", "action_params": {"ecmp_base": 0, "ecmp_count": 2}},
        {"table": "MyIngress.ecmp_nhop", "match": {"meta.ecmp_select": 0},
         "action_name": "MyIngress.set_nhop", "action_params": {"nhop_dmac": MAC2, "nhop_ipv4": "10.0.2.2", "port": 2}},
        {"table": "MyIngress.ecmp_nhop", "match": {"meta.ecmp_select": 1},
         "action_name": "MyIngress.set_nhop", "action_params": {"nhop_dmac": MAC3, "nhop_ipv4": "10.0.3.3", "port": 3}},
    ]})
    for sport in (1000, 1001, 1002, 1003, 1004):
        pkt = Ether(src=MAC1, dst=SW) / IP(src="10.0.1.1", dst="10.0.0.1") / TCP(sport=sport, dport=80)
        key = bytes([10, 0, 1, 1, 10, 0, 0, 1, 6]) + sport.to_bytes(2, "big") + (80).to_bytes(2, "big")
        choice = crc16_arc(key) % 2
        (out,) = pipe.process(1, bytes(pkt)).outputs
        assert out.port == (2, 3)[choice]
        assert IP(out.data[14:]).dst == ("10.0.2.2", "10.0.3.3")[choice]



"""The executor on a hand-built IR of basic IPv4 forwarding."""

from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from emulator.p4.exec.pipeline import V1ModelPipeline
from tests.unit.p4.irkit import basic_program


def _pipeline():
    program, _ = basic_program()
    pipe = V1ModelPipeline(program)
    t = pipe.table("MyIngress.ipv4_lpm")
    key = t.canonical_key([(0x0A000200, 24)])
    t.insert(t.make_entry("MyIngress.ipv4_forward", [0x080000000222, 2], key))
    return pipe


def test_forward_rewrites_macs_ttl_checksum():
    pipe = _pipeline()
    pkt = Ether(dst="00:00:00:00:01:01", src="08:00:00:00:01:11") / IP(
        src="10.0.1.1", dst="10.0.2.2", ttl=64) / UDP(sport=1, dport=2) / b"payload"
    res = pipe.process(1, bytes(pkt))
    assert res.dropped == 0 and len(res.outputs) == 1
    out = res.outputs[0]
    assert out.port == 2
    expected = Ether(dst="08:00:00:00:02:22", src="00:00:00:00:01:01") / IP(
        src="10.0.1.1", dst="10.0.2.2", ttl=63) / UDP(sport=1, dport=2) / b"payload"
    exp = Ether(bytes(expected))
    del exp[IP].chksum
    assert out.data == bytes(exp)


def test_miss_drops_with_default_action():
    pipe = _pipeline()
    pkt = Ether() / IP(dst="10.0.9.9") / b"x"
    res = pipe.process(1, bytes(pkt))
    assert res.outputs == [] and res.dropped == 1


def test_non_ip_passes_unparsed_payload_to_port_0():
    pipe = _pipeline()
    data = bytes(Ether(type=0x88B5) / (b"\x01" * 20))
    res = pipe.process(3, data)
    assert [(o.port, o.data) for o in res.outputs] == [(0, data)]


def test_short_packet_sets_parser_error_and_continues():
    pipe = _pipeline()
    data = bytes(Ether(type=0x800))[:14] + b"\x45\x00"
    res = pipe.process(1, data)
    # ipv4 invalid: no table apply, egress_spec 0 -> out port 0, bytes unchanged
    assert [(o.port, o.data) for o in res.outputs] == [(0, data)]

"""Source to packets: the front end's IR run by the executor."""

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from emulator.p4.errors import CompileError
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.frontend import compile_text

HEADER = """
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> etherType; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> totalLen; bit<16> identification;
    bit<3> flags; bit<13> fragOffset; bit<8> ttl; bit<8> protocol; bit<16> hdrChecksum;
    bit<32> srcAddr; bit<32> dstAddr;
}
struct headers { ethernet_t ethernet; ipv4_t ipv4; }
struct metadata { bit<32> tmp; bit<8> small; }
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control VC(inout headers hdr, inout metadata meta) { apply { } }
control CC(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.totalLen,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.fragOffset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); } }
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }
"""


def program(ingress: str, egress: str | None = None) -> V1ModelPipeline:
    text = HEADER + ingress
    if egress is not None:
        text = text.replace("control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) { apply { } }", egress)
    text += "\nV1Switch(P(), VC(), I(), E(), CC(), D()) main;\n"
    return V1ModelPipeline(compile_text(text, "t.p4"))


def ip_frame(**ip):
    return bytes(Ether(dst="00:00:00:00:00:01", src="00:00:00:00:00:02") / IP(**ip) / UDP() / b"data")


def test_arithmetic_wraps_and_slices():
    pipe = program("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.ipv4.ttl = hdr.ipv4.ttl + 8w250;          // wraps
        hdr.ipv4.diffserv = hdr.ipv4.srcAddr[7:0] |+| 8w200;   // saturates
        hdr.ipv4.identification = (bit<16>)(hdr.ipv4.dstAddr >> 16) ++ 8w0 [7:0] == 0 ? 16w7 : 16w9;
    }
}
""")
    out = pipe.process(1, ip_frame(src="1.2.3.100", dst="10.20.3.4", ttl=10, id=0)).outputs
    assert [o.port for o in out] == [2]
    ip = Ether(out[0].data)[IP]
    # (bit<16>)0x0a14 ++ 8w0 is 0x0a1400, not 0: the false branch
    assert ip.ttl == 4 and ip.tos == 255 and ip.id == 9
    fresh = ip.copy()
    del fresh.chksum
    assert ip.chksum == IP(bytes(fresh)).chksum


def test_exit_stops_ingress_and_if_else():
    pipe = program("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (hdr.ipv4.ttl < 5) { sm.egress_spec = 3; exit; } else { sm.egress_spec = 4; }
        sm.egress_spec = 5;
    }
}
""")
    assert [o.port for o in pipe.process(0, ip_frame(ttl=2)).outputs] == [3]
    assert [o.port for o in pipe.process(0, ip_frame(ttl=9)).outputs] == [5]


def test_ternary_table_with_const_entries_and_switch():
    pipe = program("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    action to(bit<9> port) { sm.egress_spec = port; }
    action drop() { mark_to_drop(sm); }
    table t {
        key = { hdr.ipv4.dstAddr: ternary; hdr.ipv4.protocol: exact; }
        actions = { to; drop; }
        const entries = {
            (0x0a000000 &&& 0xff000000, 17): to(7);
            (_, 17): to(8);
            (_, _): drop();
        }
        default_action = drop();
    }
    apply {
        switch (t.apply().action_run) {
            to: { hdr.ipv4.ttl = 1; }
            default: { }
        }
    }
}
""")
    out = pipe.process(0, ip_frame(dst="10.9.9.9")).outputs
    assert [o.port for o in out] == [7] and Ether(out[0].data)[IP].ttl == 1
    assert [o.port for o in pipe.process(0, ip_frame(dst="11.9.9.9")).outputs] == [8]
    assert pipe.process(0, bytes(Ether(dst="00:00:00:00:00:01") / IP(proto=6) / TCP())).dropped == 1


def test_errors_are_reported_with_locations():
    with pytest.raises(CompileError) as err:
        program("""
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        hdr.ipv4.ttl = hdr.ipv4.srcAddr;
        undeclared = 1;
    }
}
""")
    text = str(err.value)
    assert "t.p4:" in text and "cannot convert bit<32> to bit<8>" in text
    assert "'undeclared' is not declared" in text

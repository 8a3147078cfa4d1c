/*
 * Next-hop routing in two lookups (LPM picks the next hop, an exact match
 * on the rewritten address picks its MAC); every packet reports its source
 * MAC to the controller in a digest. Same control-plane objects as p4c's
 * testdata/p4_16_samples/issue1352-bmv2.p4.
 */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> mac_addr_t;

header ethernet_t {
    mac_addr_t dstAddr;
    mac_addr_t srcAddr;
    bit<16>    etherType;
}

header ipv4_t {
    bit<8>  version_ihl;
    bit<8>  tos;
    bit<16> totalLen;
    bit<32> id_flags_frag;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct test_digest_t {
    mac_addr_t in_mac_srcAddr;
}

struct metadata {
    test_digest_t test_digest;
}

struct headers {
    ethernet_t ethernet;
    ipv4_t     ipv4;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: got_ethernet_ipv4;
            default: accept;
        }
    }
    state got_ethernet_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_dmac(mac_addr_t dstAddr) {
        hdr.ethernet.dstAddr = dstAddr;
    }

    // Declared before ipv4_lpm, so listed first although applied second.
    table forward {
        key = { hdr.ipv4.dstAddr : exact; }
        actions = { set_dmac; drop; NoAction; }
        default_action = NoAction();
    }

    action set_nhop(bit<32> dstAddr, bit<9> port) {
        hdr.ipv4.dstAddr = dstAddr;
        standard_metadata.egress_spec = port;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { set_nhop; drop; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    action send_digest() {
        meta.test_digest.in_mac_srcAddr = hdr.ethernet.srcAddr;
        digest<test_digest_t>(1, meta.test_digest);
    }

    apply {
        if (hdr.ipv4.isValid()) {
            ipv4_lpm.apply();
            forward.apply();
        }
        send_digest();
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action rewrite_mac(mac_addr_t srcAddr) {
        hdr.ethernet.srcAddr = srcAddr;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table send_frame {
        key = { standard_metadata.egress_port : exact; }
        actions = { rewrite_mac; NoAction; }
        size = 1024;
        default_action = NoAction();
    }

    apply {
        if (hdr.ipv4.isValid()) {
            send_frame.apply();
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;

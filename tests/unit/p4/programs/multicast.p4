/*
 * L2 switching with flooding: known destinations go to one port, unknown
 * ones to the multicast group of the ingress port; egress prunes the copy
 * that would go back out of the ingress port.
 */
#include <core.p4>
#include <v1model.p4>

typedef bit<48> macAddr_t;
typedef bit<9>  egressSpec_t;

header ethernet_t {
    macAddr_t dstAddr;
    macAddr_t srcAddr;
    bit<16>   etherType;
}

struct metadata { }

struct headers {
    ethernet_t ethernet;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
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

    action forward(egressSpec_t port) {
        standard_metadata.egress_spec = port;
    }

    action flood(bit<16> group) {
        standard_metadata.mcast_grp = group;
    }

    table mac_lookup {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { forward; flood; drop; }
        size = 1024;
        default_action = drop();
    }

    table flood_group {
        key = { standard_metadata.ingress_port : exact; }
        actions = { flood; drop; }
        size = 64;
        default_action = flood(1);
    }

    apply {
        if (!mac_lookup.apply().hit) {
            flood_group.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    action drop() {
        mark_to_drop(standard_metadata);
    }
    apply {
        // A multicast copy never goes back where the packet came from.
        if (standard_metadata.mcast_grp != 0 &&
            standard_metadata.egress_port == standard_metadata.ingress_port) {
            drop();
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;

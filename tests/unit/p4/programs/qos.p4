/*
 * QoS with DSCP: classify traffic into a DSCP class (ternary and range
 * keys, constant entries with priorities), police one class with a meter,
 * and map the DSCP to one of eight strict-priority egress queues.
 */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_IPV4 = 0x800;
const bit<6>  DSCP_EF   = 46;    // expedited forwarding (RFC 3246)
const bit<6>  DSCP_AF41 = 34;
const bit<6>  DSCP_BE   = 0;

enum bit<2> Color_t {
    GREEN  = 0,
    YELLOW = 1,
    RED    = 2
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<6>  dscp;
    bit<2>  ecn;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

header l4_ports_t {
    bit<16> srcPort;
    bit<16> dstPort;
}

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

struct metadata {
    bit<2>  color;
    bit<32> policer_index;
}

struct headers {
    packet_in_t packet_in;
    ethernet_t  ethernet;
    ipv4_t      ipv4;
    l4_ports_t  l4;
}

/* The queue of a DSCP: its class selector (top three bits). */
bit<3> dscp_to_queue(in bit<6> dscp) {
    return (bit<3>)(dscp >> 3);
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            TYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.protocol, hdr.ipv4.fragOffset) {
            (6, 0)  : parse_l4;
            (17, 0) : parse_l4;
            default : accept;
        }
    }
    state parse_l4 {
        packet.extract(hdr.l4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    direct_counter(CounterType.packets_and_bytes) classify_counter;
    meter(32w64, MeterType.bytes) policer;

    action drop() {
        mark_to_drop(standard_metadata);
    }

    action set_dscp(bit<6> dscp) {
        hdr.ipv4.dscp = dscp;
    }

    action set_dscp_and_police(bit<6> dscp, bit<32> index) {
        hdr.ipv4.dscp = dscp;
        meta.policer_index = index;
    }

    @name("classify")
    table classify {
        key = {
            hdr.ipv4.protocol : ternary @name("proto");
            hdr.l4.dstPort    : range   @name("dport");
            hdr.ipv4.dscp     : ternary;
        }
        actions = {
            set_dscp;
            set_dscp_and_police;
            @defaultonly NoAction;
        }
        // Const entries match in program order (p4c rejects explicit
        // priorities on const entries).
        const entries = {
            (17, 4791 .. 4791, _)        : set_dscp(DSCP_AF41);    // RoCEv2
            (6, 5000 .. 5100, _)         : set_dscp_and_police(DSCP_EF, 1);
            (_, _, DSCP_EF &&& 0x3f)     : set_dscp(DSCP_EF);
        }
        default_action = NoAction();
        counters = classify_counter;
        size = 64;
    }

    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dstAddr : lpm; }
        actions = { forward; drop; }
        default_action = drop();
        size = 1024;
    }

    apply {
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        switch (classify.apply().action_run) {
            set_dscp_and_police: {
                policer.execute_meter<bit<2>>(meta.policer_index, meta.color);
                if (meta.color == (bit<2>)Color_t.RED) {
                    drop();
                    exit;
                } else if (meta.color == (bit<2>)Color_t.YELLOW) {
                    hdr.ipv4.dscp = DSCP_BE;
                }
            }
            set_dscp:
            NoAction: { }
        }
        ipv4_lpm.apply();
        standard_metadata.priority = dscp_to_queue(hdr.ipv4.dscp);
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply { }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.dscp, hdr.ipv4.ecn,
              hdr.ipv4.totalLen, hdr.ipv4.identification, hdr.ipv4.flags,
              hdr.ipv4.fragOffset, hdr.ipv4.ttl, hdr.ipv4.protocol,
              hdr.ipv4.srcAddr, hdr.ipv4.dstAddr },
            hdr.ipv4.hdrChecksum,
            HashAlgorithm.csum16);
    }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;

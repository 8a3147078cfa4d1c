/* relay: IPv4 longest-prefix forwarding, and a relay header (EtherType
 * 0x88b5, local experimental) that carries frames to a switch port picked
 * by the header's hop id, whatever they hold behind it. Counts packets per
 * ingress port and per LPM entry. Written for aifabric's tests in the
 * layout of a p4lang tutorials exercise. */
#include <core.p4>
#include <v1model.p4>

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_RELAY = 0x88b5;

header ethernet_h {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

header relay_h {
    bit<16> hop_id;
    bit<16> next_type;
}

header ipv4_h {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> total_len;
    bit<16> ident;
    bit<3>  flags;
    bit<13> frag_offset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> checksum;
    bit<32> src;
    bit<32> dst;
}

struct headers_t {
    ethernet_h ethernet;
    relay_h    relay;
    ipv4_h     ipv4;
}

struct meta_t { }

parser RelayParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                   inout standard_metadata_t std) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_RELAY: parse_relay;
            default: accept;
        }
    }
    state parse_relay {
        pkt.extract(hdr.relay);
        transition accept;
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition accept;
    }
}

control RelayVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control RelayIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    counter(512, CounterType.packets_and_bytes) rx_port;
    direct_counter(CounterType.packets_and_bytes) route_hits;

    action discard() {
        mark_to_drop(std);
    }
    action route(bit<48> next_mac, bit<9> port) {
        std.egress_spec = port;
        hdr.ethernet.src = hdr.ethernet.dst;
        hdr.ethernet.dst = next_mac;
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
    action to_port(bit<9> port) {
        std.egress_spec = port;
    }
    table routes {
        key = { hdr.ipv4.dst: lpm; }
        actions = { route; discard; }
        counters = route_hits;
        default_action = discard();
        size = 256;
    }
    table hops {
        key = { hdr.relay.hop_id: exact; }
        actions = { to_port; discard; }
        default_action = discard();
        size = 64;
    }
    apply {
        rx_port.count((bit<32>) std.ingress_port);
        if (hdr.relay.isValid()) {
            hops.apply();
        } else if (hdr.ipv4.isValid()) {
            routes.apply();
        }
    }
}

control RelayEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t std) {
    apply { }
}

control RelayChecksum(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.tos, hdr.ipv4.total_len,
              hdr.ipv4.ident, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}

control RelayDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.relay);
        pkt.emit(hdr.ipv4);
    }
}

V1Switch(RelayParser(), RelayVerify(), RelayIngress(), RelayEgress(), RelayChecksum(),
         RelayDeparser()) main;

/*
 * The 20200408 flavour of v1model: counters, meters and registers take
 * their index type as a type argument, and ports have type PortId_t.
 * Also exercises header unions, value sets, serializable enums, tuples,
 * generic functions and the *_preserving_field_list externs.
 */
#define V1MODEL_VERSION 20200408
#include <core.p4>
#include <v1model.p4>

typedef bit<8> slot_t;

enum bit<16> EtherType {
    IPV4 = 0x0800,
    IPV6 = 0x86dd,
    PROBE = 0x88b5
}

header ethernet_t {
    bit<48>   dst;
    bit<48>   src;
    EtherType type;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  tos;
    bit<16> len;
    bit<16> id;
    bit<3>  flags;
    bit<13> frag;
    bit<8>  ttl;
    bit<8>  proto;
    bit<16> csum;
    bit<32> src;
    bit<32> dst;
}

header ipv6_t {
    bit<4>   version;
    bit<8>   tclass;
    bit<20>  label;
    bit<16>  len;
    bit<8>   next;
    bit<8>   hops;
    bit<128> src;
    bit<128> dst;
}

header_union ip_t {
    ipv4_t v4;
    ipv6_t v6;
}

header probe_t {
    slot_t  slot;
    bit<8>  hops;
}

struct metadata {
    @field_list(1)
    bit<32> seen;
    @field_list(1, 2)
    PortId_t first_port;
    tuple<bit<8>, bit<16>> pair;
}

struct headers {
    ethernet_t eth;
    ip_t       ip;
    probe_t    probe;
}

T pick<T>(in bool first, in T a, in T b) {
    if (first) {
        return a;
    }
    return b;
}

parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    value_set<bit<16>>(4) probe_types;

    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.type) {
            EtherType.IPV4: v4;
            EtherType.IPV6: v6;
            default: other;
        }
    }
    state other {
        transition select((bit<16>)hdr.eth.type) {
            probe_types: probe;
            default: accept;
        }
    }
    state v4 {
        pkt.extract(hdr.ip.v4);
        transition accept;
    }
    state v6 {
        pkt.extract(hdr.ip.v6);
        transition accept;
    }
    state probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control VC(inout headers hdr, inout metadata meta) {
    apply { }
}

control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    counter<slot_t>(256, CounterType.packets) per_slot;
    register<bit<32>, slot_t>(256) seen;
    meter<bit<8>>(16, MeterType.packets) m;
    bit<2> color = 0;

    action to_port(PortId_t port) {
        sm.egress_spec = port;
    }

    table fwd {
        key = { sm.ingress_port : exact; }
        actions = { to_port; NoAction; }
        default_action = NoAction();
    }

    apply {
        fwd.apply();
        if (hdr.probe.isValid()) {
            bit<32> n;
            seen.read(n, hdr.probe.slot);
            seen.write(hdr.probe.slot, n |+| 1);
            per_slot.count(hdr.probe.slot);
            m.execute_meter(hdr.probe.slot, color);
            hdr.probe.hops = pick(hdr.probe.hops < 255, hdr.probe.hops + 1, hdr.probe.hops);
            meta.seen = n;
            meta.first_port = sm.ingress_port;
            meta.pair = { hdr.probe.slot, 16w7 };
            if (n == 0) {
                clone_preserving_field_list(CloneType.I2E, 32w100, 1);
            }
        }
        if (hdr.ip.v4.isValid()) {
            hdr.ip.v4.ttl = hdr.ip.v4.ttl |-| 1;
        }
    }
}

control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    apply {
        if (sm.instance_type == 1) {
            recirculate_preserving_field_list(2);
        }
    }
}

control CC(inout headers hdr, inout metadata meta) {
    apply { }
}

control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.eth);
        pkt.emit(hdr.ip);
        pkt.emit(hdr.probe);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;

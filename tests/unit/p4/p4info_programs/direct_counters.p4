/*
 * Two direct counters, one attached to a table and one attached to
 * nothing (a symbol, but not in the P4Info); a const default action with an
 * argument; no extern function anywhere. Same control-plane objects as p4c's
 * testdata/p4_16_samples/unused-counter-bmv2.p4.
 */
#include <core.p4>
#include <v1model.p4>

header hdr {
    bit<32> a;
}

struct Headers {
    hdr h;
}

struct Meta { }

parser p(packet_in b, out Headers h, inout Meta m, inout standard_metadata_t sm) {
    state start {
        b.extract(h.h);
        transition accept;
    }
}

control vrfy(inout Headers h, inout Meta m) { apply { } }

control ingress(inout Headers h, inout Meta m, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets) c;
    direct_counter(CounterType.packets) c1;

    action my_action(bit<9> a) {
        sm.egress_spec = a;
    }

    table t {
        actions = { my_action; }
        const default_action = my_action(0);
        counters = c;
    }

    apply {
        t.apply();
    }
}

control egress(inout Headers h, inout Meta m, inout standard_metadata_t sm) { apply { } }

control update(inout Headers h, inout Meta m) { apply { } }

control deparser(packet_out b, in Headers h) {
    apply {
        b.emit(h.h);
    }
}

V1Switch(p(), vrfy(), ingress(), egress(), update(), deparser()) main;

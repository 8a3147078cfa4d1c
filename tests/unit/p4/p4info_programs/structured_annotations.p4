/*
 * P4-16 structured annotations (@name[...]) on a table and on its action
 * references; their expressions are compile-time values (p4c folds them).
 * Same control-plane objects as p4c's
 * testdata/p4_16_samples/structured_annotations.p4.
 */
#include <core.p4>
#include <v1model.p4>

#define GREETING "hello"
#define SIX 6

struct headers_t { }

struct metadata_t { }

parser parserImpl(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t stdmeta) {
    state start { transition accept; }
}

control verifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ingressImpl(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t stdmeta) {
    action my_drop() {
        mark_to_drop(stdmeta);
    }

    action redirect() {
        stdmeta.egress_spec = stdmeta.ingress_port;
    }

    @MixedExprList[1, GREETING, true, 3 == 4, SIX + 5]
    @MixedKV[label = "text", my_bool = true, int_val = 3 * 2]
    table t {
        actions = {
            @myid[1] redirect;
            @myid[2] my_drop;
            NoAction;
        }
        default_action = NoAction();
    }

    apply {
        t.apply();
    }
}

control egressImpl(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t stdmeta) {
    apply { }
}

control updateChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control deparserImpl(packet_out packet, in headers_t hdr) { apply { } }

V1Switch(parserImpl(), verifyChecksum(), ingressImpl(), egressImpl(), updateChecksum(),
         deparserImpl()) main;

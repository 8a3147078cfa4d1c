/*
 * A @controller_header header whose only field has a control-plane name
 * with a dot ("b.b"). p4c's testdata/p4_16_samples/issue3329-bmv2.p4 gets
 * the same name by nesting a struct `s { bit<32> b; }` in the header (p4c
 * flattens it); the built-in front end does not accept structs in headers,
 * so the field is renamed with @name instead: p4c produces the same P4Info.
 */
#include <core.p4>
#include <v1model.p4>

@controller_header("packet_out")
header packet_out_header_t {
    @name("b.b") bit<32> b;
}

struct headers_t {
    packet_out_header_t packet_out;
}

struct metadata_t { }

parser ParserImpl(packet_in packet, out headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t stdmeta) {
    state start { transition accept; }
}

control verifyChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control ingress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t stdmeta) {
    apply { }
}

control egress(inout headers_t hdr, inout metadata_t meta, inout standard_metadata_t stdmeta) {
    apply { }
}

control computeChecksum(inout headers_t hdr, inout metadata_t meta) { apply { } }

control DeparserImpl(packet_out packet, in headers_t hdr) { apply { } }

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;

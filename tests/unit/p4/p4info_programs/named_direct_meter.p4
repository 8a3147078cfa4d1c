/*
 * A direct meter renamed with @name, actions renamed with @name, and an
 * action no table uses (left out). Same control-plane objects as p4c's
 * testdata/p4_16_samples/named_meter_bmv2.p4.
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct meta_t {
    bit<32> meter_tag;
}

struct metadata {
    meta_t meta;
}

struct headers {
    ethernet_t ethernet;
}

parser ParserImpl(packet_in packet, out headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control ingress(inout headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    @name("namedmeter") direct_meter<bit<32>>(MeterType.packets) color_meter;

    action _drop() {
        mark_to_drop(standard_metadata);
    }
    action _nop() { }
    // Referenced by no table: removed by the front end.
    action m_action(bit<9> meter_idx) {
        standard_metadata.egress_spec = meter_idx;
    }

    table m_filter {
        key = { meta.meta.meter_tag : exact; }
        actions = { _drop; _nop; NoAction; }
        size = 16;
        default_action = NoAction();
    }

    @name("m_action_2") action metered_forward(bit<9> meter_idx) {
        standard_metadata.egress_spec = meter_idx;
        color_meter.read(meta.meta.meter_tag);
    }
    @name("_nop_2") action metered_nop() {
        color_meter.read(meta.meta.meter_tag);
    }

    table m_table {
        key = { hdr.ethernet.srcAddr : exact; }
        actions = { metered_forward; metered_nop; NoAction; }
        size = 16384;
        default_action = NoAction();
        meters = color_meter;
    }

    apply {
        m_table.apply();
        m_filter.apply();
    }
}

control egress(inout headers hdr, inout metadata meta,
               inout standard_metadata_t standard_metadata) {
    apply { }
}

control DeparserImpl(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

control verifyChecksum(inout headers hdr, inout metadata meta) { apply { } }

control computeChecksum(inout headers hdr, inout metadata meta) { apply { } }

V1Switch(ParserImpl(), verifyChecksum(), ingress(), egress(), computeChecksum(),
         DeparserImpl()) main;

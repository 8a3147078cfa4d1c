/*
 * A declared action profile and action selector carrying the P4Runtime
 * sizing annotations (@max_group_size, @selector_size_semantics,
 * @max_member_weight): only the selector exposes them. Same control-plane
 * objects as p4c's
 * testdata/p4_16_samples/action_profile_sum_of_members_annotation.p4.
 */
#include <core.p4>
#include <v1model.p4>

struct H { }

struct M {
    bit<32> hash1;
}

parser ParserI(packet_in pk, out H hdr, inout M meta, inout standard_metadata_t smeta) {
    state start { transition accept; }
}

control VerifyChecksumI(inout H hdr, inout M meta) { apply { } }

control IngressI(inout H hdr, inout M meta, inout standard_metadata_t smeta) {
    action drop() {
        mark_to_drop(smeta);
    }

    // Meaningless without a selector: P4Info keeps only the size.
    @name("ap")
    @max_group_size(200)
    @selector_size_semantics("sum_of_members")
    @max_member_weight(4000)
    action_profile(128) profile;

    @name("ap_ws")
    @max_group_size(200)
    @selector_size_semantics("sum_of_members")
    @max_member_weight(4000)
    action_selector(HashAlgorithm.identity, 1024, 10) selector;

    table indirect {
        actions = { drop; NoAction; }
        const default_action = NoAction();
        implementation = profile;
    }

    table indirect_ws {
        key = { meta.hash1 : selector; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        implementation = selector;
    }

    apply {
        indirect.apply();
        indirect_ws.apply();
    }
}

control EgressI(inout H hdr, inout M meta, inout standard_metadata_t smeta) { apply { } }

control ComputeChecksumI(inout H hdr, inout M meta) { apply { } }

control DeparserI(packet_out pk, in H hdr) { apply { } }

V1Switch(ParserI(), VerifyChecksumI(), IngressI(), EgressI(), ComputeChecksumI(),
         DeparserI()) main;

/*
 * Two indirect tables whose action profile and action selector are built in
 * the tables' `implementation` properties (so named by @name only, without
 * the control prefix). Same control-plane objects as p4c's
 * testdata/p4_16_samples/action_profile-bmv2.p4.
 */
#include <core.p4>
#include <v1model.p4>

struct H { }

struct M {
    bit<32> hash1;
}

// A global action nobody uses: not in the P4Info.
action unused_global() { }

parser ParserI(packet_in pk, out H hdr, inout M meta, inout standard_metadata_t smeta) {
    state start { transition accept; }
}

control VerifyChecksumI(inout H hdr, inout M meta) { apply { } }

control IngressI(inout H hdr, inout M meta, inout standard_metadata_t smeta) {
    action drop() {
        mark_to_drop(smeta);
    }

    table indirect {
        actions = { drop; NoAction; }
        const default_action = NoAction();
        @name("ap") implementation = action_profile(128);
    }

    table indirect_ws {
        key = { meta.hash1 : selector; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        @name("ap_ws") implementation = action_selector(HashAlgorithm.identity, 1024, 10);
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

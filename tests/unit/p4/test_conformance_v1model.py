"""Conformance: the v1model hand-offs of simple_switch (``ingress_thread``,
``egress_thread``): standard_metadata values, multicast (PRE order: one node
per instance, its ports in ascending order), I2E/E2E clones, resubmit and
recirculate with ``@field_list`` metadata.

Instance types: NORMAL 0, INGRESS_CLONE 1, EGRESS_CLONE 2, RECIRC 4,
REPLICATION 5, RESUBMIT 6. What BMv2 resets: a resubmitted or recirculated
packet and an ingress clone get fresh metadata (``PHV::reset_metadata``) but
for the preserved fields, so their ``ingress_port`` reads 0.
"""

from tests.unit.p4.conformance_kit import ETH_HDR, Switch, h, v1switch

HEADERS = """
header info_t { bit<8> it_in; bit<8> it_out; bit<16> rid; bit<32> plen_in; bit<32> plen_out;
                bit<16> spec_at_egress; bit<16> eport; bit<16> inport; bit<8> kept; bit<8> pass; }
struct headers { eth_t eth; info_t info; }
"""
META = """
struct metadata {
    @field_list(1) bit<8> kept;
    bit<8> lost;
    @field_list(1, 2) bit<8> pass;
}"""
PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); pkt.extract(hdr.info); transition accept; }
}"""
EGRESS = """
apply {
    hdr.info.it_out = (bit<8>)sm.instance_type;
    hdr.info.rid = sm.egress_rid;
    hdr.info.plen_out = sm.packet_length;
    hdr.info.spec_at_egress = (bit<16>)sm.egress_spec;
    hdr.info.eport = (bit<16>)sm.egress_port;
    hdr.info.kept = meta.kept;
    hdr.info.pass = meta.pass;
}"""
RECORD = """
    hdr.info.it_in = (bit<8>)sm.instance_type;
    hdr.info.plen_in = sm.packet_length;
    hdr.info.inport = (bit<16>)sm.ingress_port;
"""

INFO_ZERO = "00" * 20


def build(ingress: str, egress: str = EGRESS) -> Switch:
    return Switch.build(v1switch(headers=HEADERS, meta=META, parser=PARSER, ingress=ingress, egress=egress))


def info(it_in=0, it_out=0, rid=0, plen_in=0, plen_out=0, spec=0, eport=0, inport=0, kept=0, passes=0) -> str:
    return (f"{it_in:02x}{it_out:02x}{rid:04x}{plen_in:08x}{plen_out:08x}{spec:04x}{eport:04x}"
            f"{inport:04x}{kept:02x}{passes:02x}")


FRAME = ETH_HDR + "0000" + INFO_ZERO + "abcd"
LEN = 14 + 20 + 2


def test_unicast_standard_metadata_values():
    sw = build("apply {" + RECORD + " sm.egress_spec = 7; }")
    assert sw.send(4, FRAME) == [(7, h(ETH_HDR, "0000", info(0, 0, 0, LEN, LEN, 0, 7, 4), "abcd"))]


def test_multicast_replicas_in_pre_order_with_rids():
    sw = build("apply {" + RECORD + " sm.mcast_grp = 5; }")
    sw.pipe.set_multicast_group(5, [(3, 7), (1, 7), (2, 9)])
    out = sw.send(4, FRAME)
    assert [p for p, _ in out] == [1, 3, 2]
    assert out[0][1] == h(ETH_HDR, "0000", info(0, 5, 7, LEN, LEN, 0, 1, 4), "abcd")
    assert out[2][1] == h(ETH_HDR, "0000", info(0, 5, 9, LEN, LEN, 0, 2, 4), "abcd")
    assert build("apply { sm.mcast_grp = 6; }").send(0, FRAME) == []   # unknown group: nothing


def test_ingress_clone_is_the_received_packet_with_the_field_list():
    sw = build("""apply {""" + RECORD + """
        meta.kept = 0x11; meta.lost = 0x22; meta.pass = 0x33;
        hdr.eth.type = 0xffff;                         // not seen by the clone
        clone_preserving_field_list(CloneType.I2E, 32w9, 1);
        sm.egress_spec = 2;
    }""")
    sw.clone_session(9, [(5, 0)])
    out = sw.send(4, FRAME)
    assert out == [
        (5, h(ETH_HDR, "0000", info(0, 1, 0, 0, LEN, 0, 5, 0, 0x11, 0x33), "abcd")),
        (2, h(ETH_HDR, "ffff", info(0, 0, 0, LEN, LEN, 0, 2, 4, 0x11, 0x33), "abcd")),
    ]


def test_clone_without_field_list_and_a_multi_replica_session():
    sw = build("apply { meta.kept = 1; clone(CloneType.I2E, 32w3); mark_to_drop(sm); }")
    sw.clone_session(3, [(6, 2), (5, 2)])
    out = sw.send(0, FRAME)
    assert [(p, d[28:36]) for p, d in out] == [(5, "00010002"), (6, "00010002")]
    assert all(d[-8:-4] == "0000" for _, d in out)            # meta.kept not preserved


def test_unconfigured_clone_session_does_nothing():
    sw = build("apply { clone(CloneType.I2E, 32w77); sm.egress_spec = 1; }")
    assert [p for p, _ in sw.send(0, FRAME)] == [1]


def test_egress_clone_carries_the_egress_changes():
    egress = EGRESS.replace("apply {", """apply {
        if (sm.instance_type == 0) { hdr.eth.type = 0x0e2e; meta.pass = 5;
                                      clone_preserving_field_list(CloneType.E2E, 32w4, 2); }""")
    sw = build("apply { sm.egress_spec = 1; meta.kept = 9; }", egress)
    sw.clone_session(4, [(8, 0)])
    out = sw.send(0, FRAME)
    # the original leaves first: its clone is queued to egress again
    assert out[0] == (1, h(ETH_HDR, "0e2e", info(0, 0, 0, 0, LEN, 0, 1, 0, 0x09, 5), "abcd"))
    # only field list 2 survives (pass); kept is reset in the clone
    assert out[1] == (8, h(ETH_HDR, "0e2e", info(0, 2, 0, 0, LEN, 0, 8, 0, 0, 5), "abcd"))


def test_resubmit_preserves_field_list_and_resets_the_rest():
    sw = build("""apply {
        if (sm.instance_type == 0) {
            meta.kept = 0x42; meta.lost = 0x43; meta.pass = 0x44;
            hdr.eth.type = 0x9999;                   // thrown away: the original is re-parsed
            resubmit_preserving_field_list(1);
        } else {""" + RECORD + """
            hdr.info.kept = meta.lost;
            sm.egress_spec = 3;
        }
    }""", egress="apply { hdr.info.it_out = (bit<8>)sm.instance_type; hdr.info.pass = meta.pass; }")
    out = sw.send(4, FRAME)
    assert out == [(3, h(ETH_HDR, "0000", info(6, 0, 0, LEN, 0, 0, 0, 0, 0, 0x44), "abcd"))]


def test_recirculate_feeds_the_deparsed_packet_back():
    ingress = """apply {
        if (sm.instance_type == 4) {""" + RECORD + """ hdr.info.pass = meta.pass; sm.egress_spec = 2; }
        else { sm.egress_spec = 1; }
    }"""
    # In egress a unicast copy always reads NORMAL (ingress sets it before
    # enqueueing), so the test keys on the header instead of instance_type.
    egress = """apply {
        if (hdr.eth.type == 0) {
            hdr.eth.type = 0x1111;
            meta.pass = 0x55;
            hdr.info.kept = 0x66;
            recirculate_preserving_field_list(2);
        }
    }"""
    sw = build(ingress, egress)
    out = sw.send(4, FRAME)
    assert out == [(2, h(ETH_HDR, "1111", info(4, 0, 0, LEN, 0, 0, 0, 0, 0x66, 0x55), "abcd"))]


def test_set_valid_and_set_invalid_change_packet_length_seen_in_egress():
    headers = """
    header tun_t { bit<16> id; bit<16> proto; }
    header len_t { bit<32> ing; bit<32> egr; }
    struct headers { eth_t eth; tun_t tun; len_t len; }
    """
    parser = """
    parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
        state start { pkt.extract(hdr.eth); pkt.extract(hdr.len); transition accept; }
    }"""
    ingress = """apply {
        sm.egress_spec = 1;
        hdr.len.ing = sm.packet_length;
        if (hdr.eth.type == 1) { hdr.tun.setValid(); hdr.tun.id = 7; }
        if (hdr.eth.type == 2) { hdr.len.setInvalid(); }
    }"""
    egress = "apply { if (hdr.len.isValid()) { hdr.len.egr = sm.packet_length; } }"
    sw = Switch.build(v1switch(headers=headers, parser=parser, ingress=ingress, egress=egress))
    assert sw.one(0, ETH_HDR + "0001" + "00" * 8) == h(ETH_HDR, "0001", "00070000", "00000016", "0000001a")
    assert sw.one(0, ETH_HDR + "0000" + "00" * 8) == h(ETH_HDR, "0000", "00000016", "00000016")


def test_priority_outside_the_configured_queues_is_dropped():
    text = v1switch(headers=HEADERS, meta=META, parser=PARSER,
                    ingress="apply { sm.egress_spec = 1; sm.priority = (bit<3>)hdr.eth.type; }")
    sw = Switch.build(text, priority_queues=1)      # simple_switch's default: one queue
    assert [p for p, _ in sw.send(0, FRAME)] == [1]
    assert sw.send(0, ETH_HDR + "0001" + INFO_ZERO) == []


def test_field_lists_named_by_constants_keep_the_values_at_the_end_of_ingress():
    # As the tutorials' flowcache: @field_list(FL_PACKET_IN) with a const,
    # and the fields set after the clone call (BMv2 copies them when ingress ends).
    meta = """
const int FL_KEEP = 1;
const int FL_BOTH = 2;
struct metadata {
    @field_list(FL_KEEP) bit<8> kept;
    bit<8> lost;
    @field_list(FL_KEEP, FL_BOTH) bit<8> pass;
}"""
    sw = Switch.build(v1switch(headers=HEADERS, meta=meta, parser=PARSER, egress=EGRESS, ingress="""
    apply {
        clone_preserving_field_list(CloneType.I2E, 32w9, FL_KEEP);
        meta.kept = 0x44; meta.lost = 0x55; meta.pass = 0x66;
        mark_to_drop(sm);
    }"""))
    sw.clone_session(9, [(3, 0)])
    out = sw.send(1, FRAME)
    assert out == [(3, h(ETH_HDR, "0000", info(0, 1, 0, 0, LEN, 0, 3, 0, 0x44, 0x66), "abcd"))]


def test_a_field_list_index_that_is_not_a_constant_is_an_error():
    import pytest

    from emulator.p4.errors import P4Error

    meta = "struct metadata { @field_list(NOPE) bit<8> kept; bit<8> lost; bit<8> pass; }"
    with pytest.raises(P4Error, match=r"@field_list\(NOPE\): NOPE is not an integer constant"):
        Switch.build(v1switch(headers=HEADERS, meta=meta, parser=PARSER, ingress="apply { }",
                              egress=EGRESS))

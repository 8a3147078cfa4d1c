"""P4Runtime id scheme of the P4Info generator, checked against p4c facts.

Every expected id below is taken from a P4Info that p4c generated (p4c's
``testdata/p4_16_samples_outputs/*.p4info.txtpb``; the tutorials' basic.p4
ids quoted by the P4 tutorials).
"""

from __future__ import annotations

import pytest

from emulator.p4.p4info import (
    P4Ids,
    P4InfoError,
    SymbolTable,
    allocate_field_ids,
    apply_id_annotation,
    hashed_id,
    jenkins_one_at_a_time,
)
from emulator.p4.p4info.ids import SuffixSet, shortest_unique_suffixes

# (kind, control-plane name, id p4c assigned) -- one or more per kind.
KNOWN_IDS = [
    (P4Ids.ACTION, "NoAction", 21257015),
    (P4Ids.ACTION, "MyIngress.drop", 25652968),
    (P4Ids.ACTION, "MyIngress.ipv4_forward", 28792405),
    (P4Ids.ACTION, "MyIngress.set_dmac", 33025127),
    (P4Ids.ACTION, "MyIngress.set_nhop", 24952588),
    (P4Ids.ACTION, "MyIngress.send_digest", 23592486),
    (P4Ids.ACTION, "MyEgress.rewrite_mac", 22398708),
    (P4Ids.ACTION, "ingress._drop", 19344232),
    (P4Ids.ACTION, "egress._drop", 25850727),
    (P4Ids.TABLE, "MyIngress.ipv4_lpm", 37375156),
    (P4Ids.TABLE, "MyIngress.forward", 46460945),
    (P4Ids.TABLE, "MyEgress.send_frame", 49202009),
    (P4Ids.TABLE, "IngressI.indirect", 46872340),
    (P4Ids.TABLE, "IngressI.indirect_ws", 38116258),
    (P4Ids.TABLE, "ingress.m_table", 43296733),
    (P4Ids.VALUE_SET, "MyParser.pvs", 56033750),
    (P4Ids.CONTROLLER_HEADER, "packet_out_header_t", 76689799),
    (P4Ids.CONTROLLER_HEADER, "packet_in_header_t", 81826293),
    (P4Ids.ACTION_PROFILE, "ap", 294074782),
    (P4Ids.ACTION_PROFILE, "ap_ws", 300324846),
    (P4Ids.ACTION_PROFILE, "IngressI.ap", 289199568),
    (P4Ids.ACTION_PROFILE, "IngressI.ap_ws", 285903678),
    (P4Ids.COUNTER, "cIngress.E.c1.stats", 314274935),
    (P4Ids.DIRECT_COUNTER, "ingress.c", 330698586),
    (P4Ids.METER, "storm_control_meter", 346099050),
    (P4Ids.DIRECT_METER, "ingress.namedmeter", 354402025),
    (P4Ids.REGISTER, "ingress.flowlet_id", 384519412),
    (P4Ids.REGISTER, "ingress.flowlet_lasttime", 375147533),
    (P4Ids.DIGEST, "test_digest_t", 387015589),
]


@pytest.mark.parametrize("kind,name,expected", KNOWN_IDS)
def test_hashed_id_matches_p4c(kind, name, expected):
    assert hashed_id(kind, name) == expected
    assert expected >> 24 == kind


def test_prefixes_are_p4info_proto_values():
    from p4.config.v1 import p4info_pb2

    for member in P4Ids:
        assert p4info_pb2.P4Ids.Prefix.Value(member.name) == member.value


def test_jenkins_basics():
    assert jenkins_one_at_a_time("") == 0
    assert jenkins_one_at_a_time("NoAction") & 0xFFFFFF == 21257015 & 0xFFFFFF
    assert jenkins_one_at_a_time(b"NoAction") == jenkins_one_at_a_time("NoAction")
    # full 32-bit value: the top byte is discarded by the id, not by the hash
    assert 0 <= jenkins_one_at_a_time("MyIngress.ipv4_lpm") < 2**32


def test_controller_header_hashes_the_type_name_not_the_annotation():
    assert hashed_id(P4Ids.CONTROLLER_HEADER, "packet_out_header_t") == 76689799
    assert hashed_id(P4Ids.CONTROLLER_HEADER, "packet_out") != 76689799


# Two names whose hashes agree in the low 24 bits.
COLLIDING = ("MyIngress.a1165", "MyIngress.a3612")


def test_collision_pair_really_collides():
    a, b = COLLIDING
    assert hashed_id(P4Ids.ACTION, a) == hashed_id(P4Ids.ACTION, b)


@pytest.mark.parametrize("order", [COLLIDING, COLLIDING[::-1]])
def test_collision_linear_probing_in_sorted_name_order(order):
    st = SymbolTable()
    for n in order:
        st.add(P4Ids.ACTION, n)
    st.compute()
    base = hashed_id(P4Ids.ACTION, COLLIDING[0])
    # "MyIngress.a1165" < "MyIngress.a3612": the first keeps the hash
    assert st.id(P4Ids.ACTION, "MyIngress.a1165") == base
    assert st.id(P4Ids.ACTION, "MyIngress.a3612") == base + 1


def test_probing_skips_ids_reserved_by_at_id():
    base = hashed_id(P4Ids.ACTION, COLLIDING[0])
    st = SymbolTable()
    st.add(P4Ids.ACTION, COLLIDING[0])
    st.add(P4Ids.ACTION, COLLIDING[1])
    st.add(P4Ids.ACTION, "reserved", (base + 1) & 0xFFFFFF)  # low bits only
    st.compute()
    assert st.id(P4Ids.ACTION, "reserved") == base + 1
    assert st.id(P4Ids.ACTION, COLLIDING[0]) == base
    assert st.id(P4Ids.ACTION, COLLIDING[1]) == base + 2


def test_probing_keeps_the_prefix_when_wrapping_the_24_bits(monkeypatch):
    # The probe increments the 32-bit hash and re-masks, so a name hashed to
    # low bits 0xffffff whose slot is taken goes to 0x000000 of its kind.
    from emulator.p4.p4info import ids

    monkeypatch.setattr(ids, "jenkins_one_at_a_time", lambda name: 0x12FFFFFF)
    st = SymbolTable()
    st.add(P4Ids.TABLE, "taken", 0xFFFFFF)
    st.add(P4Ids.TABLE, "x")
    st.compute()
    assert st.id(P4Ids.TABLE, "taken") == 0x02FFFFFF
    assert st.id(P4Ids.TABLE, "x") == 0x02000000


def test_at_id_rules():
    assert apply_id_annotation(P4Ids.ACTION, 5) == 0x01000005
    assert apply_id_annotation(P4Ids.ACTION, 0x01000005) == 0x01000005
    assert apply_id_annotation(P4Ids.TABLE, 0) == 0x02000000
    with pytest.raises(P4InfoError, match="wrong 8-bit prefix"):
        apply_id_annotation(P4Ids.TABLE, 0x01000005)
    with pytest.raises(P4InfoError):
        apply_id_annotation(P4Ids.TABLE, -1)


def test_at_id_is_used_as_is_and_duplicates_are_errors():
    st = SymbolTable()
    st.add(P4Ids.TABLE, "MyIngress.t", 7)
    st.add(P4Ids.TABLE, "MyIngress.u")
    st.compute()
    assert st.id(P4Ids.TABLE, "MyIngress.t") == 0x02000007
    assert st.id(P4Ids.TABLE, "MyIngress.u") == hashed_id(P4Ids.TABLE, "MyIngress.u")
    st = SymbolTable()
    st.add(P4Ids.TABLE, "a", 7)
    with pytest.raises(P4InfoError, match="multiple declarations"):
        st.add(P4Ids.TABLE, "b", 0x02000007)


def test_same_ids_in_different_kinds_do_not_collide():
    st = SymbolTable()
    st.add(P4Ids.ACTION, "x")
    st.add(P4Ids.TABLE, "x")
    st.compute()
    assert st.id(P4Ids.ACTION, "x") & 0xFFFFFF == st.id(P4Ids.TABLE, "x") & 0xFFFFFF


def test_duplicate_symbol_is_one_symbol():
    st = SymbolTable()
    st.add(P4Ids.ACTION, "NoAction")
    st.add(P4Ids.ACTION, "NoAction")
    st.compute()
    assert st.names(P4Ids.ACTION) == ["NoAction"]
    assert st.id(P4Ids.ACTION, "NoAction") == 21257015


def test_unknown_symbol_is_an_error():
    st = SymbolTable().compute()
    with pytest.raises(P4InfoError):
        st.id(P4Ids.TABLE, "nope")


def test_alias_is_shortest_unique_suffix_over_all_kinds():
    st = SymbolTable()
    st.add(P4Ids.ACTION, "ingress._drop")
    st.add(P4Ids.ACTION, "egress._drop")
    st.add(P4Ids.ACTION, "NoAction")
    st.add(P4Ids.TABLE, "ingress.forward")
    st.add(P4Ids.REGISTER, "ingress.flowlet_id")
    st.add(P4Ids.COUNTER, "cIngress.E.c1.stats")
    st.compute()
    assert st.alias("ingress._drop") == "ingress._drop"
    assert st.alias("egress._drop") == "egress._drop"
    assert st.alias("NoAction") == "NoAction"
    assert st.alias("ingress.forward") == "forward"
    assert st.alias("cIngress.E.c1.stats") == "stats"


def test_suffix_set_details():
    aliases = shortest_unique_suffixes(["d.a.c", "e.b.c", "x.y", "y"])
    assert aliases == {"d.a.c": "a.c", "e.b.c": "b.c", "x.y": "x.y", "y": "y"}
    s = SuffixSet()
    s.add("a.b.c")
    s.add("a.b.c")  # added once only
    assert s.alias("a.b.c") == "c"


@pytest.mark.parametrize(
    "annotations,expected",
    [
        ([None, None, None], [1, 2, 3]),
        ([None, 1], [2, 1]),
        ([3, None, None], [3, 2, 4]),
        ([None, 5, None], [1, 5, 2]),
        ([2, 1], [2, 1]),
        ([], []),
    ],
)
def test_field_id_allocator(annotations, expected):
    assert allocate_field_ids(annotations) == expected


def test_field_id_errors():
    with pytest.raises(P4InfoError, match="0 is not a valid"):
        allocate_field_ids([0])
    with pytest.raises(P4InfoError, match="used multiple times"):
        allocate_field_ids([4, 4])

"""Every entity of the kitchen program through raw stubs: ternary, range and
optional matches, direct and indexed counters and meters, registers, value
sets, action profiles and selectors, PRE entries, packet I/O and digests."""

import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from tests.unit.data.p4runtime.harness import Switch, batch_errors, entity, p4info, update
from tests.unit.data.p4runtime.programs import KITCHEN_CPU_PORT

ACL, ECMP, FIXED, ROUTE = 33554433, 33554434, 33554435, 33554436
NOACTION, DROP, SET_PORT, TO_CPU, SET_MCAST = 16777217, 16777218, 16777219, 16777220, 16777221
SELECTOR, COUNTER, DIRECT_COUNTER, METER = 285212673, 301989889, 318767105, 335544321
VALUE_SET, REGISTER, DIGEST = 50331649, 369098753, 385875969


@pytest.fixture
def switch():
    sw = Switch(device_id=1, cpu_port=KITCHEN_CPU_PORT)
    sw.primary = sw.stream()
    assert sw.primary.arbitrate(1, (0, 1)).status.code == 0
    sw.set_config("kitchen")
    yield sw
    sw.stop()


def codes(sw: Switch, *updates) -> list[str]:
    with pytest.raises(grpc.RpcError) as err:
        sw.write(*updates)
    return [code for code, _ in batch_errors(err.value)]


def frame(src: str = "00:00:00:00:00:0a", dst: str = "00:00:00:00:00:0b", ethertype=None,
          ip_dst: str = "10.0.0.1", proto: int = 17) -> bytes:
    eth = Ether(src=src, dst=dst) if ethertype is None else Ether(src=src, dst=dst, type=ethertype)
    return bytes(eth / IP(src="10.1.1.1", dst=ip_dst, proto=proto) / (b"x" * 20))


def set_port(port: int) -> str:
    return f'action {{ action {{ action_id: {SET_PORT} params {{ param_id: 1 value: "\\x{port:02x}" }} }} }}'


def acl(port: int, extra: str, priority: int = 10, action: str | None = None) -> str:
    return (f'table_entry {{ table_id: {ACL} match {{ field_id: 1 exact {{ value: "\\x{port:02x}" }} }} '
            f"{extra} priority: {priority} {action or set_port(3)} }}")


# ---- matches and priorities ----------------------------------------------------------

def test_ternary_range_optional_entries_and_priorities(switch):
    ternary = 'match { field_id: 2 ternary { value: "\\x0b" mask: "\\xff" } }'
    rng = 'match { field_id: 3 range { low: "\\x08\\x00" high: "\\x08\\x00" } }'
    optional = 'match { field_id: 4 optional { value: "\\x11" } }'
    switch.write(update("INSERT", acl(1, ternary, 10, set_port(3))),
                 update("INSERT", acl(1, rng + optional, 20, set_port(4))),
                 update("INSERT", acl(1, "", 5, set_port(5))))
    assert switch.device.inject(1, frame()).outputs[0].port == 4  # priority 20 wins
    assert switch.device.inject(1, frame(proto=6)).outputs[0].port == 3
    assert switch.device.inject(1, frame(dst="00:00:00:00:00:0c", proto=6)).outputs[0].port == 5
    entries = switch.read(entity(f"table_entry {{ table_id: {ACL} }}"))
    assert [len(e.table_entry.match) for e in entries] == [2, 3, 1]  # don't cares omitted
    assert entries[0].table_entry.match[1].ternary.mask == b"\xff"
    assert [e.table_entry.priority for e in entries] == [10, 20, 5]
    (by_priority,) = switch.read(entity(f"table_entry {{ table_id: {ACL} priority: 20 }}"))
    assert by_priority.table_entry.action.action.params[0].value == b"\x04"
    (one,) = switch.read(entity(acl(1, ternary, 10).replace(set_port(3), "")))
    assert one.table_entry.priority == 10
    # the same match with another priority is another entry; with the same one, a duplicate
    switch.write(update("INSERT", acl(1, ternary, 11)))
    assert codes(switch, update("INSERT", acl(1, ternary, 11))) == ["ALREADY_EXISTS"]


@pytest.mark.parametrize("extra, priority, message", [
    ("", 0, "needs a priority > 0"),
    ('match { field_id: 2 ternary { value: "\\x01" mask: "\\x00" } }', 1, "mask 0"),
    ('match { field_id: 2 ternary { value: "\\x03" mask: "\\x01" } }', 1, "outside the mask"),
    ('match { field_id: 3 range { low: "\\x05" high: "\\x04" } }', 1, "above high"),
    ('match { field_id: 3 range { low: "\\x00" high: "\\xff\\xff" } }', 1, "full range"),
    ('match { field_id: 4 exact { value: "\\x01" } }', 1, "expected a optional match"),
    ('match { field_id: 9 exact { value: "\\x01" } }', 1, "unknown match field id 9"),
    ('match { field_id: 1 exact { value: "\\x01" } }', 1, "given twice"),
])
def test_match_errors(switch, extra, priority, message):
    with pytest.raises(grpc.RpcError) as err:
        switch.write(update("INSERT", acl(1, extra, priority)))
    ((code, text),) = batch_errors(err.value)
    assert code == "INVALID_ARGUMENT" and message in text


def test_exact_fields_cannot_be_omitted(switch):
    text = f"table_entry {{ table_id: {ACL} priority: 1 {set_port(1)} }}"
    assert codes(switch, update("INSERT", text)) == ["INVALID_ARGUMENT"]


def test_action_scopes_const_tables_and_full_tables(switch):
    def route(plen: int, action: str) -> str:
        return (f'table_entry {{ table_id: {ROUTE} match {{ field_id: 1 lpm {{ value: '
                f'"\\x0a\\x00\\x00\\x00" prefix_len: {plen} }} }} {action} }}')

    drop = f"action {{ action {{ action_id: {DROP} }} }}"
    assert codes(switch, update("INSERT", route(plen=8, action=drop))) == \
        ["PERMISSION_DENIED"]
    def default(action: str) -> str:
        return f"table_entry {{ table_id: {ROUTE} is_default_action: true {action} }}"

    assert codes(switch, update("MODIFY", default(set_port(1)))) == ["PERMISSION_DENIED"]
    switch.write(update("MODIFY", default(drop)))
    assert switch.device.inject(1, frame()).dropped == 1
    switch.write(update("INSERT", route(plen=8, action=set_port(1))),
                 update("INSERT", route(plen=16, action=set_port(2))))
    assert codes(switch, update("INSERT", route(plen=24, action=set_port(2)))) == \
        ["RESOURCE_EXHAUSTED"]
    def fixed(action: str) -> str:
        return (f'table_entry {{ table_id: {FIXED} match {{ field_id: 1 exact {{ value: '
                f'"\\x88\\xcc" }} }} {action} }}')

    assert codes(switch, update("INSERT", fixed(drop)), update("MODIFY", fixed(drop)),
                 update("DELETE", fixed("")),
                 update("MODIFY", f"table_entry {{ table_id: {FIXED} is_default_action: true "
                                  f"{drop} }}")) == ["PERMISSION_DENIED"] * 4
    (const,) = switch.read(entity(f"table_entry {{ table_id: {FIXED} }}"))
    assert const.table_entry.is_const
    assert const.table_entry.action.action.action_id == DROP
    assert switch.device.inject(1, frame(ethertype=0x88CC)).dropped == 1


def test_idle_timeouts_need_support_timeout_in_the_program(switch):
    # (Idle timeouts themselves: test_p4runtime_idle.py.)
    info = p4info("kitchen")
    route_info = next(t for t in info.tables if t.preamble.id == ROUTE)
    route_info.idle_timeout_behavior = route_info.NOTIFY_CONTROL
    with pytest.raises(grpc.RpcError) as err:
        switch.set_config("kitchen", info=info)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "idle timeout (support_timeout) differs" in err.value.details()
    switch.set_config("kitchen")

    def route(extra: str) -> str:
        return (f'table_entry {{ table_id: {ROUTE} match {{ field_id: 1 lpm {{ value: "\\x0a'
                f'\\x00\\x00\\x00" prefix_len: 8 }} }} {set_port(1)} {extra} }}')

    assert codes(switch, update("INSERT", route("idle_timeout_ns: 5"))) == ["INVALID_ARGUMENT"]
    switch.write(update("INSERT", route("")))
    with pytest.raises(grpc.RpcError) as err:
        switch.read(entity(f"table_entry {{ table_id: {ROUTE} time_since_last_hit {{}} }}"))
    assert batch_errors(err.value)[0][0] == "INVALID_ARGUMENT"


# ---- direct resources ---------------------------------------------------------------

def test_direct_counters(switch):
    key = 'match { field_id: 2 ternary { value: "\\x0b" mask: "\\xff" } }'
    switch.write(update("INSERT", acl(1, key, 10).replace(
        "priority", "counter_data { packet_count: 100 byte_count: 1000 } priority")))
    for _ in range(3):
        switch.device.inject(1, frame())
    length = len(frame())
    read = entity(acl(1, key, 10, action="counter_data {}"))
    (entry,) = switch.read(read)
    assert entry.table_entry.counter_data.packet_count == 103
    assert entry.table_entry.counter_data.byte_count == 1000 + 3 * length
    (plain,) = switch.read(entity(f"table_entry {{ table_id: {ACL} }}"))
    assert not plain.table_entry.HasField("counter_data")
    direct = f"direct_counter_entry {{ table_entry {{ {acl(1, key, 10, action='')[13:-2]} }} }}"
    (counter,) = switch.read(entity(direct))
    assert counter.direct_counter_entry.data.packet_count == 103
    assert counter.direct_counter_entry.table_entry.priority == 10
    switch.write(update("MODIFY", direct[:-2] + " data { packet_count: 1 } }"))
    (counter,) = switch.read(entity(f"direct_counter_entry {{ table_entry {{ table_id: {ACL} }} }}"))
    assert counter.direct_counter_entry.data.packet_count == 1
    assert len(switch.read(entity("direct_counter_entry { table_entry { } }"))) == 1
    other_key = direct.replace('value: "\\x0b"', 'value: "\\x0c"')
    no_counter = f"table_entry {{ table_id: {ROUTE} is_default_action: true counter_data {{}} }}"
    assert codes(switch, update("INSERT", direct), update("MODIFY", other_key),
                 update("MODIFY", no_counter)) == ["INVALID_ARGUMENT", "NOT_FOUND",
                                                   "INVALID_ARGUMENT"]


def test_direct_meters(switch):
    key = 'match { field_id: 2 ternary { value: "\\x0b" mask: "\\xff" } }'
    config = "meter_config { cir: 1000 cburst: 100 pir: 2000 pburst: 200 }"
    switch.write(update("INSERT", acl(1, key, 10).replace("priority", config + " priority")))
    (entry,) = switch.read(entity(acl(1, key, 10, action="meter_config {}")))
    assert entry.table_entry.meter_config == p4runtime_pb2.MeterConfig(cir=1000, cburst=100,
                                                                        pir=2000, pburst=200)
    meter = f"direct_meter_entry {{ table_entry {{ {acl(1, key, 10, action='')[13:-2]} }} }}"
    (read,) = switch.read(entity(meter))
    assert read.direct_meter_entry.config.pir == 2000
    switch.write(update("MODIFY", acl(1, key, 10)))  # meter_config unset: back to default
    (entry,) = switch.read(entity(acl(1, key, 10, action="meter_config {}")))
    assert not entry.table_entry.HasField("meter_config")
    switch.write(update("MODIFY", meter[:-2] + " config { cir: 5 cburst: 5 pir: 6 pburst: 6 } }"))
    (read,) = switch.read(entity(f"direct_meter_entry {{ table_entry {{ table_id: {ACL} }} }}"))
    assert read.direct_meter_entry.config.cir == 5
    assert codes(switch, update("MODIFY", meter[:-2] + " config { cir: 7 pir: 6 } }"),
                 update("MODIFY", meter[:-2] + " counter_data { } }")) == \
        ["INVALID_ARGUMENT", "UNIMPLEMENTED"]


# ---- indexed externs and value sets ------------------------------------------------------

def test_counters(switch):
    switch.device.inject(2, frame())
    switch.device.inject(2, frame())
    (one,) = switch.read(entity(f"counter_entry {{ counter_id: {COUNTER} index {{ index: 2 }} }}"))
    assert one.counter_entry.data.packet_count == 2
    assert one.counter_entry.data.byte_count == 2 * len(frame())
    assert len(switch.read(entity(f"counter_entry {{ counter_id: {COUNTER} }}"))) == 16
    assert len(switch.read(entity("counter_entry { }"))) == 16
    switch.write(update("MODIFY", f"counter_entry {{ counter_id: {COUNTER} index {{ index: 2 }} "
                                  f"data {{ packet_count: 7 }} }}"))
    assert switch.read(entity(f"counter_entry {{ counter_id: {COUNTER} index {{ index: 2 }} }}"))[0] \
        .counter_entry.data.packet_count == 7
    switch.write(update("MODIFY", f"counter_entry {{ counter_id: {COUNTER} data {{ }} }}"))
    assert all(e.counter_entry.data.packet_count == 0
               for e in switch.read(entity("counter_entry { }")))
    assert codes(switch,
                 update("INSERT", f"counter_entry {{ counter_id: {COUNTER} }}"),
                 update("MODIFY", f"counter_entry {{ counter_id: {COUNTER} index {{ index: 16 }} }}"),
                 update("MODIFY", f"counter_entry {{ counter_id: {COUNTER} index {{ index: -1 }} }}"),
                 update("MODIFY", f"counter_entry {{ counter_id: {DIRECT_COUNTER} }}")) == \
        ["INVALID_ARGUMENT", "OUT_OF_RANGE", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_meters(switch):
    switch.write(update("MODIFY", f"meter_entry {{ meter_id: {METER} index {{ index: 3 }} "
                                  f"config {{ cir: 10 cburst: 1 pir: 20 pburst: 2 }} }}"))
    entries = switch.read(entity(f"meter_entry {{ meter_id: {METER} }}"))
    assert len(entries) == 16
    assert [e.meter_entry.index.index for e in entries if e.meter_entry.HasField("config")] == [3]
    assert entries[3].meter_entry.config.pir == 20
    switch.write(update("MODIFY", f"meter_entry {{ meter_id: {METER} }}"))  # all back to default
    assert not any(e.meter_entry.HasField("config") for e in switch.read(entity("meter_entry {}")))
    assert codes(switch, update("DELETE", f"meter_entry {{ meter_id: {METER} }}"),
                 update("MODIFY", f"meter_entry {{ meter_id: {METER} counter_data {{}} }}")) == \
        ["INVALID_ARGUMENT", "UNIMPLEMENTED"]


def test_registers(switch):
    switch.device.inject(5, frame())
    (cell,) = switch.read(entity(f"register_entry {{ register_id: {REGISTER} index {{ index: 5 }} }}"))
    assert int.from_bytes(cell.register_entry.data.bitstring, "big") == len(frame())
    switch.write(update("MODIFY", f'register_entry {{ register_id: {REGISTER} index {{ index: 1 }} '
                                  f'data {{ bitstring: "\\x00\\x01\\x02" }} }}'))
    (cell,) = switch.read(entity(f"register_entry {{ register_id: {REGISTER} index {{ index: 1 }} }}"))
    assert cell.register_entry.data.bitstring == b"\x01\x02"
    switch.write(update("MODIFY", f'register_entry {{ register_id: {REGISTER} '
                                  f'data {{ bitstring: "\\x09" }} }}'))
    assert {e.register_entry.data.bitstring for e in switch.read(entity("register_entry {}"))} == \
        {b"\x09"}
    assert codes(switch,
                 update("MODIFY", f'register_entry {{ register_id: {REGISTER} '
                                  f'data {{ bitstring: "\\x01\\x00\\x00\\x00\\x00" }} }}'),
                 update("MODIFY", f"register_entry {{ register_id: {REGISTER} }}"),
                 update("MODIFY", f"register_entry {{ register_id: {REGISTER} data {{ bool: true }} }}"),
                 update("INSERT", f'register_entry {{ register_id: {REGISTER} data {{ bitstring: "\\x01" }} }}'),
                 ) == ["OUT_OF_RANGE", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]


def test_value_sets_steer_the_parser(switch):
    route = (f'table_entry {{ table_id: {ROUTE} match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00'
             f'\\x00" prefix_len: 8 }} }} {set_port(6)} }}')
    switch.write(update("INSERT", route))
    custom = frame(ethertype=0x1234)
    assert switch.device.inject(1, custom).outputs[0].port == 0  # not parsed as IPv4
    members = ('members { match { field_id: 1 exact { value: "\\x12\\x34" } } } '
               'members { match { field_id: 1 exact { value: "\\x22\\xf3" } } }')
    switch.write(update("MODIFY", f"value_set_entry {{ value_set_id: {VALUE_SET} {members} }}"))
    assert switch.device.inject(1, custom).outputs[0].port == 6
    (read,) = switch.read(entity(f"value_set_entry {{ value_set_id: {VALUE_SET} }}"))
    assert read == entity(f"value_set_entry {{ value_set_id: {VALUE_SET} {members} }}")
    one = 'members { match { field_id: 1 exact { value: "\\x00\\x01" } } } '
    assert codes(switch,
                 update("MODIFY", f"value_set_entry {{ value_set_id: {VALUE_SET} {one * 5} }}"),
                 update("MODIFY", f"value_set_entry {{ value_set_id: {VALUE_SET} {one * 2} }}"),
                 update("INSERT", f"value_set_entry {{ value_set_id: {VALUE_SET} }}")) == \
        ["ALREADY_EXISTS", "ALREADY_EXISTS", "INVALID_ARGUMENT"]
    switch.write(update("MODIFY", f"value_set_entry {{ value_set_id: {VALUE_SET} }}"))
    assert switch.device.inject(1, custom).outputs[0].port == 0


# ---- action profiles -----------------------------------------------------------------------

def member(mid: int, port: int) -> str:
    return (f"action_profile_member {{ action_profile_id: {SELECTOR} member_id: {mid} "
            f"{set_port(port)[9:-1]} }}")


def group(gid: int, members: str, max_size: int = 0) -> str:
    return (f"action_profile_group {{ action_profile_id: {SELECTOR} group_id: {gid} "
            f"max_size: {max_size} {members} }}")


def ecmp(dst: str, action: str) -> str:
    value = "".join(f"\\x{int(b):02x}" for b in dst.split("."))
    return (f'table_entry {{ table_id: {ECMP} match {{ field_id: 1 exact {{ value: "{value}" }} }} '
            f"action {{ {action} }} }}")


def test_members_groups_and_indirect_entries(switch):
    switch.write(update("INSERT", member(1, 11)), update("INSERT", member(2, 12)))
    switch.write(update("INSERT", group(5, "members { member_id: 1 weight: 3 } "
                                           "members { member_id: 2 weight: 1 }", 8)))
    switch.write(update("INSERT", ecmp("10.0.0.1", "action_profile_group_id: 5")),
                 update("INSERT", ecmp("10.0.0.2", "action_profile_member_id: 2")))
    ports = {switch.device.inject(1, bytes(Ether() / IP(src=f"10.1.{i}.1", dst="10.0.0.1") / UDP(
        sport=i))).outputs[0].port for i in range(40)}
    assert ports == {11, 12}
    assert switch.device.inject(1, frame(ip_dst="10.0.0.2")).outputs[0].port == 12
    members = switch.read(entity(f"action_profile_member {{ action_profile_id: {SELECTOR} }}"))
    assert [m.action_profile_member.member_id for m in members] == [1, 2]
    assert members[0] == entity(member(1, 11))
    (g,) = switch.read(entity("action_profile_group { }"))
    assert g == entity(group(5, "members { member_id: 1 weight: 3 } members { member_id: 2 weight: 1 }",
                             8))
    entries = switch.read(entity(f"table_entry {{ table_id: {ECMP} }}"))
    assert [e.table_entry.action.WhichOneof("type") for e in entries] == [
        "action_profile_group_id", "action_profile_member_id"]
    switch.write(update("MODIFY", member(2, 13)))
    assert switch.device.inject(1, frame(ip_dst="10.0.0.2")).outputs[0].port == 13
    assert codes(switch,
                 update("DELETE", member(1, 11)),
                 update("DELETE", group(5, "")),
                 update("INSERT", member(1, 11)),
                 update("INSERT", group(6, "members { member_id: 9 weight: 1 }")),
                 update("INSERT", group(6, "members { member_id: 1 weight: 0 }")),
                 update("INSERT", group(6, "members { member_id: 1 weight: 1 } "
                                           "members { member_id: 1 weight: 1 }")),
                 update("INSERT", group(6, "members { member_id: 1 weight: 17 }")),
                 update("INSERT", group(6, "", 17)),
                 update("MODIFY", group(5, "members { member_id: 1 weight: 1 }", 4)),
                 update("MODIFY", group(5, "members { member_id: 1 weight: 9 }", 8)),
                 update("INSERT", ecmp("10.0.0.3", "action_profile_member_id: 9")),
                 update("INSERT", ecmp("10.0.0.3", "action_profile_group_id: 9")),
                 update("INSERT", ecmp("10.0.0.3", set_port(1)[9:-1])),
                 update("MODIFY", f"table_entry {{ table_id: {ECMP} is_default_action: true }}"),
                 update("INSERT", member(0, 1)),
                 ) == ["FAILED_PRECONDITION", "FAILED_PRECONDITION", "ALREADY_EXISTS", "NOT_FOUND",
                       "INVALID_ARGUMENT", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED",
                       "INVALID_ARGUMENT", "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED", "NOT_FOUND",
                       "NOT_FOUND", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]
    switch.write(update("DELETE", ecmp("10.0.0.1", "")), update("DELETE", group(5, "")),
                 update("DELETE", ecmp("10.0.0.2", "")), update("DELETE", member(1, 0)),
                 update("DELETE", member(2, 0)))
    assert switch.read(entity("action_profile_member {}")) == []


def test_one_shot_programming(switch):
    action_set = ("action_profile_action_set { "
                  f"action_profile_actions {{ {set_port(21)[9:-1]} weight: 2 }} "
                  f"action_profile_actions {{ {set_port(22)[9:-1]} weight: 1 }} }}")
    switch.write(update("INSERT", ecmp("10.0.0.1", action_set)))
    (read,) = switch.read(entity(f"table_entry {{ table_id: {ECMP} }}"))
    assert read == entity(ecmp("10.0.0.1", action_set))
    assert switch.read(entity("action_profile_member {}")) == []  # one-shot members are hidden
    assert switch.device.inject(1, frame(ip_dst="10.0.0.1")).outputs[0].port in (21, 22)
    assert codes(switch, update("INSERT", member(1, 1))) == ["INVALID_ARGUMENT"]
    switch.write(update("MODIFY", ecmp("10.0.0.1", action_set.replace("\\x15", "\\x17"))))
    profile = switch.servicer.pipeline_context.profiles[SELECTOR].profile
    assert len(profile.members) == 2 and len(profile.groups) == 1
    switch.write(update("DELETE", ecmp("10.0.0.1", "")))
    assert not profile.members and not profile.groups
    switch.write(update("INSERT", member(1, 1)))
    assert codes(switch, update("INSERT", ecmp("10.0.0.1", action_set))) == ["INVALID_ARGUMENT"]


# ---- packet replication engine ------------------------------------------------------------

def test_multicast_groups_replicate_packets(switch):
    mcast = f'action {{ action {{ action_id: {SET_MCAST} params {{ param_id: 1 value: "\\x07" }} }} }}'
    switch.write(update("INSERT", acl(1, "", 1, mcast)))
    group_text = ("packet_replication_engine_entry { multicast_group_entry { multicast_group_id: 7 "
                  "replicas { egress_port: 2 instance: 1 } replicas { port: \"\\x03\" instance: 2 } } }")
    switch.write(update("INSERT", group_text))
    out = switch.device.inject(1, frame()).outputs
    assert sorted(o.port for o in out) == [2, 3]
    (read,) = switch.read(entity("packet_replication_engine_entry { multicast_group_entry { } }"))
    assert read == entity(group_text)
    switch.write(update("MODIFY", group_text.replace("egress_port: 2", "egress_port: 4")))
    assert sorted(o.port for o in switch.device.inject(1, frame()).outputs) == [3, 4]
    bad = ("packet_replication_engine_entry {{ multicast_group_entry {{ multicast_group_id: {} "
           "{} }} }}")
    assert codes(switch,
                 update("INSERT", group_text),
                 update("INSERT", bad.format(0, "")),
                 update("INSERT", bad.format(70000, "")),
                 update("INSERT", bad.format(8, "replicas { egress_port: 600 }")),
                 update("INSERT", bad.format(8, "replicas { egress_port: 1 } replicas { egress_port: 1 }")),
                 update("INSERT", bad.format(8, "replicas { instance: 1 }")),
                 update("MODIFY", bad.format(9, "")),
                 update("DELETE", bad.format(9, ""))) == [
        "ALREADY_EXISTS", "INVALID_ARGUMENT", "OUT_OF_RANGE", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "INVALID_ARGUMENT", "NOT_FOUND", "NOT_FOUND"]
    switch.write(update("DELETE", bad.format(7, "")))
    assert switch.device.inject(1, frame()).outputs == []
    with pytest.raises(grpc.RpcError) as err:
        switch.read(entity("packet_replication_engine_entry { multicast_group_entry { "
                           "multicast_group_id: 7 } }"))
    assert batch_errors(err.value)[0][0] == "NOT_FOUND"


def test_clone_sessions(switch):
    session = ("packet_replication_engine_entry { clone_session_entry { session_id: 5 "
               "replicas { egress_port: 4294967293 instance: 1 } packet_length_bytes: 128 "
               "class_of_service: 2 } }")
    switch.write(update("INSERT", session))
    (read,) = switch.read(entity("packet_replication_engine_entry { clone_session_entry { } }"))
    assert read == entity(session)
    clone = switch.servicer.pipeline_context.pipeline.clone_sessions[5]
    assert clone.replicas == [(KITCHEN_CPU_PORT, 1)] and clone.truncate_bytes == 128
    bad = "packet_replication_engine_entry {{ clone_session_entry {{ session_id: {} {} }} }}"
    assert codes(switch, update("INSERT", session), update("INSERT", bad.format(0, "")),
                 update("INSERT", bad.format(6, "packet_length_bytes: -1")),
                 update("INSERT", bad.format(6, "class_of_service: 8")),
                 update("MODIFY", bad.format(6, ""))) == [
        "ALREADY_EXISTS", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "NOT_FOUND"]
    switch.write(update("DELETE", bad.format(5, "")))
    assert 5 not in switch.servicer.pipeline_context.pipeline.clone_sessions


# ---- packet I/O -----------------------------------------------------------------------------

def test_packet_out_enters_ingress_on_the_cpu_port(switch):
    request = p4runtime_pb2.StreamMessageRequest()
    request.packet.payload = frame()
    request.packet.metadata.add(metadata_id=1, value=b"\x05")
    request.packet.metadata.add(metadata_id=2, value=b"\x00")
    switch.primary.send(request)
    deadline = time.monotonic() + 3
    while not switch.device.sent and time.monotonic() < deadline:
        time.sleep(0.01)
    assert switch.device.sent == [(5, frame())]
    bad = p4runtime_pb2.StreamMessageRequest()
    bad.packet.payload = b"x"
    bad.packet.metadata.add(metadata_id=3, value=b"\x05")
    switch.primary.send(bad)
    error = switch.primary.get("error").error
    assert error.canonical_code == code_pb2.INVALID_ARGUMENT and "unknown metadata id 3" in \
        error.message
    assert error.packet_out.packet_out == bad.packet


def test_packet_in_carries_the_header_fields_as_metadata(switch):
    to_cpu = f"action {{ action {{ action_id: {TO_CPU} }} }}"
    switch.write(update("INSERT", acl(9, "", 1, to_cpu)))
    switch.device.inject(9, frame())
    packet = switch.primary.get("packet").packet
    assert packet.payload == frame()
    assert [(m.metadata_id, m.value) for m in packet.metadata] == [(1, b"\x09"), (2, b"\x00")]
    backup = switch.stream()
    backup.arbitrate(1, (0, 0))
    switch.device.inject(9, frame())
    assert switch.primary.get("packet") is not None
    assert backup.get("packet", timeout=0.3) is None  # only the primary gets packet-ins


# ---- digests ----------------------------------------------------------------------------------

def digest_config(kind: str, timeout_ns: int = 0, size: int = 1, ack_ns: int = 10**12):
    return update(kind, f"digest_entry {{ digest_id: {DIGEST} config {{ max_timeout_ns: "
                        f"{timeout_ns} max_list_size: {size} ack_timeout_ns: {ack_ns} }} }}")


def ack(sw: Switch, digest: p4runtime_pb2.DigestList) -> None:
    request = p4runtime_pb2.StreamMessageRequest()
    request.digest_ack.digest_id = digest.digest_id
    request.digest_ack.list_id = digest.list_id
    sw.primary.send(request)


def test_no_digest_without_a_config(switch):
    switch.device.inject(1, frame())
    assert switch.primary.get("digest", timeout=0.3) is None


def test_digests_are_sent_deduplicated_and_acknowledged(switch):
    switch.write(digest_config("INSERT"))
    switch.device.inject(3, frame(src="00:00:00:00:00:aa"))
    digest = switch.primary.get("digest").digest
    assert digest.digest_id == DIGEST and digest.list_id > 0
    (data,) = digest.data
    assert [m.bitstring for m in data.struct.members] == [b"\xaa", b"\x03"]
    switch.device.inject(3, frame(src="00:00:00:00:00:aa"))
    assert switch.primary.get("digest", timeout=0.3) is None  # in the cache until acked
    ack(switch, digest)
    time.sleep(0.1)
    switch.device.inject(3, frame(src="00:00:00:00:00:aa"))
    assert switch.primary.get("digest") is not None
    (config,) = switch.read(entity("digest_entry { }"))
    assert config.digest_entry.config.ack_timeout_ns == 10**12
    bad_ack = p4runtime_pb2.StreamMessageRequest()
    bad_ack.digest_ack.digest_id = 5
    switch.primary.send(bad_ack)
    assert switch.primary.get("error").error.canonical_code == code_pb2.INVALID_ARGUMENT
    switch.write(update("DELETE", f"digest_entry {{ digest_id: {DIGEST} }}"))
    switch.device.inject(4, frame())
    assert switch.primary.get("digest", timeout=0.3) is None


def test_digest_lists_fill_up_or_time_out(switch):
    switch.write(digest_config("INSERT", timeout_ns=10**12, size=3, ack_ns=0))
    for i in range(4):
        switch.device.inject(i + 1, frame())
    assert len(switch.primary.get("digest").digest.data) == 3
    assert switch.primary.get("digest", timeout=0.3) is None
    switch.write(digest_config("MODIFY", timeout_ns=50_000_000, size=10, ack_ns=0))
    switch.device.inject(7, frame())
    late = switch.primary.get("digest").digest
    assert len(late.data) >= 1
    assert codes(switch, digest_config("INSERT"),
                 update("MODIFY", "digest_entry { digest_id: 1 }")) == [
        "ALREADY_EXISTS", "INVALID_ARGUMENT"]
    switch.write(update("DELETE", f"digest_entry {{ digest_id: {DIGEST} }}"))
    assert codes(switch, digest_config("MODIFY"),
                 update("DELETE", f"digest_entry {{ digest_id: {DIGEST} }}")) == [
        "NOT_FOUND", "NOT_FOUND"]

"""The P4Runtime server through raw gRPC stubs: every RPC and its error
paths, on the basic IPv4 LPM program, and packets forwarded per the entries."""

import grpc
import pytest
from p4.v1 import p4runtime_pb2
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from tests.unit.data.p4runtime.harness import SetConfig, Switch, batch_errors, entity, p4info, update

TABLE = 37375156
FORWARD, DROP, NOACTION = 28792405, 25652968, 21257015
GetConfig = p4runtime_pb2.GetForwardingPipelineConfigRequest


def lpm_entry(prefix: str, plen: int, mac: str = "\\x08\\x00\\x00\\x00\\x02\\x22",
              port: str = "\\x02", extra: str = "") -> str:
    value = "".join(f"\\x{int(b):02x}" for b in prefix.split("."))
    return f"""table_entry {{ table_id: {TABLE}
        match {{ field_id: 1 lpm {{ value: "{value}" prefix_len: {plen} }} }}
        action {{ action {{ action_id: {FORWARD}
            params {{ param_id: 1 value: "{mac}" }} params {{ param_id: 2 value: "{port}" }} }} }}
        {extra} }}"""


@pytest.fixture
def switch():
    sw = Switch(device_id=1)
    primary = sw.stream()
    assert primary.arbitrate(1, (0, 1)).status.code == 0
    sw.set_config("basic")
    yield sw
    sw.stop()


@pytest.fixture
def bare():
    sw = Switch(device_id=1)
    yield sw
    sw.stop()


def code_of(call, *args, **kwargs) -> grpc.StatusCode:
    with pytest.raises(grpc.RpcError) as err:
        result = call(*args, **kwargs)
        if hasattr(result, "__iter__"):
            list(result)
    return err.value.code()


def udp(dst: str) -> bytes:
    return bytes(Ether(dst="00:00:00:00:01:01", src="08:00:00:00:01:11") /
                 IP(src="10.0.1.1", dst=dst, ttl=64) / UDP(sport=1, dport=2) / b"payload")


# ---- Capabilities and pipeline config ------------------------------------------------

def test_capabilities_reports_1_4_1(bare):
    assert bare.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version \
        == "1.4.1"


def test_get_config_before_any_set_is_empty_and_rpcs_need_a_pipeline(bare):
    response = bare.stub.GetForwardingPipelineConfig(GetConfig(device_id=1))
    assert not response.HasField("config")
    assert code_of(bare.read, entity("table_entry {}")) == grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(bare.write, update("INSERT", lpm_entry("10.0.0.0", 8)), election=None) == \
        grpc.StatusCode.FAILED_PRECONDITION
    assert code_of(bare.stub.GetForwardingPipelineConfig, GetConfig(device_id=9)) == \
        grpc.StatusCode.NOT_FOUND


def test_get_config_response_types_and_cookie(switch):
    switch.set_config("basic", cookie=77)
    get = switch.stub.GetForwardingPipelineConfig
    everything = get(GetConfig(device_id=1, response_type=GetConfig.ALL)).config
    assert everything.p4info == p4info("basic")
    assert everything.p4_device_config == b"basic" and everything.cookie.cookie == 77
    cookie = get(GetConfig(device_id=1, response_type=GetConfig.COOKIE_ONLY)).config
    assert not cookie.HasField("p4info") and not cookie.p4_device_config
    assert cookie.cookie.cookie == 77
    info = get(GetConfig(device_id=1, response_type=GetConfig.P4INFO_AND_COOKIE)).config
    assert info.HasField("p4info") and not info.p4_device_config
    device = get(GetConfig(device_id=1, response_type=GetConfig.DEVICE_CONFIG_AND_COOKIE)).config
    assert not device.HasField("p4info") and device.p4_device_config == b"basic"
    assert code_of(get, GetConfig(device_id=1, response_type=9)) == \
        grpc.StatusCode.INVALID_ARGUMENT
    switch.set_config("basic")
    assert not get(GetConfig(device_id=1)).config.HasField("cookie")


def test_set_config_errors(switch):
    set_config = switch.set_config
    with pytest.raises(grpc.RpcError) as err:
        set_config("basic", device_config=b"garbage")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "cannot load the device config" in err.value.details()
    with pytest.raises(grpc.RpcError) as err:
        set_config("kitchen", device_config=b"basic")
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "does not fit" in err.value.details()
    assert code_of(set_config, "basic", action=SetConfig.UNSPECIFIED) == \
        grpc.StatusCode.INVALID_ARGUMENT
    request = SetConfig(device_id=1, action=SetConfig.VERIFY_AND_COMMIT)
    request.election_id.low = 1
    assert code_of(switch.stub.SetForwardingPipelineConfig, request) == \
        grpc.StatusCode.INVALID_ARGUMENT
    assert code_of(set_config, "basic", election=(0, 2)) == grpc.StatusCode.PERMISSION_DENIED
    request.device_id = 5
    assert code_of(switch.stub.SetForwardingPipelineConfig, request) == grpc.StatusCode.NOT_FOUND


def test_verify_save_and_commit(switch):
    switch.write(update("INSERT", lpm_entry("10.0.2.0", 24)))
    switch.set_config("kitchen", action=SetConfig.VERIFY)
    assert switch.stub.GetForwardingPipelineConfig(GetConfig(device_id=1)).config \
        .p4_device_config == b"basic"
    assert len(switch.read(entity("table_entry {}"))) == 1
    assert code_of(switch.set_config, "basic", action=SetConfig.COMMIT) == \
        grpc.StatusCode.INVALID_ARGUMENT  # COMMIT takes no config
    commit = SetConfig(device_id=1, action=SetConfig.COMMIT)
    commit.election_id.low = 1
    assert code_of(switch.stub.SetForwardingPipelineConfig, commit) == grpc.StatusCode.NOT_FOUND
    switch.set_config("basic", action=SetConfig.VERIFY_AND_SAVE)
    # Reads and writes refer to the saved config; the device still runs the old one.
    assert switch.read(entity("table_entry {}")) == []
    switch.write(update("INSERT", lpm_entry("10.0.3.0", 24, port="\\x03")))
    assert switch.device.inject(1, udp("10.0.2.9")).outputs[0].port == 2
    switch.stub.SetForwardingPipelineConfig(commit)
    assert switch.device.inject(1, udp("10.0.3.9")).outputs[0].port == 3
    assert switch.device.inject(1, udp("10.0.2.9")).dropped == 1


def test_verify_and_commit_clears_the_state(switch):
    switch.write(update("INSERT", lpm_entry("10.0.2.0", 24)))
    switch.set_config("basic")
    assert switch.read(entity("table_entry {}")) == []


def test_reconcile_and_commit_keeps_the_state_or_refuses(switch):
    switch.write(update("INSERT", lpm_entry("10.0.2.0", 24)),
                 update("MODIFY", f"table_entry {{ table_id: {TABLE} is_default_action: true "
                                  f"action {{ action {{ action_id: {NOACTION} }} }} }}"))
    switch.set_config("basic", action=SetConfig.RECONCILE_AND_COMMIT, cookie=5)
    assert len(switch.read(entity("table_entry {}"))) == 1
    default = switch.read(entity(f"table_entry {{ table_id: {TABLE} is_default_action: true }}"))
    assert default[0].table_entry.action.action.action_id == NOACTION
    assert switch.device.inject(1, udp("10.0.2.9")).outputs[0].port == 2
    with pytest.raises(grpc.RpcError) as err:
        switch.set_config("kitchen", action=SetConfig.RECONCILE_AND_COMMIT)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "do not fit the new config" in err.value.details()
    config = switch.stub.GetForwardingPipelineConfig(GetConfig(device_id=1)).config
    assert config.p4_device_config == b"basic" and config.cookie.cookie == 5


# ---- Write -------------------------------------------------------------------------------

def test_insert_read_modify_delete_and_forwarding(switch):
    switch.write(update("INSERT", lpm_entry("10.0.2.0", 24)))
    (read,) = switch.read(entity("table_entry {}"))
    assert read == entity(lpm_entry("10.0.2.0", 24))
    out = switch.device.inject(1, udp("10.0.2.2")).outputs
    assert [o.port for o in out] == [2]
    assert Ether(out[0].data).dst == "08:00:00:00:02:22" and Ether(out[0].data)[IP].ttl == 63
    switch.write(update("MODIFY", lpm_entry("10.0.2.0", 24, port="\\x05")))
    assert switch.device.inject(1, udp("10.0.2.2")).outputs[0].port == 5
    switch.write(update("DELETE", f"""table_entry {{ table_id: {TABLE}
        match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x02\\x00" prefix_len: 24 }} }} }}"""))
    assert switch.read(entity("table_entry {}")) == []
    assert switch.device.inject(1, udp("10.0.2.2")).dropped == 1


def test_longest_prefix_wins_and_padded_bytestrings_read_back_canonical(switch):
    switch.write(update("INSERT", lpm_entry("10.0.0.0", 8, port="\\x00\\x01")),
                 update("INSERT", lpm_entry("10.0.2.0", 24, mac="\\x00\\x00\\x00\\x00\\x00\\x00\\x01",
                                            port="\\x00\\x02")))
    assert switch.device.inject(1, udp("10.0.2.2")).outputs[0].port == 2
    assert switch.device.inject(1, udp("10.9.9.9")).outputs[0].port == 1
    entries = switch.read(entity(f"table_entry {{ table_id: {TABLE} }}"))
    params = [[p.value for p in e.table_entry.action.action.params] for e in entries]
    assert params == [[b"\x08\x00\x00\x00\x02\x22", b"\x01"], [b"\x01", b"\x02"]]
    one = switch.read(entity(f"""table_entry {{ table_id: {TABLE}
        match {{ field_id: 1 lpm {{ value: "\\x0a\\x00\\x00\\x00" prefix_len: 8 }} }} }}"""))
    assert len(one) == 1 and one[0].table_entry.match[0].lpm.prefix_len == 8


def test_batch_reports_one_error_per_update(switch):
    bad_value = "\\x01\\x0a\\x00\\x02\\x00"
    with pytest.raises(grpc.RpcError) as err:
        switch.write(
            update("INSERT", lpm_entry("10.0.1.0", 24)),
            update("INSERT", lpm_entry("10.0.1.0", 24)),
            update("MODIFY", lpm_entry("10.0.9.0", 24)),
            update("DELETE", lpm_entry("10.0.8.0", 24)),
            update("INSERT", lpm_entry("10.0.1.1", 24)),
            update("INSERT", lpm_entry("10.0.7.0", 24, extra="priority: 3")),
            update("INSERT", lpm_entry("10.0.6.0", 0)),
            update("INSERT", lpm_entry("10.0.5.0", 24, port="\\x02\\x00")),
            update("INSERT", lpm_entry("10.0.4.0", 24).replace(f"action_id: {FORWARD}",
                                                              "action_id: 12345")),
            update("INSERT", lpm_entry("10.0.3.0", 24).replace(
                'params { param_id: 2 value: "\\x02" }', "")),
            update("INSERT", lpm_entry("10.0.3.0", 24).replace(f"table_id: {TABLE}",
                                                              "table_id: 1")),
            update("INSERT", f"""table_entry {{ table_id: {TABLE} match {{ field_id: 1
                lpm {{ value: "{bad_value}" prefix_len: 24 }} }}
                action {{ action {{ action_id: {DROP} }} }} }}"""),
            update("INSERT", f"table_entry {{ table_id: {TABLE} action {{ action {{ action_id: "
                             f"{DROP} }} }} }}"),
            update("INSERT", f"table_entry {{ table_id: {TABLE} match {{ field_id: 1 exact "
                             f'{{ value: "\\x01" }} }} action {{ action {{ action_id: {DROP} }} }} }}'),
            p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT),
            p4runtime_pb2.Update(entity=entity(lpm_entry("10.0.1.0", 24))),
        )
    errors = batch_errors(err.value)
    assert [code for code, _ in errors] == [
        "OK", "ALREADY_EXISTS", "NOT_FOUND", "NOT_FOUND", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "OK", "INVALID_ARGUMENT",
        "INVALID_ARGUMENT", "INVALID_ARGUMENT"]
    messages = [m for _, m in errors]
    assert "bits set beyond the /24 prefix" in messages[4]
    assert "takes no priority" in messages[5]
    assert "prefix length 0" in messages[6]
    assert "does not fit in 9 bits" in messages[7]
    assert "unknown action id 12345" in messages[8]
    assert "missing parameter(s) port" in messages[9]
    assert "unknown table id 1" in messages[10]
    assert "does not fit in 32 bits" in messages[11]
    assert "expected a lpm match" in messages[13]
    assert "entity is not set" in messages[14] and "update type" in messages[15]
    # the don't-care entry (match omitted) was inserted
    assert len(switch.read(entity("table_entry {}"))) == 2


def test_default_entry_modify_reset_and_forbidden_updates(switch):
    read_default = entity(f"table_entry {{ table_id: {TABLE} is_default_action: true }}")
    (default,) = switch.read(read_default)
    assert default.table_entry.action.action.action_id == DROP
    switch.write(update("MODIFY", f"""table_entry {{ table_id: {TABLE} is_default_action: true
        action {{ action {{ action_id: {FORWARD} params {{ param_id: 1 value: "\\x01" }}
        params {{ param_id: 2 value: "\\x07" }} }} }} controller_metadata: 9 }}"""))
    assert switch.device.inject(1, udp("10.9.9.9")).outputs[0].port == 7
    (default,) = switch.read(read_default)
    assert default.table_entry.action.action.params[1].value == b"\x07"
    assert default.table_entry.controller_metadata == 9
    switch.write(update("MODIFY", f"table_entry {{ table_id: {TABLE} is_default_action: true }}"))
    (default,) = switch.read(read_default)
    assert default.table_entry.action.action.action_id == DROP
    assert switch.device.inject(1, udp("10.9.9.9")).dropped == 1
    with pytest.raises(grpc.RpcError) as err:
        switch.write(
            update("INSERT", f"table_entry {{ table_id: {TABLE} is_default_action: true "
                             f"action {{ action {{ action_id: {DROP} }} }} }}"),
            update("DELETE", f"table_entry {{ table_id: {TABLE} is_default_action: true }}"),
            update("MODIFY", lpm_entry("10.0.0.0", 8, extra="is_default_action: true")))
    assert [code for code, _ in batch_errors(err.value)] == ["INVALID_ARGUMENT"] * 3


def test_controller_metadata_metadata_and_read_filters(switch):
    switch.write(update("INSERT", lpm_entry("10.0.1.0", 24, extra='controller_metadata: 7 '
                                                                 'metadata: "m1"')),
                 update("INSERT", lpm_entry("10.0.2.0", 24)))
    assert len(switch.read(entity(f"table_entry {{ table_id: {TABLE} controller_metadata: 7 }}"))) == 1
    (one,) = switch.read(entity(f'table_entry {{ table_id: {TABLE} metadata: "m1" }}'))
    assert one.table_entry.controller_metadata == 7 and one.table_entry.metadata == b"m1"
    by_action = entity(f"table_entry {{ table_id: {TABLE} action {{ action {{ action_id: {DROP} }} }} }}")
    assert switch.read(by_action) == []


def test_write_refusals_before_any_update(switch):
    assert code_of(switch.write, update("INSERT", lpm_entry("10.0.0.0", 8)), election=(0, 9)) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert code_of(switch.write, update("INSERT", lpm_entry("10.0.0.0", 8)), election=None) == \
        grpc.StatusCode.PERMISSION_DENIED
    assert code_of(switch.write, update("INSERT", lpm_entry("10.0.0.0", 8)), role="other") == \
        grpc.StatusCode.NOT_FOUND
    assert code_of(switch.write, update("INSERT", lpm_entry("10.0.0.0", 8)),
                   atomicity=p4runtime_pb2.WriteRequest.ROLLBACK_ON_ERROR) == \
        grpc.StatusCode.UNIMPLEMENTED
    request = p4runtime_pb2.WriteRequest(device_id=3)
    request.election_id.low = 1
    assert code_of(switch.stub.Write, request) == grpc.StatusCode.NOT_FOUND


def test_writes_without_election_id_while_no_controller_is_connected(bare):
    bare.set_config("basic", election=None)
    bare.write(update("INSERT", lpm_entry("10.0.2.0", 24)), election=None)
    assert code_of(bare.write, update("INSERT", lpm_entry("10.0.3.0", 24)), election=(0, 1)) == \
        grpc.StatusCode.PERMISSION_DENIED


# ---- Read ----------------------------------------------------------------------------------

def test_read_errors_are_per_request(switch):
    switch.write(update("INSERT", lpm_entry("10.0.2.0", 24)))
    request = p4runtime_pb2.ReadRequest(device_id=1, entities=[
        entity("table_entry {}"), entity("table_entry { table_id: 99 }"), p4runtime_pb2.Entity(),
        entity("counter_entry { counter_id: 5 }")])
    responses = switch.stub.Read(request)
    got = []
    with pytest.raises(grpc.RpcError) as err:
        for response in responses:
            got.extend(response.entities)
    assert len(got) == 1
    assert [code for code, _ in batch_errors(err.value)] == [
        "OK", "INVALID_ARGUMENT", "INVALID_ARGUMENT", "INVALID_ARGUMENT"]
    assert code_of(switch.stub.Read, p4runtime_pb2.ReadRequest(device_id=2)) == \
        grpc.StatusCode.NOT_FOUND


def test_malformed_requests_never_crash_the_server(switch):
    weird = [
        "table_entry { table_id: 37375156 match { field_id: 1 lpm { value: \"\" prefix_len: 8 } } "
        "action { action { action_id: 25652968 } } }",
        "table_entry { table_id: 37375156 match { field_id: 1 } action { action_profile_member_id: 1 } }",
        "table_entry { table_id: 37375156 is_const: true }",
        "table_entry { table_id: 37375156 idle_timeout_ns: 5 }",
        "table_entry { table_id: 37375156 time_since_last_hit {} }",
        "direct_counter_entry { }",
        "direct_meter_entry { table_entry { table_id: 37375156 } }",
        "counter_entry { counter_id: 1 }", "meter_entry { }", "register_entry { }",
        "value_set_entry { }", "digest_entry { digest_id: 4 }",
        "action_profile_member { action_profile_id: 3 }", "action_profile_group { }",
        "packet_replication_engine_entry { }", "extern_entry { }",
    ]
    for kind in ("INSERT", "MODIFY", "DELETE"):
        with pytest.raises(grpc.RpcError) as err:
            switch.write(*(update(kind, text) for text in weird))
        codes = [code for code, _ in batch_errors(err.value)]
        assert "OK" not in codes and "INTERNAL" not in codes, codes
    assert switch.stub.Capabilities(p4runtime_pb2.CapabilitiesRequest()).p4runtime_api_version

"""Client arbitration over real StreamChannels: primary and backups per
(device, role), notifications, refused updates, re-election."""

import time

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.arbitration import DUPLICATE_GRACE_S
from tests.unit.data.p4runtime.harness import Switch, update

ENTRY = """table_entry { table_id: 37375156 match { field_id: 1 lpm { value: "\\x0a\\x00\\x00\\x00"
    prefix_len: 8 } } action { action { action_id: 25652968 } } }"""
OK, ALREADY_EXISTS, NOT_FOUND = code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.NOT_FOUND


def eid(update_msg) -> int:
    return (update_msg.election_id.high << 64) | update_msg.election_id.low


@pytest.fixture
def switch():
    sw = Switch(device_id=7)
    yield sw
    sw.stop()


@pytest.fixture
def sticky():
    sw = Switch(device_id=7, sticky=True)
    yield sw
    sw.stop()


def write_code(sw: Switch, election) -> grpc.StatusCode:
    try:
        sw.write(update("INSERT", ENTRY), election=election)
    except grpc.RpcError as exc:
        return exc.code()
    sw.write(update("DELETE", ENTRY), election=election)
    return grpc.StatusCode.OK


def test_highest_election_id_is_primary_and_everyone_hears_of_changes(switch):
    a, b, c = switch.stream(), switch.stream(), switch.stream()
    first = a.arbitrate(7, (0, 5))
    assert first.status.code == OK and eid(first) == 5 and first.device_id == 7
    second = b.arbitrate(7, (0, 3))
    assert second.status.code == ALREADY_EXISTS and eid(second) == 5
    assert a.get("arbitration", timeout=0.3) is None  # a backup joining is told alone
    third = c.arbitrate(7, (1, 0))
    assert third.status.code == OK and eid(third) == 1 << 64
    for backup in (a, b):
        note = backup.get("arbitration").arbitration
        assert note.status.code == ALREADY_EXISTS and eid(note) == 1 << 64
    switch.set_config("basic", election=(1, 0))
    assert write_code(switch, (1, 0)) == grpc.StatusCode.OK
    assert write_code(switch, (0, 5)) == grpc.StatusCode.PERMISSION_DENIED
    assert write_code(switch, None) == grpc.StatusCode.PERMISSION_DENIED


def test_primary_leaving_elects_the_next_highest(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 9))
    b.arbitrate(7, (0, 4))
    a.close()
    note = b.get("arbitration").arbitration
    assert note.status.code == OK and eid(note) == 4
    switch.set_config("basic", election=(0, 4))
    assert write_code(switch, (0, 4)) == grpc.StatusCode.OK


def test_primary_may_step_down_and_up(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 9))
    b.arbitrate(7, (0, 4))
    down = a.arbitrate(7, (0, 2))
    assert down.status.code == ALREADY_EXISTS and eid(down) == 4
    assert b.get("arbitration").arbitration.status.code == OK
    up = a.arbitrate(7, (0, 10))
    assert up.status.code == OK
    assert b.get("arbitration").arbitration.status.code == ALREADY_EXISTS


def test_sticky_mode_remembers_the_highest_election_id(sticky):
    a, b = sticky.stream(), sticky.stream()
    a.arbitrate(7, (0, 9))
    b.arbitrate(7, (0, 4))
    a.close()
    note = b.get("arbitration").arbitration
    assert note.status.code == NOT_FOUND and eid(note) == 9
    assert write_code(sticky, (0, 4)) == grpc.StatusCode.PERMISSION_DENIED
    assert b.arbitrate(7, (0, 8)).status.code == NOT_FOUND
    promoted = b.arbitrate(7, (0, 9))
    assert promoted.status.code == OK and eid(promoted) == 9
    sticky.set_config("basic", election=(0, 9))
    assert write_code(sticky, (0, 9)) == grpc.StatusCode.OK


def test_sticky_mode_refuses_writes_without_a_stream(sticky):
    with pytest.raises(grpc.RpcError) as err:
        sticky.set_config("basic", election=None)
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED


@pytest.mark.parametrize("device_id, election, role_config, code", [
    (8, (0, 1), False, grpc.StatusCode.NOT_FOUND),
    (7, (0, 1), True, grpc.StatusCode.INVALID_ARGUMENT),
])
def test_bad_first_arbitration_ends_the_stream(switch, device_id, election, role_config, code):
    client = switch.stream()
    request = p4runtime_pb2.StreamMessageRequest()
    request.arbitration.device_id = device_id
    request.arbitration.election_id.low = election[1]
    if role_config:
        request.arbitration.role.config.SetInParent()
    client.send(request)
    assert client.ended()
    assert client.error is not None and client.error.code() == code


def test_duplicate_election_id_ends_the_new_stream(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 3))
    assert b.arbitrate(7, (0, 3)) is None
    assert b.ended() and b.error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert a.arbitrate(7, (0, 3)).status.code == OK  # the same stream may repeat its id


def test_changing_device_or_role_on_a_live_stream_ends_it(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 3))
    b.arbitrate(7, (0, 2))
    assert a.arbitrate(8, (0, 3)) is None
    assert a.ended() and a.error.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert b.get("arbitration").arbitration.status.code == OK  # a's stream is gone
    assert b.arbitrate(7, (0, 2), role="other") is None
    assert b.ended() and b.error.code() == grpc.StatusCode.FAILED_PRECONDITION


def test_unset_election_id_is_never_primary(switch):
    client = switch.stream()
    note = client.arbitrate(7, None)
    assert note.status.code == NOT_FOUND and not note.HasField("election_id")
    assert write_code(switch, None) == grpc.StatusCode.PERMISSION_DENIED


def test_roles_elect_their_own_primaries(switch):
    default, left, right = switch.stream(), switch.stream(), switch.stream()
    default.arbitrate(7, (0, 1))
    note = left.arbitrate(7, (0, 1), role="left")
    assert note.status.code == OK and note.role.name == "left"
    assert right.arbitrate(7, (0, 2), role="right").status.code == OK
    switch.set_config("basic", election=(0, 1))
    switch.write(update("INSERT", ENTRY), election=(0, 1), role="left")
    with pytest.raises(grpc.RpcError) as err:
        switch.write(update("DELETE", ENTRY), election=(0, 1), role="right")
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    switch.write(update("DELETE", ENTRY), election=(0, 2), role="right")


def test_backups_cannot_send_packets_and_messages_before_arbitration_are_ignored(switch):
    a, b = switch.stream(), switch.stream()
    switch.set_config("basic", election=None)
    request = p4runtime_pb2.StreamMessageRequest()
    request.packet.payload = b"x"
    a.send(request)
    a.arbitrate(7, (0, 9))
    b.arbitrate(7, (0, 4))
    b.send(request)
    error = b.get("error").error
    assert error.canonical_code == code_pb2.PERMISSION_DENIED
    assert error.packet_out.packet_out.payload == b"x"
    a.send(request)  # primary, but this switch has no CPU port
    assert a.get("error").error.canonical_code == code_pb2.FAILED_PRECONDITION
    other = p4runtime_pb2.StreamMessageRequest()
    other.other.SetInParent()
    a.send(other)
    assert a.get("error").error.canonical_code == code_pb2.UNIMPLEMENTED


def test_a_closed_stream_frees_its_election_id_for_the_next_connection(switch):
    # As the tutorials' PTF tests do: close the stream (half-close, no wait)
    # and at once connect again with the same election id, test after test.
    previous = switch.stream()
    assert previous.arbitrate(7, (0, 1)).status.code == OK
    for _ in range(200):
        previous.send(None)
        current = switch.stream()
        note = current.arbitrate(7, (0, 1))
        assert note is not None and note.status.code == OK
        previous = current
    switch.set_config("basic", election=(0, 1))


def test_a_cancelled_stream_releases_its_controller_at_once(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 9))
    b.arbitrate(7, (0, 4))
    a.call.cancel()
    note = b.get("arbitration", timeout=1.0)
    assert note is not None and note.arbitration.status.code == OK and eid(note.arbitration) == 4
    assert switch.stream().arbitrate(7, (0, 9)).status.code == OK


def test_a_duplicate_waits_for_the_holder_to_leave_then_is_refused(switch):
    a, b = switch.stream(), switch.stream()
    a.arbitrate(7, (0, 3))
    start = time.monotonic()
    assert b.arbitrate(7, (0, 3), timeout=5.0) is None
    waited_s = time.monotonic() - start
    assert b.error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert DUPLICATE_GRACE_S * 0.9 <= waited_s < DUPLICATE_GRACE_S + 2.0

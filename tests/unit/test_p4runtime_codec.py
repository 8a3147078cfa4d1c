"""P4Runtime server pieces without gRPC: bytestrings, P4Data, controller
header framing, the P4Info index and its binding to a pipeline, batch
statuses."""

import pytest
from google.protobuf import text_format
from google.rpc import code_pb2
from p4.config.v1 import p4info_pb2, p4types_pb2
from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.codec import (
    decode_int, decode_uint, encode_int, encode_p4data, encode_uint,
)
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.errors import P4RuntimeError, batch_status, invalid_argument
from emulator.p4.p4info.index import P4InfoError, P4InfoIndex
from emulator.targets.p4runtime.packet_io import packet_in_message, packet_out_frame
from tests.unit.data.p4runtime.harness import p4info
from tests.unit.data.p4runtime.programs import LEARN, load_device_config


# ---- bytestrings (spec §8.4 tables of valid and invalid encodings) ---------------

@pytest.mark.parametrize("data, width, value", [
    (b"\x63", 8, 99), (b"\x00\x63", 16, 99), (b"\x63", 16, 99), (b"\x30\x64", 16, 0x3064),
    (b"\x00\x30\x64", 16, 0x3064), (b"\x00\x63", 12, 99), (b"\x00\x00\x63", 12, 99),
    (b"\x01\xff", 9, 511),
])
def test_unsigned_bytestrings_accept_canonical_and_padded(data, width, value):
    assert decode_uint(data, width, "x") == value


@pytest.mark.parametrize("data, width", [
    (b"\x01\x63", 8), (b"", 8), (b"\x01\x00\x63", 16), (b"\x10\x63", 12), (b"\x02\x00", 9),
])
def test_unsigned_bytestrings_reject_what_does_not_fit(data, width):
    with pytest.raises(P4RuntimeError) as err:
        decode_uint(data, width, "field f", code_pb2.OUT_OF_RANGE)
    assert err.value.code == code_pb2.OUT_OF_RANGE and "field f" in err.value.message


@pytest.mark.parametrize("data, width, value", [
    (b"\x63", 8, 99), (b"\x9d", 8, -99), (b"\xff\x9d", 8, -99), (b"\xfd\x1d", 12, -739),
    (b"\x00\x00", 16, 0), (b"\x00", 16, 0),
])
def test_signed_bytestrings(data, width, value):
    assert decode_int(data, width, "x") == value


@pytest.mark.parametrize("data, width", [(b"\x00\x9d", 8), (b"\x8d\x1d", 12), (b"", 16)])
def test_signed_bytestrings_rejected(data, width):
    with pytest.raises(P4RuntimeError):
        decode_int(data, width, "x")


def test_canonical_encoding_is_the_shortest_string():
    assert encode_uint(0) == b"\x00"
    assert encode_uint(99) == b"\x63"
    assert encode_uint(0x3064) == b"\x30\x64"
    assert encode_uint(0x0A000100) == b"\x0a\x00\x01\x00"
    assert encode_int(-99) == b"\x9d"
    assert encode_int(-739) == b"\xfd\x1d"
    assert encode_int(128) == b"\x00\x80"
    assert encode_int(0) == b"\x00"


# ---- P4Data ------------------------------------------------------------------------

def _struct_types() -> tuple[p4types_pb2.P4DataTypeSpec, p4types_pb2.P4TypeInfo]:
    info = p4info("kitchen")
    digest = next(d for d in info.digests if d.preamble.name == "learn_t")
    return digest.type_spec, info.type_info


class _Learn:
    srcAddr = 0x0000000000AB
    ingress_port = 3


def test_p4data_struct_from_generated_object_and_tuple():
    spec, types = _struct_types()
    data = encode_p4data(_Learn(), spec, types)
    assert [m.bitstring for m in data.struct.members] == [b"\xab", b"\x03"]
    assert encode_p4data((0xAB, 3), spec, types) == data


def test_p4data_scalars_headers_and_enums():
    types = text_format.Parse("""
      headers { key: "h_t" value { members { name: "a" type_spec { bit { bitwidth: 8 } } }
                                   members { name: "b" type_spec { int { bitwidth: 8 } } } } }
      enums { key: "E" value { members { name: "X" } members { name: "Y" } } }
      error { members: "NoError" members: "PacketTooShort" }
    """, p4types_pb2.P4TypeInfo())

    def spec(text):
        return text_format.Parse(text, p4types_pb2.P4DataTypeSpec())

    assert encode_p4data(-1, spec("bitstring { int { bitwidth: 8 } }"), types).bitstring == b"\xff"
    assert encode_p4data(255, spec("bitstring { int { bitwidth: 8 } }"), types).bitstring == b"\xff"
    assert encode_p4data(True, spec("bool {}"), types).bool is True
    assert encode_p4data(1, spec('enum { name: "E" }'), types).enum == "Y"
    assert encode_p4data(1, spec("error {}"), types).error == "PacketTooShort"

    class H:
        _v = True
        a = 7
        b = 0xFE

    header = encode_p4data(H(), spec('header { name: "h_t" }'), types).header
    assert header.is_valid and list(header.bitstrings) == [b"\x07", b"\xfe"]
    H._v = False
    assert not encode_p4data(H(), spec('header { name: "h_t" }'), types).header.is_valid
    tup = encode_p4data((1, False), spec("tuple { members { bitstring { bit { bitwidth: 4 } } } "
                                         "members { bool {} } }"), types)
    assert [m.WhichOneof("data") for m in tup.tuple.members] == ["bitstring", "bool"]


def test_learn_struct_type_matches_program():
    assert [f.name for f in LEARN.fields] == ["srcAddr", "ingress_port"]


# ---- controller headers --------------------------------------------------------------

def _header(name: str) -> p4info_pb2.ControllerPacketMetadata:
    return P4InfoIndex(p4info("kitchen")).controller_headers[name]


def test_packet_out_header_is_packed_msb_first_before_the_payload():
    packet = p4runtime_pb2.PacketOut(payload=b"frame")
    packet.metadata.add(metadata_id=2, value=b"\x00")
    packet.metadata.add(metadata_id=1, value=b"\x01\x05")  # 261, given out of order
    frame = packet_out_frame(_header("packet_out"), packet)
    assert frame == (261 << 7).to_bytes(2, "big") + b"frame"


@pytest.mark.parametrize("metadata, message", [
    ([(3, b"\x01")], "unknown metadata id 3"),
    ([(1, b"\x01"), (1, b"\x02"), (2, b"\x00")], "given twice"),
    ([(1, b"\x01")], "missing metadata _pad"),
    ([(1, b"\x02\x00"), (2, b"\x00")], "does not fit in 9 bits"),
])
def test_packet_out_metadata_must_match_the_p4info(metadata, message):
    packet = p4runtime_pb2.PacketOut(payload=b"x")
    for mid, value in metadata:
        packet.metadata.add(metadata_id=mid, value=value)
    with pytest.raises(P4RuntimeError, match=message):
        packet_out_frame(_header("packet_out"), packet)


def test_packet_out_without_header():
    assert packet_out_frame(None, p4runtime_pb2.PacketOut(payload=b"abc")) == b"abc"
    packet = p4runtime_pb2.PacketOut(payload=b"abc")
    packet.metadata.add(metadata_id=1, value=b"\x01")
    with pytest.raises(P4RuntimeError):
        packet_out_frame(None, packet)


def test_packet_in_header_is_split_off():
    message = packet_in_message(_header("packet_in"), (300 << 7).to_bytes(2, "big") + b"rest")
    assert message.payload == b"rest"
    assert [(m.metadata_id, m.value) for m in message.metadata] == [(1, b"\x01\x2c"), (2, b"\x00")]
    assert packet_in_message(_header("packet_in"), b"\x01") is None
    assert packet_in_message(None, b"raw").payload == b"raw"


# ---- P4Info index and binding ----------------------------------------------------------

def test_index_finds_objects_by_id_and_name():
    index = P4InfoIndex(p4info("kitchen"))
    assert index.tables[33554433].name == "MyIngress.acl"
    assert index.tables[33554433].needs_priority
    assert not index.tables[33554436].needs_priority
    assert index.ids_by_name["MyIngress.set_port"] == 16777219
    assert index.digest_ids == {"learn_t": 385875969}
    assert index.packet_in is not None and index.packet_out is not None
    assert index.tables[33554435].is_const


@pytest.mark.parametrize("edit, message", [
    (lambda i: i.actions.add().preamble.CopyFrom(i.tables[0].preamble), "already used"),
    (lambda i: setattr(i.tables[0], "implementation_id", 99), "unknown implementation"),
    (lambda i: i.tables[0].action_refs.add(id=5), "unknown action id 5"),
    (lambda i: i.tables[0].match_fields.add(id=1, name="dup", bitwidth=1, match_type=2),
     "ids are not unique"),
    (lambda i: i.tables[0].direct_resource_ids.append(7), "unknown direct resource"),
])
def test_index_rejects_inconsistent_p4info(edit, message):
    info = p4info("kitchen")
    edit(info)
    with pytest.raises(P4InfoError, match=message):
        P4InfoIndex(info)


def _bind(info: p4info_pb2.P4Info, program: bytes) -> PipelineContext:
    config = p4runtime_pb2.ForwardingPipelineConfig(p4info=info, p4_device_config=program)
    return PipelineContext(config, load_device_config(info, program))


def test_binding_checks_the_p4info_against_the_pipeline():
    assert set(_bind(p4info("kitchen"), b"kitchen").tables) == {33554433, 33554434, 33554435,
                                                                 33554436}
    with pytest.raises(P4InfoError, match="MyIngress.acl is not in the device config"):
        _bind(p4info("kitchen"), b"basic")
    info = p4info("basic")
    info.tables[0].match_fields[0].bitwidth = 31
    with pytest.raises(P4InfoError, match="31 bits in the P4Info"):
        _bind(info, b"basic")
    info = p4info("basic")
    info.actions[2].params[1].bitwidth = 8
    with pytest.raises(P4InfoError, match="parameters"):
        _bind(info, b"basic")
    info = p4info("kitchen")
    info.counters[0].size = 15
    with pytest.raises(P4InfoError, match="size 15"):
        _bind(info, b"kitchen")


# ---- batch statuses -------------------------------------------------------------------

def test_batch_status_has_one_error_per_update():
    assert batch_status([None, None], "Write") is None
    status = batch_status([None, invalid_argument("bad"), None], "Write")
    assert status.code == code_pb2.UNKNOWN
    errors = []
    for detail in status.details:
        e = p4runtime_pb2.Error()
        assert detail.Unpack(e)
        errors.append((e.canonical_code, e.message))
    assert errors == [(0, ""), (code_pb2.INVALID_ARGUMENT, "bad"), (0, "")]

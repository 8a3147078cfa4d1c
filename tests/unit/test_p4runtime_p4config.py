"""BMv2's p4.tmp.P4DeviceConfig wrapper: our wire-format encoder and decoder
agree with protobuf's (a class built from the field numbers), and a config
that is neither ours nor wrapped is described in a few words."""

import json

import pytest

from emulator.targets.p4runtime import p4config
from tests.tutorial_kit.p4config_pb import P4DeviceConfig, wrap

OURS = json.dumps({"format": "aifabric-p4-device/1", "program": "x.p4", "source": ""}).encode()


def test_encoding_matches_protobuf_field_for_field():
    message = P4DeviceConfig(reassign=True, device_data=OURS)
    message.extras.kv["target"] = "bmv2"
    ours = p4config.encode(OURS, reassign=True, extras={"target": "bmv2"})
    assert ours == message.SerializeToString()
    assert P4DeviceConfig.FromString(ours) == message
    assert p4config.encode(b"") == P4DeviceConfig().SerializeToString() == b""


@pytest.mark.parametrize("reassign, extras", [(True, {}), (False, {"a": "b", "é": "ü"}),
                                              (True, {"k": ""})])
def test_protobuf_bytes_decode_to_the_same_fields(reassign, extras):
    message = P4DeviceConfig(reassign=reassign, device_data=b"\x00\xffdata" * 300)
    for key, value in extras.items():
        message.extras.kv[key] = value
    decoded = p4config.decode(message.SerializeToString())
    assert decoded == p4config.P4DeviceConfig(b"\x00\xffdata" * 300, reassign, extras)


def test_unwrap_takes_device_data_out_and_leaves_everything_else():
    assert p4config.unwrap(wrap(OURS)) == (OURS, p4config.P4DeviceConfig(OURS, True, {}))
    assert p4config.unwrap(OURS) == (OURS, None)
    assert p4config.unwrap(b"  \n" + OURS) == (b"  \n" + OURS, None)
    for other in (b"", b"basic", b"kitchen", b"\x7fELF\x02\x01\x01", b"\x1a\x05abc",
                  P4DeviceConfig(reassign=True).SerializeToString()):
        assert p4config.unwrap(other) == (other, None), other


@pytest.mark.parametrize("data, words", [
    (OURS, f"{len(OURS)} bytes of JSON"),
    (wrap(OURS), f"a p4.tmp.P4DeviceConfig whose device_data is {len(OURS)} bytes of JSON"),
    (wrap(b"\x01\x02"), "whose device_data is 2 bytes, not JSON (starts 01 02)"),
    (b"", "an empty device config"),
    (b"\x7fELF\x02\x01\x01\x00\x00", "9 bytes, neither JSON nor a p4.tmp.P4DeviceConfig "
                                     "(starts 7f 45 4c 46 02 01 01 00)"),
    (b'{"format": ', "11 bytes that start like JSON but do not parse"),
])
def test_describe_says_what_a_config_is(data, words):
    assert words in p4config.describe(data)

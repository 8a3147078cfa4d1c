"""BMv2's ``p4.tmp.P4DeviceConfig`` wrapper around a device config, in wire
format, without PI's Python package.

PI's server (``simple_switch_grpc``) expects ``p4_device_config`` to be this
message (PI's ``proto/p4/tmp/p4config.proto``), and controllers written for
BMv2 send it (the p4lang tutorials' ``p4runtime_lib``, ONOS' bmv2 driver)::

    message P4DeviceConfig {
      message Extras { map<string, string> kv = 1; }
      bool reassign = 1;
      Extras extras = 2;
      bytes device_data = 3;   // the BMv2 JSON
    }

:func:`unwrap` takes ``device_data`` out of such a wrapper and leaves other
bytes alone; :func:`encode` builds one (for clients and tests);
:func:`describe` says in a few words what a config is, for error messages.
A config is taken for a wrapper only when it parses as one completely, with
``device_data`` set: JSON (our own device config, and BMv2's) starts with
``{``, which is field 15 with wire type 3 (a group) and never parses.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Mapping

FIELD_REASSIGN = 1
FIELD_EXTRAS = 2
FIELD_DEVICE_DATA = 3
FIELD_EXTRAS_KV = 1          # Extras.kv: map entries, each {key = 1, value = 2}
WIRE_VARINT, WIRE_FIXED64, WIRE_LEN, WIRE_FIXED32 = 0, 1, 2, 5


@dataclass
class P4DeviceConfig:
    device_data: bytes
    reassign: bool = False
    extras: dict[str, str] = field(default_factory=dict)


class _NotWrapper(ValueError):
    """The bytes are not a well-formed message of the expected shape."""


# ---- encoding -----------------------------------------------------------------------------
def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint(number << 3 | WIRE_LEN) + _varint(len(payload)) + payload


def encode(device_data: bytes, *, reassign: bool = False,
           extras: Mapping[str, str] | None = None) -> bytes:
    """The serialized ``P4DeviceConfig`` (fields in number order, proto3:
    defaults left out)."""
    out = bytearray()
    if reassign:
        out += _varint(FIELD_REASSIGN << 3 | WIRE_VARINT) + b"\x01"
    if extras:
        kv = b"".join(
            _len_field(FIELD_EXTRAS_KV, _len_field(1, k.encode()) + _len_field(2, v.encode()))
            for k, v in extras.items())
        out += _len_field(FIELD_EXTRAS, kv)
    if device_data:
        out += _len_field(FIELD_DEVICE_DATA, bytes(device_data))
    return bytes(out)


# ---- decoding -----------------------------------------------------------------------------
def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise _NotWrapper("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes) -> list[tuple[int, int, object]]:
    """(number, wire type, value) of every field; raises on anything that is
    not a complete message (groups included: nobody uses them here)."""
    out: list[tuple[int, int, object]] = []
    pos = 0
    while pos < len(data):
        key, pos = _read_varint(data, pos)
        number, wire = key >> 3, key & 7
        if number == 0:
            raise _NotWrapper("field number 0")
        if wire == WIRE_VARINT:
            value, pos = _read_varint(data, pos)
            out.append((number, wire, value))
        elif wire == WIRE_LEN:
            length, pos = _read_varint(data, pos)
            if pos + length > len(data):
                raise _NotWrapper("truncated field")
            out.append((number, wire, data[pos:pos + length]))
            pos += length
        elif wire in (WIRE_FIXED64, WIRE_FIXED32):
            size = 8 if wire == WIRE_FIXED64 else 4
            if pos + size > len(data):
                raise _NotWrapper("truncated field")
            out.append((number, wire, data[pos:pos + size]))
            pos += size
        else:
            raise _NotWrapper(f"wire type {wire}")
    return out


def _extras(data: bytes) -> dict[str, str]:
    kv: dict[str, str] = {}
    for number, wire, value in _fields(data):
        if number != FIELD_EXTRAS_KV:
            continue  # unknown field: proto3 skips it
        if wire != WIRE_LEN:
            raise _NotWrapper("Extras.kv is not a message")
        entry = {n: v for n, w, v in _fields(value) if w == WIRE_LEN}  # type: ignore[arg-type]
        try:
            kv[bytes(entry.get(1, b"")).decode()] = bytes(entry.get(2, b"")).decode()
        except UnicodeDecodeError:
            raise _NotWrapper("Extras.kv string is not UTF-8") from None
    return kv


def decode(data: bytes) -> P4DeviceConfig | None:
    """The wrapper in ``data``, or None if ``data`` is not one (with
    ``device_data`` set)."""
    try:
        config = P4DeviceConfig(b"")
        seen_data = False
        for number, wire, value in _fields(bytes(data)):
            if number == FIELD_REASSIGN:
                if wire != WIRE_VARINT:
                    raise _NotWrapper("reassign is not a varint")
                config.reassign = bool(value)
            elif number == FIELD_EXTRAS:
                if wire != WIRE_LEN:
                    raise _NotWrapper("extras is not a message")
                config.extras.update(_extras(value))  # type: ignore[arg-type]
            elif number == FIELD_DEVICE_DATA:
                if wire != WIRE_LEN:
                    raise _NotWrapper("device_data is not bytes")
                config.device_data, seen_data = bytes(value), True  # type: ignore[arg-type]
    except _NotWrapper:
        return None
    return config if seen_data else None


def unwrap(data: bytes) -> tuple[bytes, P4DeviceConfig | None]:
    """(device config, the wrapper it came in or None): ``device_data`` of a
    ``P4DeviceConfig``, else ``data`` as it is."""
    if data.lstrip()[:1] in (b"{", b"["):
        return data, None
    wrapper = decode(data)
    if wrapper is None:
        return data, None
    return wrapper.device_data, wrapper


def describe(data: bytes) -> str:
    """What a device config looks like, in a few words: ``"1234 bytes of
    JSON"``, ``"a p4.tmp.P4DeviceConfig whose device_data is 1234 bytes of
    JSON"``, ``"16 bytes, neither JSON nor a p4.tmp.P4DeviceConfig (starts
    7f 45 4c 46 ...)"``."""
    inner, wrapper = unwrap(data)
    if wrapper is not None:
        return f"a p4.tmp.P4DeviceConfig whose device_data is {_describe_plain(inner, True)}"
    return _describe_plain(data, False)


def _describe_plain(data: bytes, inside: bool) -> str:
    if not data:
        return "empty" if inside else "an empty device config"
    if data.lstrip()[:1] in (b"{", b"["):
        try:
            json.loads(data)
        except (ValueError, UnicodeDecodeError):
            return f"{len(data)} bytes that start like JSON but do not parse"
        return f"{len(data)} bytes of JSON"
    head = " ".join(f"{b:02x}" for b in data[:8])
    kind = "not JSON" if inside else "neither JSON nor a p4.tmp.P4DeviceConfig"
    return f"{len(data)} bytes, {kind} (starts {head})"

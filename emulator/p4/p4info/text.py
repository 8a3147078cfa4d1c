"""P4Info as text protobuf (``.p4info.txtpb``), binary and JSON.

:func:`to_text` writes exactly what p4c writes with ``--p4runtime-files
x.p4info.txtpb``: two comment lines naming the proto file and message, a
blank line, then ``google.protobuf.TextFormat`` output (fields in field
number order, map entries sorted by key, non-ASCII bytes as octal escapes).
:func:`from_text` reads such a file back (comments are ignored).
"""

from __future__ import annotations

import os
from typing import Union

from google.protobuf import json_format, text_format
from p4.config.v1 import p4info_pb2

HEADER = (
    "# proto-file: p4/config/v1/p4info.proto\n"
    "# proto-message: p4.config.v1.P4Info\n"
    "\n"
)

PathLike = Union[str, "os.PathLike[str]"]


def to_text(p4info: p4info_pb2.P4Info, header: bool = True) -> str:
    body = text_format.MessageToString(p4info)
    return (HEADER + body) if header else body


def from_text(text: str) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    text_format.Parse(text, msg)
    return msg


def write_text(p4info: p4info_pb2.P4Info, path: PathLike) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(to_text(p4info))


def read_text(path: PathLike) -> p4info_pb2.P4Info:
    with open(path, encoding="utf-8") as f:
        return from_text(f.read())


def to_binary(p4info: p4info_pb2.P4Info) -> bytes:
    return p4info.SerializeToString()


def from_binary(data: bytes) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    msg.ParseFromString(data)
    return msg


def to_json(p4info: p4info_pb2.P4Info) -> str:
    """JSON as protobuf's JSON mapping writes it (field names in camelCase)."""
    return json_format.MessageToJson(p4info)


def from_json(text: str) -> p4info_pb2.P4Info:
    msg = p4info_pb2.P4Info()
    json_format.Parse(text, msg)
    return msg


def read_any(path: PathLike) -> p4info_pb2.P4Info:
    """Read ``.txtpb``/``.txt``, ``.json`` or ``.bin`` by the file suffix."""
    p = os.fspath(path)
    if p.endswith(".json"):
        with open(p, encoding="utf-8") as f:
            return from_json(f.read())
    if p.endswith(".bin"):
        with open(p, "rb") as f:
            return from_binary(f.read())
    return read_text(p)

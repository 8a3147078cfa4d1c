"""MLCommons Chakra execution traces: read, write, and turn into a step graph.

A Chakra ET file (one per rank) is a sequence of length-delimited protobuf
messages (each a varint byte count, then the message): one
``GlobalMetadata``, then ``Node`` s. ``mlc-chakra`` ships the schema but
needs protobuf >= 6 while p4runtime-shell pins < 3.21, so the messages used
here are declared from the field numbers of Chakra's ``et_def.proto`` as a
descriptor, and the installed protobuf library parses and writes them::

    message GlobalMetadata { string version = 1; repeated AttributeProto attr = 2; }
    message Node { uint64 id = 1; string name = 2; NodeType type = 3;
                   repeated uint64 ctrl_deps = 4; repeated uint64 data_deps = 5;
                   uint64 start_time_micros = 6; uint64 duration_micros = 7;
                   repeated AttributeProto attr = 10; }
    message AttributeProto { string name = 1; int64 int64_val = 9;
                             uint64 uint64_val = 13; bool bool_val = 27;
                             string string_val = 29; }

Fields not declared (inputs, outputs, storage) are kept as unknown fields
and ignored. Node types: COMP_NODE 4, COMM_SEND_NODE 5, COMM_RECV_NODE 6,
COMM_COLL_NODE 7 (others are ignored, their dependants wait on nothing);
attributes read: ``comm_type`` (ALL_REDUCE 0, ALL_GATHER 2, ALL_TO_ALL 6,
REDUCE_SCATTER 7), ``comm_size`` (bytes), ``comm_src``, ``comm_dst``,
``comm_tag`` and ``pg_name`` (the process group).

:func:`trace_graph` makes :class:`~emulator.scenario.jobs_graph.Node` s of
the ranks' traces: a node depends on its ``data_deps`` and ``ctrl_deps``
(order on a rank is what the dependencies say); COMP is compute for
``duration_micros``; a SEND is a transfer (kind ``pp``) and its matching
RECV (same src, dst and tag) stands for it: its dependants wait for the SEND
and for the RECV's own dependencies; a COLL is a collective of kind
tp/pp/dp/ep when ``pg_name`` starts so (``dp``, ``dp3``; else ep for
ALL_TO_ALL, dp otherwise)
among ``groups[pg_name]`` ranks (default: every rank of the trace); the
k-th collective of a process group on each rank is one instance (NCCL runs
a communicator's collectives in order), its members the ranks that have it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from emulator.scenario.jobs_graph import COMM_KINDS, Node

COMP_NODE, COMM_SEND_NODE, COMM_RECV_NODE, COMM_COLL_NODE = 4, 5, 6, 7
ALL_REDUCE, ALL_GATHER, ALL_TO_ALL, REDUCE_SCATTER = 0, 2, 6, 7
_F = descriptor_pb2.FieldDescriptorProto


def _message_classes() -> tuple[type, type, type]:
    proto = descriptor_pb2.FileDescriptorProto(name="aifabric_chakra_et.proto",
                                               package="ChakraProtoMsg", syntax="proto3")

    def add(name: str, fields: Sequence[tuple[str, int, int, int, str]],
            oneof: str = "") -> None:
        msg = proto.message_type.add(name=name)
        if oneof:
            msg.oneof_decl.add(name=oneof)
        for fname, number, ftype, label, type_name in fields:
            f = msg.field.add(name=fname, number=number, type=ftype, label=label)
            if type_name:
                f.type_name = type_name
            if oneof and number != 1:  # every field but the name is in the oneof
                f.oneof_index = 0

    opt, rep = _F.LABEL_OPTIONAL, _F.LABEL_REPEATED
    add("AttributeProto", [("name", 1, _F.TYPE_STRING, opt, ""),
                           ("int64_val", 9, _F.TYPE_INT64, opt, ""),
                           ("uint64_val", 13, _F.TYPE_UINT64, opt, ""),
                           ("bool_val", 27, _F.TYPE_BOOL, opt, ""),
                           ("string_val", 29, _F.TYPE_STRING, opt, "")], oneof="value")
    attr = ".ChakraProtoMsg.AttributeProto"
    add("GlobalMetadata", [("version", 1, _F.TYPE_STRING, opt, ""),
                           ("attr", 2, _F.TYPE_MESSAGE, rep, attr)])
    add("Node", [("id", 1, _F.TYPE_UINT64, opt, ""), ("name", 2, _F.TYPE_STRING, opt, ""),
                 ("type", 3, _F.TYPE_INT32, opt, ""),  # an enum on the wire is a varint
                 ("ctrl_deps", 4, _F.TYPE_UINT64, rep, ""),
                 ("data_deps", 5, _F.TYPE_UINT64, rep, ""),
                 ("start_time_micros", 6, _F.TYPE_UINT64, opt, ""),
                 ("duration_micros", 7, _F.TYPE_UINT64, opt, ""),
                 ("attr", 10, _F.TYPE_MESSAGE, rep, attr)])
    # a pool of our own: the default pool may one day hold Chakra's real schema
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    get = message_factory.MessageFactory(pool).GetPrototype
    return tuple(get(pool.FindMessageTypeByName(f"ChakraProtoMsg.{n}"))  # type: ignore
                 for n in ("AttributeProto", "GlobalMetadata", "Node"))


@dataclass(frozen=True)
class TraceNode:
    """One Chakra node, with the attributes this reader uses."""

    id: int
    name: str
    type: int
    deps: tuple[int, ...]
    duration_us: int
    attrs: Mapping[str, int | str | bool]


class ChakraError(ValueError):
    """A trace file that is not a Chakra ET file this reader can use."""


def read_trace(path: Path) -> tuple[str, list[TraceNode]]:
    """The version and nodes of one rank's ET file; ChakraError names the file and offset."""
    _, meta_cls, node_cls = _message_classes()
    data = Path(path).read_bytes()
    pos, records = 0, []
    while pos < len(data):
        try:
            size, start = _read_varint(data, pos)
        except IndexError:
            raise ChakraError(f"{path}: byte {pos}: truncated length prefix") from None
        if start + size > len(data):
            raise ChakraError(f"{path}: byte {pos}: message of {size} B runs past the end")
        records.append((pos, data[start:start + size]))
        pos = start + size
    if not records:
        raise ChakraError(f"{path}: empty file, expected GlobalMetadata then nodes")
    meta = meta_cls()
    try:
        meta.ParseFromString(records[0][1])
        nodes = []
        for offset, payload in records[1:]:
            node = node_cls()
            node.ParseFromString(payload)
            nodes.append(TraceNode(node.id, node.name, node.type,
                                   tuple(node.data_deps) + tuple(node.ctrl_deps),
                                   node.duration_micros, _attrs(node.attr)))
    except Exception as exc:  # protobuf's DecodeError, or a field of the wrong wire type
        raise ChakraError(f"{path}: not a Chakra ET file ({exc})") from None
    return meta.version, nodes


def _attrs(attrs: Iterable) -> dict[str, int | str | bool]:
    """Attributes by name; those of a value type not declared here are left out."""
    out: dict[str, int | str | bool] = {}
    for a in attrs:
        which = a.WhichOneof("value")
        if which:
            out[a.name] = getattr(a, which)
    return out


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_varint(data: bytes, pos: int) -> tuple[int, int]:
    """(value, position after it); IndexError when the bytes end inside it."""
    value = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7


def write_trace(path: Path, nodes: Sequence[TraceNode], version: str = "0.0.4") -> None:
    """One rank's ET file (used by the tests, and to hand a job to other Chakra tools)."""
    attr_cls, meta_cls, node_cls = _message_classes()
    out = bytearray()

    def put(message) -> None:
        payload = message.SerializeToString()
        out.extend(_varint(len(payload)))
        out.extend(payload)

    put(meta_cls(version=version))
    for n in nodes:
        attrs = []
        for name, value in n.attrs.items():
            if isinstance(value, bool):
                attrs.append(attr_cls(name=name, bool_val=value))
            elif isinstance(value, int):
                attrs.append(attr_cls(name=name, int64_val=value))
            else:
                attrs.append(attr_cls(name=name, string_val=str(value)))
        put(node_cls(id=n.id, name=n.name, type=n.type, data_deps=list(n.deps),
                     duration_micros=n.duration_us, attr=attrs))
    Path(path).write_bytes(bytes(out))


def trace_graph(ranks: Sequence[Sequence[TraceNode]],
                groups: Mapping[str, int] | None = None) -> list[Node]:
    """The step graph of the ranks' traces (see the module docstring); ChakraError when a
    dependency or a RECV's SEND is missing."""
    groups = dict(groups or {})
    sends = {}
    for r, nodes in enumerate(ranks):
        for n in nodes:
            if n.type == COMM_SEND_NODE:
                key = (r, int(n.attrs.get("comm_dst", -1)), int(n.attrs.get("comm_tag", 0)))
                sends[key] = f"r{r}/{n.id}"
    recv: dict[str, tuple[str, ...]] = {}  # a RECV: what its dependants wait for instead
    for r, nodes in enumerate(ranks):
        ids = {n.id for n in nodes}
        for n in nodes:
            missing = [d for d in n.deps if d not in ids]
            if missing:
                raise ChakraError(f"rank {r}: node {n.id} ({n.name}) depends on unknown "
                                  f"node {missing[0]}")
            if n.type == COMM_RECV_NODE:
                key = (int(n.attrs.get("comm_src", -1)), r, int(n.attrs.get("comm_tag", 0)))
                if key not in sends:
                    raise ChakraError(f"rank {r}: RECV node {n.id} ({n.name}) has no SEND from "
                                      f"rank {key[0]} with tag {key[2]}")
                recv[f"r{r}/{n.id}"] = (sends[key],) + tuple(f"r{r}/{d}" for d in n.deps)

    def resolve(dep: str, seen: tuple[str, ...] = ()) -> tuple[str, ...]:
        if dep not in recv:
            return (dep,)
        if dep in seen:
            raise ChakraError(f"RECV node {dep} depends on itself")
        return tuple(d for x in recv[dep] for d in resolve(x, seen + (dep,)))

    out = []
    for r, nodes in enumerate(ranks):
        seen: dict[str, int] = {}  # the k-th collective of a process group on this rank
        for n in nodes:
            nid = f"r{r}/{n.id}"
            if nid in recv:
                continue
            deps = tuple(dict.fromkeys(d for dep in n.deps for d in resolve(f"r{r}/{dep}")))
            size = int(n.attrs.get("comm_size", 0))
            if n.type == COMP_NODE:
                out.append(Node(nid, "compute", nid, deps, n.duration_us * 1e-6, rank=r))
            elif n.type == COMM_SEND_NODE:
                out.append(Node(nid, "pp", nid, deps, 0.0, size, 2, r,
                                int(n.attrs.get("comm_dst", -1))))
            elif n.type == COMM_COLL_NODE:
                pg = str(n.attrs.get("pg_name", ""))
                kind = pg[:2] if pg[:2] in COMM_KINDS else (
                    "ep" if n.attrs.get("comm_type") == ALL_TO_ALL else "dp")
                k = seen.get(pg, 0)
                seen[pg] = k + 1
                out.append(Node(nid, kind, nid, deps, 0.0, size, groups.get(pg, len(ranks)), r,
                                instance=f"{pg or kind}#{k}"))
            else:
                out.append(Node(nid, "compute", nid, deps, 0.0, rank=r))
    return out

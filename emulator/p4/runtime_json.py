"""The p4lang tutorials' runtime configuration, ``sN-runtime.json``: read,
checked against a program, and loaded into a
:class:`~emulator.p4.exec.pipeline.V1ModelPipeline` (``aifabric p4 run
--entries``) or handed on as resolved entries (``aifabric exercise`` turns
them into P4Runtime writes).

The format, as the tutorials' ``simple_controller`` reads it:

- top level: ``target`` (``bmv2``), ``p4info`` and ``bmv2_json`` (files, for
  whoever pushes the pipeline), ``table_entries``,
  ``multicast_group_entries``, ``clone_session_entries``;
- a table entry: ``table``, ``action_name``, ``action_params`` (name →
  value), and either ``default_action: true`` (the table's default entry)
  or ``match`` (field → value) with ``priority`` (1 or more; required, and
  only allowed, when the table has ternary, range or optional fields);
- a match value: ``exact`` and ``optional`` take a value or a one-element
  list (``[1]``); ``lpm`` ``[value, prefix_len]``; ``ternary`` ``[value,
  mask]``; ``range`` ``[low, high]``; fields other than exact ones may be
  left out (wildcards, as with P4Runtime);
- a value: an integer, a dotted IPv4 address, an IPv6 address, a MAC
  address, or a string of an integer (``"0x0a"``, ``"10"``, or bare hex);
- ``multicast_group_entries``: ``multicast_group_id`` and ``replicas`` of
  ``egress_port`` and ``instance``; ``clone_session_entries``:
  ``clone_session_id``, ``replicas``, ``packet_length_bytes`` and
  ``class_of_service`` (both 0 when left out).

Table and action names are the full control-plane names or any unique
dotted suffix of them (``ipv4_lpm`` for ``MyIngress.ipv4_lpm``), as the
P4Info aliases the tutorials' helper accepts. Every mistake is one
:class:`~emulator.p4.errors.RuntimeConfigError` line naming the file, the
entry and the key, and what is allowed.
"""

from __future__ import annotations

import ipaddress
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.pipeline import CloneSession, V1ModelPipeline
from emulator.p4.runtime_schema import TableSchema, pipeline_schema, resolve_name

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")
TOP_KEYS = ("target", "p4info", "bmv2_json", "table_entries", "multicast_group_entries",
            "clone_session_entries")
ENTRY_KEYS = ("table", "match", "action_name", "action_params", "priority", "default_action")
GROUP_KEYS = ("multicast_group_id", "replicas")
CLONE_KEYS = ("clone_session_id", "replicas", "packet_length_bytes", "class_of_service")
REPLICA_KEYS = ("egress_port", "instance")
TARGETS = ("bmv2", "builtin")


@dataclass(frozen=True)
class TableEntrySpec:
    """One resolved table entry: full names, ``params`` in the action's
    order, ``match`` in the table's key order (exact/optional: int, None for
    an optional wildcard; lpm: (value, prefix_len); ternary: (value, mask);
    range: (low, high)); ``default`` for the default entry (no match)."""

    where: str
    table: str
    action: str
    params: tuple[int, ...]
    match: tuple[object, ...] = ()
    priority: int = 0
    default: bool = False


@dataclass(frozen=True)
class MulticastGroupSpec:
    group_id: int
    replicas: tuple[tuple[int, int], ...]  # (egress port, instance)


@dataclass(frozen=True)
class CloneSessionSpec:
    session_id: int
    replicas: tuple[tuple[int, int], ...]
    packet_length_bytes: int = 0
    class_of_service: int = 0


@dataclass(frozen=True)
class RuntimeConfig:
    """A checked runtime file; ``p4info`` and ``bmv2_json`` as written (paths
    relative to where the tutorials run, the exercise directory)."""

    source: str
    entries: tuple[TableEntrySpec, ...]
    multicast_groups: tuple[MulticastGroupSpec, ...]
    clone_sessions: tuple[CloneSessionSpec, ...]
    p4info: str | None = None
    bmv2_json: str | None = None


# ---- values ---------------------------------------------------------------------------------
def parse_value(value: Any, width: int, where: str) -> int:
    """A control-plane value as an int that fits ``width`` bits."""
    if isinstance(value, bool):
        number = int(value)
    elif isinstance(value, int):
        number = value
    elif isinstance(value, str):
        number = _parse_string(value.strip(), where)
    else:
        raise RuntimeConfigError(f"{where}: {value!r} is not a number, address or hex string")
    if not 0 <= number < (1 << width):
        raise RuntimeConfigError(f"{where}: {value!r} does not fit in {width} bits")
    return number


def _parse_string(text: str, where: str) -> int:
    if _MAC.match(text):
        return int(re.sub(r"[:-]", "", text), 16)
    try:
        return int(ipaddress.ip_address(text))
    except ValueError:
        pass
    try:
        return int(text, 0)
    except ValueError:
        pass
    if re.fullmatch(r"[0-9a-fA-F]+", text):
        return int(text, 16)
    raise RuntimeConfigError(
        f"{where}: {text!r} is not an integer, IPv4/IPv6 address, MAC address or hex string")


# ---- reading --------------------------------------------------------------------------------
def read_runtime_file(path: str | Path) -> Any:
    """The JSON of a runtime file; one line for a missing file or bad JSON."""
    source = str(path)
    try:
        return json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RuntimeConfigError(f"{source}: no such file") from None
    except IsADirectoryError:
        raise RuntimeConfigError(f"{source}: is a directory, not a runtime JSON file") from None
    except UnicodeDecodeError:
        raise RuntimeConfigError(f"{source}: not a text file") from None
    except json.JSONDecodeError as exc:
        raise RuntimeConfigError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None


def resolve_runtime_config(data: Any, tables: dict[str, TableSchema],
                           source: str = "<runtime>") -> RuntimeConfig:
    """Check ``data`` (a parsed runtime file) against the program's tables."""
    _keys(data, TOP_KEYS, source)
    target = data.get("target", "bmv2")
    if target not in TARGETS:
        raise RuntimeConfigError(f"{source}: target {target!r}: allowed: {', '.join(TARGETS)}")
    files = {}
    for key in ("p4info", "bmv2_json"):
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value):
            raise RuntimeConfigError(f"{source}: {key} must be a file name")
        files[key] = value
    entries = tuple(_table_entry(tables, entry, f"{source}: table_entries[{i}]")
                    for i, entry in enumerate(_list(data, "table_entries", source)))
    groups = []
    for i, group in enumerate(_list(data, "multicast_group_entries", source)):
        where = f"{source}: multicast_group_entries[{i}]"
        _keys(group, GROUP_KEYS, where)
        gid = parse_value(_key(group, "multicast_group_id", where), 16, f"{where}.multicast_group_id")
        groups.append(MulticastGroupSpec(gid, _replicas(group, where)))
    sessions = []
    for i, session in enumerate(_list(data, "clone_session_entries", source)):
        where = f"{source}: clone_session_entries[{i}]"
        _keys(session, CLONE_KEYS, where)
        sid = parse_value(_key(session, "clone_session_id", where), 32, f"{where}.clone_session_id")
        length = parse_value(session.get("packet_length_bytes", 0), 32, f"{where}.packet_length_bytes")
        cos = parse_value(session.get("class_of_service", 0), 32, f"{where}.class_of_service")
        sessions.append(CloneSessionSpec(sid, _replicas(session, where), length, cos))
    return RuntimeConfig(source, entries, tuple(groups), tuple(sessions),
                         files["p4info"], files["bmv2_json"])


def _keys(obj: Any, allowed: tuple[str, ...], where: str) -> None:
    if not isinstance(obj, dict):
        raise RuntimeConfigError(f"{where}: must be an object")
    for key in obj:
        if key not in allowed:
            raise RuntimeConfigError(f"{where}: unknown key {key!r}; allowed: {', '.join(allowed)}")


def _list(data: dict, key: str, source: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise RuntimeConfigError(f"{source}: {key} must be a list")
    return value


def _key(obj: dict, key: str, where: str) -> Any:
    if key not in obj:
        raise RuntimeConfigError(f"{where}: missing key {key!r}")
    return obj[key]


def _replicas(obj: dict, where: str) -> tuple[tuple[int, int], ...]:
    replicas = _key(obj, "replicas", where)
    if not isinstance(replicas, list):
        raise RuntimeConfigError(f"{where}.replicas must be a list")
    out = []
    for j, rep in enumerate(replicas):
        w = f"{where}.replicas[{j}]"
        _keys(rep, REPLICA_KEYS, w)
        port = parse_value(_key(rep, "egress_port", w), 9, f"{w}.egress_port")
        instance = parse_value(rep.get("instance", 0), 16, f"{w}.instance")
        out.append((port, instance))
    return tuple(out)


def _table_entry(tables: dict[str, TableSchema], entry: Any, where: str) -> TableEntrySpec:
    _keys(entry, ENTRY_KEYS, where)
    raw_table = _key(entry, "table", where)
    name = resolve_name(raw_table, tables, where, "table")
    table = tables[name]
    action_name = resolve_name(_key(entry, "action_name", where), table.actions, where,
                               f"action of table {name}", owner=f"table {name} has no action")
    action = table.actions[action_name]
    params = entry.get("action_params", {}) or {}
    if not isinstance(params, dict):
        raise RuntimeConfigError(f"{where}: action_params must be an object")
    unknown = [p for p in params if p not in {n for n, _ in action.params}]
    if unknown:
        raise RuntimeConfigError(
            f"{where}: action {action_name} has no parameter {unknown[0]!r}; "
            f"parameters: {', '.join(p for p, _ in action.params) or 'none'}")
    values = []
    for pname, width in action.params:
        if pname not in params:
            raise RuntimeConfigError(f"{where}: action {action_name} needs parameter {pname!r}")
        values.append(parse_value(params[pname], width, f"{where}: action parameter {pname}"))
    default = entry.get("default_action", False)
    if not isinstance(default, bool):
        raise RuntimeConfigError(f"{where}: default_action must be true or false")
    if default:
        if entry.get("match"):
            raise RuntimeConfigError(f"{where}: a default action has no match")
        if "priority" in entry:
            raise RuntimeConfigError(f"{where}: a default action has no priority")
        if table.const_default:
            raise RuntimeConfigError(f"{where}: table {name} has a const default action")
        if action.scope == "table_only":
            raise RuntimeConfigError(f"{where}: action {action_name} is @tableonly")
        return TableEntrySpec(where, name, action_name, tuple(values), default=True)
    if action.scope == "default_only":
        raise RuntimeConfigError(f"{where}: action {action_name} is @defaultonly")
    if table.const_entries:
        raise RuntimeConfigError(f"{where}: table {name} has const entries")
    match = entry.get("match", {}) or {}
    if not isinstance(match, dict):
        raise RuntimeConfigError(f"{where}: match must be an object")
    known = [k.name for k in table.keys]
    for field_name in match:
        if field_name not in known:
            raise RuntimeConfigError(f"{where}: table {name} has no match field {field_name!r}; "
                                     f"fields: {', '.join(known) or 'none'}")
    key = tuple(_match_value(k.kind, k.width, match.get(k.name), f"{where}: match field {k.name}")
                for k in table.keys)
    return TableEntrySpec(where, name, action_name, tuple(values), key,
                          _priority(entry, table, where))


def _priority(entry: dict, table: TableSchema, where: str) -> int:
    if not table.needs_priority:
        if entry.get("priority", 0):
            raise RuntimeConfigError(f"{where}: table {table.name} has only exact and lpm "
                                     "fields; leave priority out")
        return 0
    if "priority" not in entry:
        raise RuntimeConfigError(f"{where}: table {table.name} needs a priority for each entry "
                                 "(it has ternary, range or optional fields)")
    priority = parse_value(entry["priority"], 31, f"{where}: priority")
    if priority == 0:
        raise RuntimeConfigError(f"{where}: priority must be 1 or more")
    return priority


def _match_value(kind: str, width: int, raw: Any, where: str) -> object:
    full = (1 << width) - 1
    if raw is None:
        wildcard = {"lpm": (0, 0), "ternary": (0, 0), "range": (0, full), "optional": None}
        if kind not in wildcard:
            raise RuntimeConfigError(f"{where}: an exact match field must be given")
        return wildcard[kind]
    if kind in ("exact", "optional"):
        if isinstance(raw, (list, tuple)):
            if len(raw) != 1:
                raise RuntimeConfigError(f"{where}: {kind} match is a value or [value]")
            raw = raw[0]
        return parse_value(raw, width, where)
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        shape = {"lpm": "[value, prefix_len]", "ternary": "[value, mask]", "range": "[low, high]"}
        raise RuntimeConfigError(f"{where}: {kind} match must be {shape.get(kind, 'a pair')}")
    if kind == "lpm":
        plen = raw[1]
        if isinstance(plen, bool) or not isinstance(plen, int) or not 0 <= plen <= width:
            raise RuntimeConfigError(f"{where}: prefix length must be an integer in 0..{width}")
        mask = full ^ (full >> plen)
        return (parse_value(raw[0], width, where) & mask, plen)
    first, second = parse_value(raw[0], width, where), parse_value(raw[1], width, where)
    if kind == "ternary":
        return (first & second, second)
    if first > second:
        raise RuntimeConfigError(f"{where}: range low {raw[0]!r} is above high {raw[1]!r}")
    return (first, second)


# ---- into a pipeline --------------------------------------------------------------------------
def load_runtime_file(pipeline: V1ModelPipeline, path: str | Path) -> RuntimeConfig:
    """Read a runtime file and load it into ``pipeline``."""
    return apply_runtime_config(pipeline, read_runtime_file(path), str(path))


def apply_runtime_config(pipeline: V1ModelPipeline, data: Any,
                         source: str = "<runtime>") -> RuntimeConfig:
    """Check ``data`` against ``pipeline`` and load it: entries, default
    entries, multicast groups, clone sessions."""
    config = resolve_runtime_config(data, pipeline_schema(pipeline), source)
    for spec in config.entries:
        table = pipeline.tables[spec.table]
        try:
            if spec.default:
                table.set_default(table.make_entry(spec.action, spec.params, hit=False))
                continue
            entry = table.make_entry(spec.action, spec.params, table.canonical_key(spec.match),
                                     spec.priority)
            table.insert(entry)
        except RuntimeConfigError as exc:
            raise RuntimeConfigError(f"{spec.where}: {exc}") from None
    for group in config.multicast_groups:
        pipeline.set_multicast_group(group.group_id, list(group.replicas))
    for session in config.clone_sessions:
        pipeline.set_clone_session(session.session_id, CloneSession(
            list(session.replicas), session.packet_length_bytes, session.class_of_service))
    return config

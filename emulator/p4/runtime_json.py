"""Loads a runtime configuration in the p4lang tutorials' ``sN-runtime.json``
format into a :class:`~emulator.p4.exec.pipeline.V1ModelPipeline`.

Keys used: ``table_entries`` (``table``, ``match``, ``action_name``,
``action_params``, ``priority``, ``default_action``),
``multicast_group_entries`` (``multicast_group_id``, ``replicas`` of
``egress_port``/``instance``) and ``clone_session_entries``
(``clone_session_id``, ``replicas``, ``packet_length_bytes``). Other keys of
the tutorials' files (``target``, ``p4info``, ``bmv2_json``) are ignored.

Match values: an integer, a dotted IPv4 address, an IPv6 address, a MAC
address, or a string of an integer (``"0x0a"``, ``"10"``); ``lpm`` takes
``[value, prefix_len]``, ``ternary`` ``[value, mask]``, ``range``
``[low, high]``; ``ternary``, ``lpm``, ``range`` and ``optional`` fields left
out of ``match`` are wildcards, as with P4Runtime.
"""

from __future__ import annotations

import ipaddress
import json
import re
from pathlib import Path
from typing import Any

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.pipeline import CloneSession, V1ModelPipeline

_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-][0-9a-fA-F]{2}){5}$")


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


def load_runtime_file(pipeline: V1ModelPipeline, path: str | Path) -> None:
    source = str(path)
    try:
        data = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise RuntimeConfigError(f"{source}: no such file") from None
    except json.JSONDecodeError as exc:
        raise RuntimeConfigError(f"{source}:{exc.lineno}:{exc.colno}: invalid JSON: {exc.msg}") from None
    apply_runtime_config(pipeline, data, source)


def apply_runtime_config(pipeline: V1ModelPipeline, data: Any, source: str = "<runtime>") -> None:
    if not isinstance(data, dict):
        raise RuntimeConfigError(f"{source}: the top level must be an object")
    for i, entry in enumerate(_list(data, "table_entries", source)):
        _table_entry(pipeline, entry, f"{source}: table_entries[{i}]")
    for i, group in enumerate(_list(data, "multicast_group_entries", source)):
        where = f"{source}: multicast_group_entries[{i}]"
        gid = parse_value(_key(group, "multicast_group_id", where), 16, f"{where}.multicast_group_id")
        pipeline.set_multicast_group(gid, _replicas(group, where))
    for i, session in enumerate(_list(data, "clone_session_entries", source)):
        where = f"{source}: clone_session_entries[{i}]"
        sid = parse_value(_key(session, "clone_session_id", where), 32, f"{where}.clone_session_id")
        length = parse_value(session.get("packet_length_bytes", 0), 32, f"{where}.packet_length_bytes")
        cos = parse_value(session.get("class_of_service", 0), 32, f"{where}.class_of_service")
        pipeline.set_clone_session(sid, CloneSession(_replicas(session, where), length, cos))


def _list(data: dict, key: str, source: str) -> list:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise RuntimeConfigError(f"{source}: {key} must be a list")
    return value


def _key(obj: Any, key: str, where: str) -> Any:
    if not isinstance(obj, dict):
        raise RuntimeConfigError(f"{where}: must be an object")
    if key not in obj:
        raise RuntimeConfigError(f"{where}: missing key {key!r}")
    return obj[key]


def _replicas(obj: dict, where: str) -> list[tuple[int, int]]:
    out = []
    for j, rep in enumerate(_key(obj, "replicas", where)):
        w = f"{where}.replicas[{j}]"
        port = parse_value(_key(rep, "egress_port", w), 9, f"{w}.egress_port")
        instance = parse_value(rep.get("instance", 0), 16, f"{w}.instance")
        out.append((port, instance))
    return out


def _table_entry(pipeline: V1ModelPipeline, entry: Any, where: str) -> None:
    name = _key(entry, "table", where)
    table = pipeline.tables.get(name)
    if table is None:
        raise RuntimeConfigError(
            f"{where}: unknown table {name!r}; tables: {', '.join(sorted(pipeline.tables)) or 'none'}")
    action_name = _key(entry, "action_name", where)
    if action_name not in table.actions:
        raise RuntimeConfigError(
            f"{where}: table {name} has no action {action_name!r}; allowed: "
            f"{', '.join(sorted(table.actions))}")
    spec = table.actions[action_name]
    params = entry.get("action_params", {}) or {}
    if not isinstance(params, dict):
        raise RuntimeConfigError(f"{where}: action_params must be an object")
    unknown = set(params) - {p for p, _ in spec.params}
    if unknown:
        raise RuntimeConfigError(
            f"{where}: action {action_name} has no parameter {sorted(unknown)[0]!r}; "
            f"parameters: {', '.join(p for p, _ in spec.params) or 'none'}")
    values = []
    for pname, width in spec.params:
        if pname not in params:
            raise RuntimeConfigError(f"{where}: action {action_name} needs parameter {pname!r}")
        values.append(parse_value(params[pname], width, f"{where}: action parameter {pname}"))
    if entry.get("default_action"):
        if table.default_const:
            raise RuntimeConfigError(f"{where}: table {name} has a const default action")
        if spec.scope == "table_only":
            raise RuntimeConfigError(f"{where}: action {action_name} is @tableonly")
        table.set_default(table.make_entry(action_name, values, hit=False))
        return
    if spec.scope == "default_only":
        raise RuntimeConfigError(f"{where}: action {action_name} is @defaultonly")
    if table.const_entries:
        raise RuntimeConfigError(f"{where}: table {name} has const entries")
    match = entry.get("match", {}) or {}
    if not isinstance(match, dict):
        raise RuntimeConfigError(f"{where}: match must be an object")
    known = {k.name for k in table.keys}
    for field in match:
        if field not in known:
            raise RuntimeConfigError(
                f"{where}: table {name} has no match field {field!r}; fields: {', '.join(sorted(known))}")
    key = []
    for spec_k in table.keys:
        fw = f"{where}: match field {spec_k.name}"
        raw = match.get(spec_k.name)
        key.append(_match_value(spec_k.match_kind, spec_k.width, raw, fw))
    priority = entry.get("priority", 0)
    if table.needs_priority and "priority" not in entry:
        raise RuntimeConfigError(f"{where}: table {name} needs a priority for each entry")
    priority = parse_value(priority, 32, f"{where}: priority")
    canonical = table.canonical_key(key)
    table.insert(table.make_entry(action_name, values, canonical,
                                  priority if table.needs_priority else 0))


def _match_value(kind: str, width: int, raw: Any, where: str) -> object:
    full = (1 << width) - 1
    if raw is None:
        wildcard = {"lpm": (0, 0), "ternary": (0, 0), "range": (0, full), "optional": None}
        if kind not in wildcard:
            raise RuntimeConfigError(f"{where}: an exact match field must be given")
        return wildcard[kind]
    if kind in ("exact", "optional"):
        return parse_value(raw, width, where)
    if not isinstance(raw, (list, tuple)) or len(raw) != 2:
        shape = {"lpm": "[value, prefix_len]", "ternary": "[value, mask]", "range": "[low, high]"}
        raise RuntimeConfigError(f"{where}: {kind} match must be {shape.get(kind, 'a pair')}")
    if kind == "lpm":
        plen = raw[1]
        if not isinstance(plen, int) or not 0 <= plen <= width:
            raise RuntimeConfigError(f"{where}: prefix length must be an integer in 0..{width}")
        return (parse_value(raw[0], width, where), plen)
    return (parse_value(raw[0], width, where), parse_value(raw[1], width, where))

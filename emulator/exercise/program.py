"""Programming one switch from its ``sN-runtime.json`` over P4Runtime, as
the tutorials' ``simple_controller.program_switch`` does: become primary
(election id 1), ``SetForwardingPipelineConfig`` with the file's ``p4info``
and ``bmv2_json`` (paths relative to the exercise directory), then the
table entries (default entries as MODIFY, the others as INSERT), multicast
groups and clone sessions. The requests are written as text to
``logs/sN-p4runtime-requests.txt``, as the tutorials log them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emulator.control.client import P4RuntimeError, SwitchClient
from emulator.exercise.errors import ExerciseError
from emulator.p4.errors import RuntimeConfigError
from emulator.p4.p4info.bytestrings import encode_uint
from emulator.p4.p4info.index import P4InfoError, P4InfoIndex
from emulator.p4.runtime_json import (
    RuntimeConfig, TableEntrySpec, read_runtime_file, resolve_runtime_config,
)
from emulator.p4.runtime_schema import p4info_schema

INSERT, MODIFY = p4runtime_pb2.Update.INSERT, p4runtime_pb2.Update.MODIFY


@dataclass(frozen=True)
class Programmed:
    switch: str
    runtime_json: str
    entries: int
    groups: int
    clone_sessions: int


def read_p4info(path: Path, where: str) -> p4info_pb2.P4Info:
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise ExerciseError(f"{where}: p4info {path}: no such file") from None
    try:
        return text_format.Parse(text, p4info_pb2.P4Info(), allow_unknown_field=True)
    except text_format.ParseError as exc:
        raise ExerciseError(f"{where}: p4info {path}: not a P4Info text file: {exc}") from None


def load_switch_config(runtime_path: Path, directory: Path
                       ) -> tuple[RuntimeConfig, p4info_pb2.P4Info, bytes]:
    """The checked runtime file, its P4Info and its device config."""
    where = str(runtime_path)
    data = read_runtime_file(runtime_path)
    for key in ("p4info", "bmv2_json"):
        if not isinstance(data, dict) or not data.get(key):
            raise ExerciseError(f"{where}: missing key {key!r} (the program's "
                                f"{'P4Info' if key == 'p4info' else 'compiled JSON'})")
    p4info = read_p4info(directory / data["p4info"], where)
    try:
        index = P4InfoIndex(p4info)
    except P4InfoError as exc:
        raise ExerciseError(f"{where}: p4info {data['p4info']}: {exc}") from None
    config = resolve_runtime_config(data, p4info_schema(index), where)
    device_path = directory / data["bmv2_json"]
    try:
        device_config = device_path.read_bytes()
    except FileNotFoundError:
        raise ExerciseError(f"{where}: bmv2_json {data['bmv2_json']}: no such file") from None
    return config, p4info, device_config


def runtime_updates(config: RuntimeConfig, index: P4InfoIndex
                    ) -> tuple[list[p4runtime_pb2.Update], list[str]]:
    """The P4Runtime updates of a runtime config, and for each the entry of
    the file it comes from."""
    tables = {t.name: t for t in index.tables.values()}
    actions = {a.name: a for a in index.actions.values()}
    updates, origins = [], []
    for spec in config.entries:
        update = p4runtime_pb2.Update(type=MODIFY if spec.default else INSERT)
        _table_entry(update.entity.table_entry, spec, tables[spec.table], actions[spec.action])
        updates.append(update)
        origins.append(spec.where)
    for i, group in enumerate(config.multicast_groups):
        update = p4runtime_pb2.Update(type=INSERT)
        entry = update.entity.packet_replication_engine_entry.multicast_group_entry
        entry.multicast_group_id = group.group_id
        for port, instance in group.replicas:
            entry.replicas.add(egress_port=port, instance=instance)
        updates.append(update)
        origins.append(f"{config.source}: multicast_group_entries[{i}]")
    for i, session in enumerate(config.clone_sessions):
        update = p4runtime_pb2.Update(type=INSERT)
        entry = update.entity.packet_replication_engine_entry.clone_session_entry
        entry.session_id = session.session_id
        entry.packet_length_bytes = session.packet_length_bytes
        entry.class_of_service = session.class_of_service
        for port, instance in session.replicas:
            entry.replicas.add(egress_port=port, instance=instance)
        updates.append(update)
        origins.append(f"{config.source}: clone_session_entries[{i}]")
    return updates, origins


def _table_entry(te: p4runtime_pb2.TableEntry, spec: TableEntrySpec, table, action) -> None:  # type: ignore[no-untyped-def]
    te.table_id = table.id
    te.action.action.action_id = action.id
    for param, value in zip(action.params, spec.params):
        te.action.action.params.add(param_id=param.id, value=encode_uint(value))
    if spec.default:
        te.is_default_action = True
        return
    for field, value in zip(table.match_fields, spec.match):
        full = (1 << field.bitwidth) - 1
        if field.kind == "exact":
            te.match.add(field_id=field.id).exact.value = encode_uint(value)
        elif field.kind == "optional" and value is not None:
            te.match.add(field_id=field.id).optional.value = encode_uint(value)
        elif field.kind == "lpm" and value[1]:
            m = te.match.add(field_id=field.id)
            m.lpm.value, m.lpm.prefix_len = encode_uint(value[0]), value[1]
        elif field.kind == "ternary" and value[1]:
            m = te.match.add(field_id=field.id)
            m.ternary.value, m.ternary.mask = encode_uint(value[0]), encode_uint(value[1])
        elif field.kind == "range" and value != (0, full):
            m = te.match.add(field_id=field.id)
            m.range.low, m.range.high = encode_uint(value[0]), encode_uint(value[1])
    te.priority = spec.priority


def program_switch(name: str, address: str, device_id: int, runtime_path: Path,
                   directory: Path, log_path: Path | None = None) -> Programmed:
    """Push the pipeline and the entries of ``runtime_path`` to one switch."""
    try:
        config, p4info, device_config = load_switch_config(runtime_path, directory)
    except RuntimeConfigError as exc:
        raise ExerciseError(str(exc)) from None
    updates, origins = runtime_updates(config, P4InfoIndex(p4info))
    if log_path is not None:
        _log_requests(log_path, name, runtime_path, updates)
    client = SwitchClient(name, address, device_id, election_id=(0, 1))
    try:
        client.connect()
        client.set_pipeline(p4info, device_config)
        try:
            client.write(updates, batch=max(1, len(updates)))
        except P4RuntimeError as exc:
            if not exc.details:
                raise
            index, code, message = exc.details[0]
            more = f" (and {len(exc.details) - 1} more)" if len(exc.details) > 1 else ""
            raise ExerciseError(f"{origins[index]}: switch {name} refused it: {code}: "
                                f"{message}{more}") from None
    except P4RuntimeError as exc:
        raise ExerciseError(f"{runtime_path}: {str(exc).splitlines()[0]}") from None
    finally:
        client.close()
    return Programmed(name, str(runtime_path), len(config.entries), len(config.multicast_groups),
                      len(config.clone_sessions))


def _log_requests(path: Path, name: str, runtime_path: Path,
                  updates: list[p4runtime_pb2.Update]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as out:
        out.write(f"# {name}: SetForwardingPipelineConfig and {len(updates)} writes "
                  f"from {runtime_path}\n")
        for update in updates:
            out.write("---\n" + text_format.MessageToString(update))

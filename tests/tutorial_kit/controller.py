"""A P4Runtime controller connection as the p4lang tutorials' tests and
controllers make one, written for aifabric's tests: one ``StreamChannel``
per connection with election id 1, the pipeline sent inside a
``p4.tmp.P4DeviceConfig`` (``reassign`` set), table entries built from the
P4Info's names with values padded to their bit width, and a close that
only half-closes the stream and returns at once (the next test connects
right away with the same election id).
"""

from __future__ import annotations

import ipaddress
import queue
import re
import threading
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from tests.tutorial_kit.p4config_pb import wrap

_MAC = re.compile(r"^([0-9a-fA-F]{2}:){5}[0-9a-fA-F]{2}$")
SetConfig = p4runtime_pb2.SetForwardingPipelineConfigRequest
MatchType = p4info_pb2.MatchField


def encode(value: Any, bitwidth: int) -> bytes:
    """An int, a dotted IPv4 address or a MAC address as ceil(bitwidth/8)
    big-endian bytes (the tutorials pad; P4Runtime servers accept it)."""
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, str):
        value = int(value.replace(":", ""), 16) if _MAC.match(value) else int(
            ipaddress.IPv4Address(value))
    if not 0 <= value < (1 << bitwidth):
        raise ValueError(f"{value} does not fit in {bitwidth} bits")
    return value.to_bytes((bitwidth + 7) // 8, "big")


class P4InfoNames:
    """Name lookups in a P4Info text file."""

    def __init__(self, path: str | Path) -> None:
        self.p4info = text_format.Parse(Path(path).read_text(), p4info_pb2.P4Info())

    def _find(self, kind: str, name: str):  # type: ignore[no-untyped-def]
        for obj in getattr(self.p4info, kind):
            if name in (obj.preamble.name, obj.preamble.alias):
                return obj
        raise KeyError(f"no {kind} {name!r} in the P4Info")

    def table(self, name: str) -> p4info_pb2.Table:
        return self._find("tables", name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._find("actions", name)

    def counter(self, name: str) -> p4info_pb2.Counter:
        return self._find("counters", name)

    def table_entry(self, table: str, action: str, params: dict | None = None,
                    match: dict | None = None, default: bool = False,
                    priority: int | None = None) -> p4runtime_pb2.TableEntry:
        info = self.table(table)
        entry = p4runtime_pb2.TableEntry(table_id=info.preamble.id)
        fields = {f.name: f for f in info.match_fields}
        for name, value in (match or {}).items():
            field = fields[name]
            m = entry.match.add(field_id=field.id)
            if field.match_type == MatchType.EXACT:
                m.exact.value = encode(value, field.bitwidth)
            elif field.match_type == MatchType.LPM:
                m.lpm.value, m.lpm.prefix_len = encode(value[0], field.bitwidth), value[1]
            elif field.match_type == MatchType.TERNARY:
                m.ternary.value = encode(value[0], field.bitwidth)
                m.ternary.mask = encode(value[1], field.bitwidth)
            else:
                raise ValueError(f"match kind {field.match_type} not supported here")
        act = self.action(action)
        entry.action.action.action_id = act.preamble.id
        by_name = {p.name: p for p in act.params}
        for name, value in (params or {}).items():
            entry.action.action.params.add(param_id=by_name[name].id,
                                           value=encode(value, by_name[name].bitwidth))
        if default:
            entry.is_default_action = True
        if priority is not None:
            entry.priority = priority
        return entry


class Connection:
    """One controller connection to a switch."""

    def __init__(self, address: str, device_id: int = 0, election_id: int = 1) -> None:
        self.device_id = device_id
        self.election_id = p4runtime_pb2.Uint128(high=0, low=election_id)
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._requests: queue.Queue = queue.Queue()
        self._arbitration: queue.Queue = queue.Queue()
        self._stream = self.stub.StreamChannel(iter(self._requests.get, None))
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for message in self._stream:
                if message.HasField("arbitration"):
                    self._arbitration.put(message.arbitration)
        except grpc.RpcError as exc:
            self._arbitration.put(exc)

    def arbitrate(self, timeout_s: float = 10.0) -> p4runtime_pb2.MasterArbitrationUpdate:
        """Ask to be primary; the switch's answer (raises if the stream ended)."""
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = self.device_id
        request.arbitration.election_id.CopyFrom(self.election_id)
        self._requests.put(request)
        answer = self._arbitration.get(timeout=timeout_s)
        if isinstance(answer, grpc.RpcError):
            raise answer
        return answer

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config_path: str | Path) -> None:
        request = SetConfig(device_id=self.device_id, action=SetConfig.VERIFY_AND_COMMIT)
        request.election_id.CopyFrom(self.election_id)
        request.config.p4info.CopyFrom(p4info)
        request.config.p4_device_config = wrap(Path(device_config_path).read_bytes())
        self.stub.SetForwardingPipelineConfig(request)

    def write(self, entry: p4runtime_pb2.TableEntry) -> None:
        """INSERT an entry, MODIFY a default entry (as the tutorials do)."""
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        request.election_id.CopyFrom(self.election_id)
        update = request.updates.add()
        update.type = p4runtime_pb2.Update.MODIFY if entry.is_default_action else \
            p4runtime_pb2.Update.INSERT
        update.entity.table_entry.CopyFrom(entry)
        self.stub.Write(request)

    def read_counter(self, counter_id: int, index: int) -> tuple[int, int]:
        """(packets, bytes) of one cell of an indexed counter."""
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id)
        entry = request.entities.add().counter_entry
        entry.counter_id = counter_id
        entry.index.index = index
        for response in self.stub.Read(request):
            for entity in response.entities:
                data = entity.counter_entry.data
                return data.packet_count, data.byte_count
        raise LookupError(f"counter {counter_id}[{index}] not read")

    def close(self) -> None:
        """Half-close the stream and return without waiting."""
        self._requests.put(None)

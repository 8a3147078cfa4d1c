"""The Mininet CLI of ``aifabric exercise``: Mininet's commands (``h1 ping
h2``, ``xterm h1``, ``pingall``) and aifabric's ``queues``, ``pfc`` and
``capture`` (:class:`~.fabric_cli.NetworkCLI`), plus ``counters SWITCH``:
the counters of whatever program the switch runs now, read over P4Runtime
(the P4Info from ``GetForwardingPipelineConfig``, so a program pushed by
the exercise's own controller is read as well)."""

from __future__ import annotations

from typing import Any

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emulator.cli.fabric_cli import NetworkCLI

GetConfig = p4runtime_pb2.GetForwardingPipelineConfigRequest
READ_TIMEOUT_S = 10.0


def counter_lines(address: str, device_id: int) -> list[str]:
    """One line per counter cell (indexed counters) or table entry (direct
    counters) that counted something."""
    with grpc.insecure_channel(address) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        config = stub.GetForwardingPipelineConfig(
            GetConfig(device_id=device_id, response_type=GetConfig.P4INFO_AND_COOKIE),
            timeout=READ_TIMEOUT_S).config
        if not config.HasField("p4info"):
            return ["no program"]
        request = p4runtime_pb2.ReadRequest(device_id=device_id)
        names = {}
        for counter in config.p4info.counters:
            request.entities.add().counter_entry.counter_id = counter.preamble.id
            names[counter.preamble.id] = counter.preamble.name
        tables = {t.preamble.id: t.preamble.name for t in config.p4info.tables}
        for direct in config.p4info.direct_counters:
            request.entities.add().direct_counter_entry.table_entry.table_id = direct.direct_table_id
        if not request.entities:
            return ["the program has no counters"]
        lines = []
        for response in stub.Read(request, timeout=READ_TIMEOUT_S):
            for entity in response.entities:
                kind = entity.WhichOneof("entity")
                if kind == "counter_entry":
                    entry = entity.counter_entry
                    where = f"{names.get(entry.counter_id, entry.counter_id)}[{entry.index.index}]"
                else:
                    entry = entity.direct_counter_entry
                    table = entry.table_entry
                    where = (f"{tables.get(table.table_id, table.table_id)} entry "
                             f"{_match_text(table)}")
                if entry.data.packet_count or entry.data.byte_count:
                    lines.append(f"{where}: packets={entry.data.packet_count} "
                                 f"bytes={entry.data.byte_count}")
        return lines or ["all counters are zero"]


def _match_text(entry: p4runtime_pb2.TableEntry) -> str:
    if entry.is_default_action:
        return "(default)"
    parts = []
    for m in entry.match:
        kind = m.WhichOneof("field_match_type")
        value = getattr(m, kind)
        if kind == "lpm":
            parts.append(f"{value.value.hex()}/{value.prefix_len}")
        elif kind == "ternary":
            parts.append(f"{value.value.hex()}&&&{value.mask.hex()}")
        elif kind == "range":
            parts.append(f"{value.low.hex()}..{value.high.hex()}")
        else:
            parts.append(value.value.hex())
    return "(" + ", ".join(parts) + ")"


class ExerciseCLI(NetworkCLI):
    """The CLI over an :class:`~emulator.exercise.session.ExerciseSession`."""

    def __init__(self, session: Any, **kwargs: Any) -> None:
        self.session = session
        super().__init__(session.network, [s.name for s in session.topology.switches], **kwargs)

    def do_counters(self, line: str) -> None:
        """counters SWITCH: the P4 program's counters that are not zero."""
        name = self._switch(line)
        if name is None:
            return
        address = self.network.switch_addresses()[name]
        try:
            lines = counter_lines(address, self.network.device_ids()[name])
        except grpc.RpcError as exc:
            lines = [f"cannot read counters of {name}: {exc.code().name}: {exc.details()}"]
        for text in lines:
            self.stdout.write(text + "\n")

"""A P4Runtime client for one switch: the gRPC channel, the stream with
master arbitration, pipeline push, batched writes and streaming reads.

Errors come back as :class:`P4RuntimeError`, one readable line per failed
update (the ``p4.v1.Error`` details of a Write), like p4runtime-shell's
``P4RuntimeWriteException``. No module state: make one client per switch.
"""

from __future__ import annotations

import queue
import threading
from typing import Any, Iterable, Iterator

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

DEFAULT_TIMEOUT_S = 10.0


class P4RuntimeError(Exception):
    """A failed P4Runtime call; ``details`` lists (update index, code name,
    message) of the updates that failed."""

    exit_code = 1

    def __init__(self, switch: str, what: str, code: str, message: str,
                 details: list[tuple[int, str, str]] | None = None) -> None:
        self.switch, self.what, self.code, self.details = switch, what, code, details or []
        lines = [f"{switch}: {what} failed: {code}: {message}"]
        for index, dcode, dmsg in self.details:
            lines.append(f"  update {index}: {dcode}: {dmsg}")
        super().__init__("\n".join(lines))


def _error(switch: str, what: str, exc: grpc.RpcError) -> P4RuntimeError:
    code = exc.code().name if exc.code() else "UNKNOWN"
    details: list[tuple[int, str, str]] = []
    for key, value in exc.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for i, any_msg in enumerate(status.details):
            err = p4runtime_pb2.Error()
            if any_msg.Unpack(err) and err.canonical_code != code_pb2.OK:
                details.append((i, code_pb2.Code.Name(err.canonical_code), err.message))
    return P4RuntimeError(switch, what, code, exc.details() or "", details)


class SwitchClient:
    """Connects to one switch as primary controller (highest election id)."""

    def __init__(self, name: str, address: str, device_id: int = 0,
                 election_id: tuple[int, int] = (0, 1), timeout_s: float = DEFAULT_TIMEOUT_S,
                 *, stub: Any | None = None) -> None:
        self.name = name
        self.address = address
        self.device_id = device_id
        self.election_id = p4runtime_pb2.Uint128(high=election_id[0], low=election_id[1])
        self.timeout_s = timeout_s
        # ``stub``: anything with the P4Runtime stub's methods, e.g. a server
        # in this process (the virtual-time target); no channel then.
        self._channel = None if stub is not None else grpc.insecure_channel(address)
        self.stub = stub if stub is not None else p4runtime_pb2_grpc.P4RuntimeStub(self._channel)
        self._outgoing: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self.packet_ins: queue.Queue[p4runtime_pb2.PacketIn] = queue.Queue()
        self.digests: queue.Queue[p4runtime_pb2.DigestList] = queue.Queue()
        self._arbitration: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate] = queue.Queue()
        self._stream: Iterator[p4runtime_pb2.StreamMessageResponse] | None = None
        self._reader: threading.Thread | None = None
        self.p4info: p4info_pb2.P4Info | None = None

    # ---- connection ---------------------------------------------------------------
    def connect(self) -> None:
        """Open the stream and become primary; raises if another controller is."""
        if self._channel is not None:
            try:
                grpc.channel_ready_future(self._channel).result(timeout=self.timeout_s)
            except grpc.FutureTimeoutError:
                raise P4RuntimeError(self.name, "connect", "UNAVAILABLE",
                                     f"no P4Runtime server at {self.address}") from None
        self._stream = self.stub.StreamChannel(iter(self._outgoing.get, None))
        self._reader = threading.Thread(target=self._read_stream, name=f"p4rt-{self.name}",
                                        daemon=True)
        self._reader.start()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.CopyFrom(self.election_id)
        self._outgoing.put(req)
        try:
            update = self._arbitration.get(timeout=self.timeout_s)
        except queue.Empty:
            raise P4RuntimeError(self.name, "arbitration", "DEADLINE_EXCEEDED",
                                 "no answer to the arbitration request") from None
        if update.status.code != code_pb2.OK:
            raise P4RuntimeError(self.name, "arbitration", code_pb2.Code.Name(update.status.code),
                                 update.status.message or "not primary")

    def _read_stream(self) -> None:
        assert self._stream is not None
        try:
            for msg in self._stream:
                kind = msg.WhichOneof("update")
                if kind == "arbitration":
                    self._arbitration.put(msg.arbitration)
                elif kind == "packet":
                    self.packet_ins.put(msg.packet)
                elif kind == "digest":
                    self.digests.put(msg.digest)
                    self._ack_digest(msg.digest)
        except grpc.RpcError:
            return

    def _ack_digest(self, digest: p4runtime_pb2.DigestList) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.digest_ack.digest_id = digest.digest_id
        req.digest_ack.list_id = digest.list_id
        self._outgoing.put(req)

    def close(self) -> None:
        self._outgoing.put(None)
        if self._channel is not None:
            self._channel.close()
        if self._reader is not None:
            self._reader.join(timeout=2)

    def __enter__(self) -> "SwitchClient":
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- RPCs --------------------------------------------------------------------------
    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int = 0) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest()
        req.device_id = self.device_id
        req.election_id.CopyFrom(self.election_id)
        req.action = p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        try:
            self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout_s * 6)
        except grpc.RpcError as exc:
            raise _error(self.name, "SetForwardingPipelineConfig", exc) from None
        self.p4info = p4info

    def write(self, updates: Iterable[p4runtime_pb2.Update], batch: int = 500) -> int:
        """Write updates in batches; returns how many were written."""
        pending = list(updates)
        for start in range(0, len(pending), batch):
            req = p4runtime_pb2.WriteRequest()
            req.device_id = self.device_id
            req.election_id.CopyFrom(self.election_id)
            req.atomicity = p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR
            req.updates.extend(pending[start:start + batch])
            try:
                self.stub.Write(req, timeout=self.timeout_s)
            except grpc.RpcError as exc:
                raise _error(self.name, "Write", exc) from None
        return len(pending)

    def read(self, entities: Iterable[p4runtime_pb2.Entity]) -> Iterator[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest()
        req.device_id = self.device_id
        req.entities.extend(entities)
        try:
            for resp in self.stub.Read(req, timeout=self.timeout_s):
                yield from resp.entities
        except grpc.RpcError as exc:
            raise _error(self.name, "Read", exc) from None

    def packet_out(self, payload: bytes, metadata: Iterable[tuple[int, bytes]] = ()) -> None:
        req = p4runtime_pb2.StreamMessageRequest()
        req.packet.payload = payload
        for mid, value in metadata:
            m = req.packet.metadata.add()
            m.metadata_id = mid
            m.value = value
        self._outgoing.put(req)

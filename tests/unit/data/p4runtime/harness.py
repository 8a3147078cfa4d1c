"""An in-process P4Runtime server on 127.0.0.1 (port 0) over a FakeDevice,
and small clients for the tests: a stream client, write/read helpers and the
per-update errors of a failed batch."""

from __future__ import annotations

import queue
import threading
from concurrent import futures

import grpc
from google.protobuf import text_format
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emulator.targets.p4runtime import FakeDevice, add_p4runtime_service
from tests.unit.data.p4runtime.programs import DATA, load_device_config

SetConfig = p4runtime_pb2.SetForwardingPipelineConfigRequest


def p4info(name: str) -> p4info_pb2.P4Info:
    return text_format.Parse((DATA / f"{name}.p4info.txtpb").read_text(), p4info_pb2.P4Info())


def entity(text: str) -> p4runtime_pb2.Entity:
    return text_format.Parse(text, p4runtime_pb2.Entity())


def update(kind: str, text: str) -> p4runtime_pb2.Update:
    return p4runtime_pb2.Update(type=p4runtime_pb2.Update.Type.Value(kind), entity=entity(text))


def batch_errors(error: grpc.RpcError) -> list[tuple[str, str]]:
    """(code name, message) per update of a failed Write/Read batch."""
    assert error.code() == grpc.StatusCode.UNKNOWN, error
    for key, value in error.trailing_metadata():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for detail in status.details:
                e = p4runtime_pb2.Error()
                assert detail.Unpack(e)
                out.append((code_pb2.Code.Name(e.canonical_code), e.message))
            return out
    raise AssertionError("no grpc-status-details-bin trailer")


class StreamClient:
    """One StreamChannel: ``send`` requests, ``get`` responses by kind."""

    def __init__(self, stub: p4runtime_pb2_grpc.P4RuntimeStub) -> None:
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self.error: grpc.RpcError | None = None
        self.call = stub.StreamChannel(iter(self._requests.get, None))
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for response in self.call:
                self._responses.put(response)
        except grpc.RpcError as exc:
            self.error = exc
        self._responses.put(None)

    def send(self, request: p4runtime_pb2.StreamMessageRequest | None) -> None:
        """Queue a request; None closes our side of the stream."""
        self._requests.put(request)

    def arbitrate(self, device_id: int = 1, election: tuple[int, int] | None = (0, 1),
                  role: str | None = None, timeout: float = 3.0
                  ) -> p4runtime_pb2.MasterArbitrationUpdate | None:
        request = p4runtime_pb2.StreamMessageRequest()
        request.arbitration.device_id = device_id
        if election is not None:
            request.arbitration.election_id.high, request.arbitration.election_id.low = election
        if role is not None:
            request.arbitration.role.name = role
        self.send(request)
        response = self.get("arbitration", timeout)
        return None if response is None else response.arbitration

    def get(self, kind: str | None = None, timeout: float = 3.0):  # type: ignore[no-untyped-def]
        """Next response (of ``kind``: "arbitration", "packet", "digest",
        "error"); None when the stream ended or nothing came in time."""
        while True:
            try:
                response = self._responses.get(timeout=timeout)
            except queue.Empty:
                return None
            if response is None:
                self._responses.put(None)
                return None
            if kind is None or response.WhichOneof("update") == kind:
                return response

    def ended(self, timeout: float = 3.0) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def close(self) -> None:
        self._requests.put(None)
        self._thread.join(timeout=5)


class Switch:
    """FakeDevice + P4Runtime server + a client stub."""

    def __init__(self, device_id: int = 1, cpu_port: int | None = None,
                 sticky: bool = False, loader=load_device_config) -> None:  # type: ignore[no-untyped-def]
        self.device_id = device_id
        self.device = FakeDevice(cpu_port)
        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=32))
        self.servicer = add_p4runtime_service(self.server, self.device, device_id,
                                              loader, cpu_port,
                                              sticky_election_id=sticky)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.address = f"127.0.0.1:{port}"
        self.server.start()
        self.channel = grpc.insecure_channel(self.address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.streams: list[StreamClient] = []

    def stream(self) -> StreamClient:
        client = StreamClient(self.stub)
        self.streams.append(client)
        return client

    def set_config(self, name: str = "basic", election: tuple[int, int] | None = (0, 1),
                   action: int = SetConfig.VERIFY_AND_COMMIT, cookie: int | None = None,
                   device_config: bytes | None = None,
                   info: p4info_pb2.P4Info | None = None) -> None:
        request = SetConfig(device_id=self.device_id, action=action)
        if election is not None:
            request.election_id.high, request.election_id.low = election
        request.config.p4info.CopyFrom(p4info(name) if info is None else info)
        request.config.p4_device_config = name.encode() if device_config is None else device_config
        if cookie is not None:
            request.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(request)

    def write(self, *updates: p4runtime_pb2.Update, election: tuple[int, int] | None = (0, 1),
              atomicity: int = 0, role: str = "") -> None:
        request = p4runtime_pb2.WriteRequest(device_id=self.device_id, updates=updates,
                                             atomicity=atomicity, role=role)
        if election is not None:
            request.election_id.high, request.election_id.low = election
        self.stub.Write(request)

    def read(self, *entities: p4runtime_pb2.Entity) -> list[p4runtime_pb2.Entity]:
        request = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
        return [e for response in self.stub.Read(request) for e in response.entities]

    def read_text(self, text: str) -> list[p4runtime_pb2.Entity]:
        return self.read(entity(text))

    def stop(self) -> None:
        for client in self.streams:
            client.close()
        self.channel.close()
        self.server.stop(None)
        self.servicer.close()

"""P4Runtime inside one process: the controller's client talks to each
simulated switch's real :class:`~emulator.targets.p4runtime.server.P4RuntimeServicer`
through :class:`LocalStub`, which has the gRPC stub's methods and calls the
servicer directly. Requests and answers are the same protobuf messages,
arbitration, pipeline push, batched writes, reads and the stream channel
take the same code path as over gRPC; only the transport is gone (no socket,
no port).

Errors the servicer ends an RPC with (``context.abort``,
``abort_with_status``) come back as :class:`LocalRpcError`, a
``grpc.RpcError`` with ``code()``, ``details()`` and
``trailing_metadata()``, so the client turns them into the same
one-line-per-update :class:`~emulator.control.client.P4RuntimeError`.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import grpc
from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.server import P4RuntimeServicer


class LocalRpcError(grpc.RpcError):
    """An RPC the servicer ended with an error status."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 trailing_metadata: tuple = ()) -> None:
        super().__init__(f"{code.name}: {details}")
        self._code = code
        self._details = details
        self._trailing = tuple(trailing_metadata or ())

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple:
        return self._trailing


class LocalContext:
    """The part of ``grpc.ServicerContext`` the servicer uses."""

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []
        self.active = True

    def abort(self, code: grpc.StatusCode, details: str) -> None:
        raise LocalRpcError(code, details)

    def abort_with_status(self, status: grpc.Status) -> None:
        raise LocalRpcError(status.code, status.details, status.trailing_metadata)

    def add_callback(self, callback: Callable[[], None]) -> bool:
        self._callbacks.append(callback)
        return True

    def is_active(self) -> bool:
        return self.active

    def invocation_metadata(self) -> tuple:
        return ()

    def peer(self) -> str:
        return "in-process"

    def time_remaining(self) -> float | None:
        return None

    def cancel(self) -> None:
        """The client went away: run the callbacks, as gRPC does."""
        if self.active:
            self.active = False
            for callback in self._callbacks:
                callback()


class LocalStub:
    """``P4RuntimeStub``'s methods, served by ``servicer`` in this process."""

    def __init__(self, servicer: P4RuntimeServicer) -> None:
        self.servicer = servicer

    def Write(self, request: p4runtime_pb2.WriteRequest,  # noqa: N802 - the stub's names
              timeout: float | None = None) -> p4runtime_pb2.WriteResponse:
        return self.servicer.Write(request, LocalContext())

    def Read(self, request: p4runtime_pb2.ReadRequest,  # noqa: N802
             timeout: float | None = None) -> Iterator[p4runtime_pb2.ReadResponse]:
        return iter(list(self.servicer.Read(request, LocalContext())))

    def SetForwardingPipelineConfig(self, request: Any,  # noqa: N802
                                    timeout: float | None = None) -> Any:
        return self.servicer.SetForwardingPipelineConfig(request, LocalContext())

    def GetForwardingPipelineConfig(self, request: Any,  # noqa: N802
                                    timeout: float | None = None) -> Any:
        return self.servicer.GetForwardingPipelineConfig(request, LocalContext())

    def Capabilities(self, request: Any, timeout: float | None = None) -> Any:  # noqa: N802
        return self.servicer.Capabilities(request, LocalContext())

    def StreamChannel(self, requests: Iterator[p4runtime_pb2.StreamMessageRequest],  # noqa: N802
                      timeout: float | None = None
                      ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        context = LocalContext()
        responses = self.servicer.StreamChannel(requests, context)

        def stream() -> Iterator[p4runtime_pb2.StreamMessageResponse]:
            try:
                yield from responses
            finally:
                context.cancel()
        return stream()

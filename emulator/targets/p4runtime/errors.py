"""P4Runtime errors and how they travel back to the client.

Every check in the server raises :class:`P4RuntimeError` with a canonical
``google.rpc`` code. The servicer turns them into gRPC statuses the way
PI/BMv2 does (P4Runtime spec §10 "Error Reporting Messages"):

- an RPC-wide error (wrong device, not primary, no pipeline, malformed
  request) is a plain gRPC status with that code and message;
- a ``Write`` (or ``Read``) batch where some updates failed ends with status
  ``UNKNOWN`` and a binary ``google.rpc.Status`` in the
  ``grpc-status-details-bin`` trailer whose ``details`` hold one packed
  ``p4.v1.Error`` per update, in order, ``OK`` for the ones that succeeded —
  what p4runtime-shell's ``P4RuntimeWriteException`` unpacks.
"""

from __future__ import annotations

from typing import Sequence

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2

#: ``p4.v1.Error.space`` of our errors (PI uses "ALL-sswitch-p4org").
ERROR_SPACE = "ALL-aifabric-builtin"

_GRPC_CODES = {code.value[0]: code for code in grpc.StatusCode}


class P4RuntimeError(Exception):
    """A request the server refuses; ``code`` is a ``google.rpc.Code`` value."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message

    @property
    def code_name(self) -> str:
        return code_pb2.Code.Name(self.code)

    def __str__(self) -> str:
        return f"{self.code_name}: {self.message}"


def invalid_argument(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.INVALID_ARGUMENT, message)


def not_found(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.NOT_FOUND, message)


def already_exists(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.ALREADY_EXISTS, message)


def out_of_range(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.OUT_OF_RANGE, message)


def permission_denied(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.PERMISSION_DENIED, message)


def failed_precondition(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.FAILED_PRECONDITION, message)


def resource_exhausted(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.RESOURCE_EXHAUSTED, message)


def unimplemented(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.UNIMPLEMENTED, message)


def internal(message: str) -> P4RuntimeError:
    return P4RuntimeError(code_pb2.INTERNAL, message)


def grpc_code(code: int) -> grpc.StatusCode:
    return _GRPC_CODES.get(code, grpc.StatusCode.UNKNOWN)


def batch_status(results: Sequence[P4RuntimeError | None], what: str) -> status_pb2.Status | None:
    """The ``google.rpc.Status`` of a batch, or None when every element
    succeeded. One ``p4.v1.Error`` per element, OK ones included."""
    failed = [r for r in results if r is not None]
    if not failed:
        return None
    status = status_pb2.Status(
        code=code_pb2.UNKNOWN,
        message=f"{what} failure: {len(failed)} of {len(results)} failed; "
                f"first: {failed[0]}")
    for result in results:
        error = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
        if result is not None:
            error = p4runtime_pb2.Error(canonical_code=result.code, message=result.message,
                                        space=ERROR_SPACE)
        packed = any_pb2.Any()
        packed.Pack(error)
        status.details.append(packed)
    return status


def abort(context: grpc.ServicerContext, error: P4RuntimeError) -> None:
    """End the RPC with an RPC-wide error (no per-element details)."""
    context.abort(grpc_code(error.code), error.message)


def abort_with_status(context: grpc.ServicerContext, status: status_pb2.Status) -> None:
    """End the RPC with ``status`` and its details in the binary trailer."""
    context.abort_with_status(_RichStatus(status))


class _RichStatus(grpc.Status):
    """A ``grpc.Status`` carrying a ``google.rpc.Status`` (what the optional
    grpcio-status package's ``rpc_status.to_status`` builds)."""

    def __init__(self, status: status_pb2.Status) -> None:
        self.code = grpc_code(status.code)
        self.details = status.message
        self.trailing_metadata = (("grpc-status-details-bin", status.SerializeToString()),)

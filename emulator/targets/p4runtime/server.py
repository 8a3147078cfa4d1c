"""The P4Runtime gRPC service of the built-in target.

:func:`add_p4runtime_service` registers a :class:`P4RuntimeServicer` for
one device on a ``grpc.server``. The servicer owns the forwarding-pipeline
configs (a committed one the device runs, possibly a saved one that Read and
Write already refer to, spec §14), the client arbitration and the digest
manager; it talks to the switch only through a
:class:`~.device.DeviceHandle`.

``SetForwardingPipelineConfig`` (spec §14): ``VERIFY`` builds the pipeline
and binds the P4Info to it, nothing more; ``VERIFY_AND_SAVE`` keeps it as
the saved config — Read and Write refer to it at once while the device still
runs the committed one — and ``COMMIT`` hands it to the device (writes made
in between are thereby "replayed"); ``VERIFY_AND_COMMIT`` starts from an
empty forwarding state; ``RECONCILE_AND_COMMIT`` reads the current state
(members, groups, entries with direct counters and meters, changed default
entries, PRE entries, counters, configured meters, non-zero registers, value
sets, digest configs) and replays it, by id, into the new pipeline before
committing — all or nothing: if one entity does not fit, the answer is
``INVALID_ARGUMENT`` naming it and the old config stays. The device config
may come bare or, as BMv2's controllers send it, as ``device_data`` of a
``p4.tmp.P4DeviceConfig`` (:mod:`.p4config`); a config the loader refuses is
``INVALID_ARGUMENT`` saying what it got and why.

Writes, reads and config changes are serialised by one lock; the updates of
a Write batch are applied inside one ``call_in_dataplane`` call, so packets
see the tables between batches. No request can crash the server: an
unexpected exception in one update becomes an ``INTERNAL`` error for that
update.
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Callable, Iterator, TypeVar

import grpc
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from emulator.targets.p4runtime import entities, p4config
from emulator.targets.p4runtime.arbitration import Arbitration, Controller, election_id
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.device import DeviceConfigLoader, DeviceHandle
from emulator.targets.p4runtime.digests import DigestManager
from emulator.targets.p4runtime.idle import IdleTimeouts
from emulator.targets.p4runtime.errors import (
    P4RuntimeError, abort, abort_with_status, batch_status, failed_precondition, internal,
    invalid_argument, not_found, permission_denied, unimplemented,
)
from emulator.p4.p4info.index import P4InfoError
from emulator.targets.p4runtime.packet_io import packet_in_message, packet_out_frame

P4RUNTIME_API_VERSION = "1.4.1"
MAX_PENDING_STREAM_MESSAGES = 4096
SetConfig = p4runtime_pb2.SetForwardingPipelineConfigRequest
GetConfig = p4runtime_pb2.GetForwardingPipelineConfigRequest
T = TypeVar("T")
_END = object()
log = logging.getLogger(__name__)


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):
    """P4Runtime for one device. ``sticky_election_id`` selects the spec's
    arbitration over PI's (see :mod:`.arbitration`)."""

    def __init__(self, device: DeviceHandle, device_id: int, loader: DeviceConfigLoader,
                 cpu_port: int | None = None, *, sticky_election_id: bool = False) -> None:
        self.device = device
        self.device_id = device_id
        self.loader = loader
        self.cpu_port = cpu_port
        self.arbitration = Arbitration(device_id, sticky=sticky_election_id)
        self.digests = DigestManager(self._send_to_primaries)
        self.services = entities.Services(self.digests, cpu_port)
        self._lock = threading.RLock()
        self.idle = IdleTimeouts(device, self._send_to_primaries, self._lock)
        self._committed: PipelineContext | None = None
        self._saved: PipelineContext | None = None
        if cpu_port is not None:  # a switch without a CPU port has no packet-ins
            device.set_packet_in_handler(self._on_packet_in)
        device.set_digest_handler(self.digests.on_digest)

    @property
    def pipeline_context(self) -> PipelineContext | None:
        """The config Read and Write refer to (the saved one, else the committed one)."""
        return self._saved or self._committed

    def close(self) -> None:
        """Detach from the device and stop the digest and idle-timeout threads."""
        if self.cpu_port is not None:
            self.device.set_packet_in_handler(None)
        self.device.set_digest_handler(None)
        self.digests.stop()
        self.idle.stop()

    # ---- unary RPCs -------------------------------------------------------------------
    def Write(self, request: p4runtime_pb2.WriteRequest,  # noqa: N802 - gRPC method names
              context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        def write() -> list[P4RuntimeError | None]:
            self.arbitration.check_writer(request.device_id, request.role, election_id(request))
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise unimplemented("only CONTINUE_ON_ERROR atomicity is supported")
            with self._lock:
                return self._apply(self._require_context(), list(request.updates))

        status = batch_status(_guarded(context, write), "Write")
        if status is not None:
            abort_with_status(context, status)
        return p4runtime_pb2.WriteResponse()

    def Read(self, request: p4runtime_pb2.ReadRequest,  # noqa: N802
             context: grpc.ServicerContext) -> Iterator[p4runtime_pb2.ReadResponse]:
        def read() -> tuple[list[p4runtime_pb2.Entity], list[P4RuntimeError | None]]:
            if request.device_id != self.device_id:
                raise not_found(f"unknown device id {request.device_id}")
            found: list[p4runtime_pb2.Entity] = []
            results: list[P4RuntimeError | None] = []
            with self._lock:
                ctx = self._require_context()
                for entity in request.entities:
                    try:
                        found.extend(entities.read(ctx, entity))
                        results.append(None)
                    except P4RuntimeError as exc:
                        results.append(exc)
                    except Exception as exc:  # noqa: BLE001 - reported, never fatal
                        log.exception("Read failed")
                        results.append(internal(f"{type(exc).__name__}: {exc}"))
            return found, results

        found, results = _guarded(context, read)
        for start in range(0, len(found), 1000):
            yield p4runtime_pb2.ReadResponse(entities=found[start:start + 1000])
        if not found:
            yield p4runtime_pb2.ReadResponse()
        status = batch_status(results, "Read")
        if status is not None:
            abort_with_status(context, status)

    def SetForwardingPipelineConfig(self, request: SetConfig,  # noqa: N802
                                    context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        def set_config() -> None:
            self.arbitration.check_writer(request.device_id, request.role, election_id(request))
            with self._lock:
                self._set_config(request)

        _guarded(context, set_config)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(self, request: GetConfig,  # noqa: N802
                                    context: grpc.ServicerContext
                                    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        response = p4runtime_pb2.GetForwardingPipelineConfigResponse()

        def check() -> None:
            if request.device_id != self.device_id:
                raise not_found(f"unknown device id {request.device_id}")
            if request.response_type not in GetConfig.ResponseType.values():
                raise invalid_argument(f"unknown response_type {request.response_type}")

        _guarded(context, check)
        ctx = self.pipeline_context
        if ctx is None:
            return response
        config = response.config
        kind = request.response_type
        if kind in (GetConfig.ALL, GetConfig.P4INFO_AND_COOKIE):
            config.p4info.CopyFrom(ctx.p4info)
        if kind in (GetConfig.ALL, GetConfig.DEVICE_CONFIG_AND_COOKIE):
            config.p4_device_config = ctx.device_config
        if ctx.cookie is not None:
            config.cookie.cookie = ctx.cookie
        else:
            config.SetInParent()
        return response

    def Capabilities(self, request: p4runtime_pb2.CapabilitiesRequest,  # noqa: N802
                     context: grpc.ServicerContext) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version=P4RUNTIME_API_VERSION)

    # ---- stream ---------------------------------------------------------------------------
    def StreamChannel(self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest],  # noqa: N802
                      context: grpc.ServicerContext
                      ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        out: queue.Queue = queue.Queue()

        def send(message: p4runtime_pb2.StreamMessageResponse) -> None:
            # A client that stops reading loses packet-ins and digests (spec
            # §16.1 allows dropping them) instead of growing the queue.
            if out.qsize() < MAX_PENDING_STREAM_MESSAGES:
                out.put(message)

        ctrl = Controller(send=send)

        def reader() -> None:
            try:
                for request in request_iterator:
                    error = self._stream_request(ctrl, request)
                    if error is not None:
                        out.put(error)
                        return
            except Exception:  # noqa: BLE001 - the client went away
                pass
            finally:
                self.arbitration.remove(ctrl)
                out.put(_END)

        def ended() -> None:
            # The RPC is over (closed, cancelled, deadline, server stop): its
            # controller goes now, not when the reader thread notices.
            self.arbitration.remove(ctrl)
            out.put(_END)

        context.add_callback(ended)
        threading.Thread(target=reader, name="p4rt-stream", daemon=True).start()
        while True:
            item = out.get()
            if item is _END:
                return
            if isinstance(item, P4RuntimeError):
                abort(context, item)
            yield item

    def _stream_request(self, ctrl: Controller,
                        request: p4runtime_pb2.StreamMessageRequest) -> P4RuntimeError | None:
        """Handle one stream message; returns the error that ends the stream."""
        kind = request.WhichOneof("update")
        if kind == "arbitration":
            try:
                self.arbitration.arbitrate(ctrl, request.arbitration)
            except P4RuntimeError as exc:
                return exc
            return None
        if not ctrl.arbitrated:
            return None  # as PI: nothing is accepted before arbitration
        try:
            if kind in ("packet", "digest_ack") and not self.arbitration.is_primary(ctrl):
                raise permission_denied("only the primary controller may send this")
            if kind == "packet":
                self._packet_out(request.packet)
            elif kind == "digest_ack":
                ack = request.digest_ack
                ctx = self._committed
                if ctx is None or ack.digest_id not in ctx.index.digests:
                    raise invalid_argument(f"DigestListAck: unknown digest id {ack.digest_id}")
                self.digests.ack(ack.digest_id, ack.list_id)
            else:
                raise unimplemented(f"stream message {kind or 'without content'}")
        except P4RuntimeError as exc:
            ctrl.send(_stream_error(exc, request))
        except Exception as exc:  # noqa: BLE001 - never fatal
            log.exception("stream message failed")
            ctrl.send(_stream_error(internal(f"{type(exc).__name__}: {exc}"), request))
        return None

    def _packet_out(self, packet: p4runtime_pb2.PacketOut) -> None:
        ctx = self._committed
        if ctx is None:
            raise failed_precondition("no forwarding pipeline config")
        if self.cpu_port is None:
            raise failed_precondition("the switch has no CPU port")
        self.device.inject_packet_out(packet_out_frame(ctx.index.packet_out, packet))

    def _on_packet_in(self, frame: bytes) -> None:
        """From the data plane: a frame sent to the CPU port."""
        ctx = self._committed
        if ctx is None:
            return
        message = packet_in_message(ctx.index.packet_in, frame)
        if message is None:
            return
        response = p4runtime_pb2.StreamMessageResponse()
        response.packet.CopyFrom(message)
        self._send_to_primaries(response)

    def _send_to_primaries(self, message: p4runtime_pb2.StreamMessageResponse) -> None:
        for ctrl in self.arbitration.primaries():
            ctrl.send(message)

    # ---- helpers ------------------------------------------------------------------------------
    def _require_context(self) -> PipelineContext:
        ctx = self.pipeline_context
        if ctx is None:
            raise failed_precondition("no forwarding pipeline config set for this device")
        return ctx

    def _run(self, ctx: PipelineContext, fn: Callable[[], T]) -> T:
        """Run a mutation between packets if the device runs ``ctx``."""
        if ctx is self._committed:
            return self.device.call_in_dataplane(fn)
        return fn()

    def _apply(self, ctx: PipelineContext,
               updates: list[p4runtime_pb2.Update]) -> list[P4RuntimeError | None]:
        def apply_all() -> list[P4RuntimeError | None]:
            results: list[P4RuntimeError | None] = []
            for update in updates:
                try:
                    entities.write(ctx, update, self.services)
                    results.append(None)
                except P4RuntimeError as exc:
                    results.append(exc)
                except Exception as exc:  # noqa: BLE001 - reported, never fatal
                    log.exception("Write update failed")
                    results.append(internal(f"{type(exc).__name__}: {exc}"))
            return results
        return self._run(ctx, apply_all)

    def _set_config(self, request: SetConfig) -> None:
        action = request.action
        if action == SetConfig.COMMIT:
            if request.HasField("config"):
                raise invalid_argument("COMMIT takes no config (it commits the saved one)")
            if self._saved is None:
                raise not_found("no saved config to commit (VERIFY_AND_SAVE first)")
            self._commit(self._saved)
            return
        if action not in (SetConfig.VERIFY, SetConfig.VERIFY_AND_SAVE,
                          SetConfig.VERIFY_AND_COMMIT, SetConfig.RECONCILE_AND_COMMIT):
            raise invalid_argument(f"invalid SetForwardingPipelineConfig action {action}")
        if not request.HasField("config") or not request.config.HasField("p4info"):
            raise invalid_argument("config with a P4Info is required")
        ctx = self._build(request.config)
        if action == SetConfig.VERIFY:
            return
        if action == SetConfig.VERIFY_AND_SAVE:
            self._saved = ctx
            return
        if action == SetConfig.RECONCILE_AND_COMMIT and self.pipeline_context is not None:
            self._reconcile(self.pipeline_context, ctx)
        self._commit(ctx)

    def _build(self, config: p4runtime_pb2.ForwardingPipelineConfig) -> PipelineContext:
        # BMv2's controllers wrap the device config in a p4.tmp.P4DeviceConfig.
        data, _wrapper = p4config.unwrap(config.p4_device_config)
        try:
            pipeline = self.loader(config.p4info, data)
        except Exception as exc:  # noqa: BLE001 - any loader failure is the config's fault
            got = p4config.describe(config.p4_device_config)
            raise invalid_argument(f"cannot load the device config: {exc}; got {got}") from None
        try:
            return PipelineContext(config, pipeline)
        except P4InfoError as exc:
            raise invalid_argument(f"P4Info does not fit the device config: {exc}") from None
        except Exception as exc:  # noqa: BLE001 - a P4Info the index did not foresee
            raise invalid_argument(f"cannot use this P4Info: {type(exc).__name__}: {exc}") from None

    def _reconcile(self, old: PipelineContext, new: PipelineContext) -> None:
        """Replay the old forwarding state into ``new``; all or nothing."""
        updates = entities.forwarding_state(old)
        results = self._apply(new, updates)
        failed = [(u, r) for u, r in zip(updates, results) if r is not None]
        if failed:
            update, error = failed[0]
            raise invalid_argument(
                f"RECONCILE_AND_COMMIT: {len(failed)} of {len(updates)} entities of the "
                f"forwarding state do not fit the new config; first: "
                f"{update.entity.WhichOneof('entity')}: {error}")

    def _commit(self, ctx: PipelineContext) -> None:
        self.device.set_pipeline(ctx.pipeline)
        self._committed = ctx
        self._saved = None
        self.digests.set_context(ctx)
        self.idle.set_context(ctx)


def _guarded(context: grpc.ServicerContext, fn: Callable[[], T]) -> T:
    """``fn()``, its P4RuntimeError (or any bug, as INTERNAL) ending the RPC."""
    try:
        return fn()
    except P4RuntimeError as exc:
        abort(context, exc)
    except Exception as exc:  # noqa: BLE001 - never let a request take the server down
        log.exception("P4Runtime request failed")
        abort(context, internal(f"{type(exc).__name__}: {exc}"))
    raise AssertionError("unreachable: abort raises")


def _stream_error(error: P4RuntimeError,
                  request: p4runtime_pb2.StreamMessageRequest) -> p4runtime_pb2.StreamMessageResponse:
    message = p4runtime_pb2.StreamMessageResponse()
    err = message.error
    err.canonical_code = error.code
    err.message = error.message
    kind = request.WhichOneof("update")
    if kind == "packet":
        err.packet_out.packet_out.CopyFrom(request.packet)
    elif kind == "digest_ack":
        err.digest_list_ack.digest_list_ack.CopyFrom(request.digest_ack)
    else:
        err.other.SetInParent()
        if kind == "other":
            err.other.other.CopyFrom(request.other)
    return message


def add_p4runtime_service(grpc_server: grpc.Server, device_handle: DeviceHandle, device_id: int,
                          loader: DeviceConfigLoader, cpu_port: int | None = None,
                          *, sticky_election_id: bool = False) -> P4RuntimeServicer:
    """Register the P4Runtime service for ``device_id`` on ``grpc_server``;
    returns the servicer (call :meth:`~P4RuntimeServicer.close` at shutdown)."""
    servicer = P4RuntimeServicer(device_handle, device_id, loader, cpu_port,
                                 sticky_election_id=sticky_election_id)
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(servicer, grpc_server)
    return servicer

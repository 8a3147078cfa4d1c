"""``aifabric.QueueControl``: port and queue control outside P4Runtime.

P4Runtime has no words for a port's rate, link delay, buffer or PFC
behaviour, nor for queue depths; this gRPC service, on the same server
(address) as P4Runtime, has. Messages are JSON objects (UTF-8), so there is
no .proto to compile: the service is a generic handler with JSON
(de)serialisers. Method paths are ``/aifabric.QueueControl/<Method>``.

===============  ===========================================  ======================================
Method           Request                                      Response
===============  ===========================================  ======================================
SetPortConfig    ``{"port": 1, "rate_bps": 1e7, "delay_us":    ``{"port": 1, "config": {...}}``
                 5, "buffer_bytes": 96000,                     (the whole config after the change)
                 "overhead_bytes": 0, "pfc_priorities":
                 [3]}`` (any subset of the settings)
GetPortConfig    ``{"ports": [1, 2]}`` (omit: all)             ``{"ports": [{"port": 1,
                                                              "config": {...}}]}``
SetPfc           ``{"port": 1, "priority": 3,                  ``{"port": 1, "config": {...}}``
                 "enabled": true}``
SetBuffer        ``{"pool_bytes": 4000000, "alpha":             the buffer (``GetBuffer``)
                 [8, 8, 8, 8, 8, 8, 8, 8]}`` (either)
GetBuffer        ``{}``                                        ``{"pool_bytes", "shared_bytes",
                                                              "headroom_bytes", "shared_used_bytes",
                                                              "headroom_used_bytes", "shared_max_bytes",
                                                              "headroom_max_bytes", "alpha", ...}``
GetPortStats     ``{"ports": [1, 2]}`` (omit: all)             see below
ResetStats       ``{"ports": [1]}`` (omit: all, and the        ``{}``
                 switch-wide counters)
GetQueueSeries   ``{"ports": [1, 2], "since": 12.5}``          see below
                 (omit either: all ports, every sample)
SetSampleInterval ``{"interval_ms": 10}``                      ``{"interval_ms": 10.0}``
GetFidelity      ``{"ports": [1, 2]}`` (omit: all)             see below
===============  ===========================================  ======================================

``GetPortStats`` answers ``{"time_s", "ports": [...], "switch_drops",
"digests", "executor_errors"}``; each port has ``port``, ``name``,
``rx_packets``, ``rx_bytes``, ``tx_packets``, ``tx_bytes``,
``pfc_rx_frames``, ``pfc_tx_frames``, ``drops`` (by cause, see
:data:`~.ports.DROP_CAUSES`), ``config`` and ``queues``: one object per
priority with ``priority``, ``tx_packets``, ``tx_bytes``, ``depth_packets``,
``depth_bytes`` (now), ``max_depth_packets``, ``max_depth_bytes``,
``paused`` (now), ``paused_s`` (total), ``pfc_rx``, ``pfc_tx`` (PFC frames
naming this priority, received / sent), ``tail_dropped`` and the other
queue counters of :mod:`.tm` (whose sums hold in every snapshot), and the
buffer's view of the port's ingress priority group of that number
(:meth:`.mmu.PgAccount.to_dict`: ``pg_bytes``, ``headroom_used_bytes``,
``headroom_bytes``, ``pg_max_bytes``, ``headroom_max_bytes``, ``lossless``,
``xoff_on``, ``headroom_overflow``, ``xoff_sent``, ``xon_sent``); each port
also has ``mac_control`` (the counters of the pause frames its buffer sent)
and the answer ``buffer`` (the switch's pool, as ``GetBuffer``). Receive
counters are per port only: a frame has no priority before P4 gives it one.

``GetQueueSeries`` answers ``{"time_s", "unix_offset_s", "interval_s",
"queues": [{"port", "priority", "samples": [[t, depth_packets,
depth_bytes, paused], ...]}, ...]}``: the queue-depth time series the switch
samples every ``interval_s`` (default 10 ms, last 60 s kept; see
:class:`~.tm.QueueSeries`), only queues that were busy; and the buffer's
occupancy from the same samples (:class:`~.mmu.BufferSeries`):
``"buffer": [[t, shared_used_bytes, headroom_used_bytes, shared_bytes,
headroom_bytes], ...]`` (the switch's pool, while anything was held) and
``"groups": [{"port", "priority", "samples": [[t, pg_bytes,
headroom_used_bytes, xoff_on], ...]}, ...]`` (each ingress priority group
that held bytes). ``t`` and ``since`` are on the switch's clock
(``time_s`` is now on it); ``t + unix_offset_s`` is Unix time.

Each queue of ``GetPortStats`` also has ``ecn_marked`` (packets the loaded
program marked CE on it, since it was loaded; left out where the program
keeps no such counter, see :mod:`.marks`). ``GetQueueSeries`` also answers
``port_counts`` and ``queue_counts``: cumulative port bytes and per-queue
PFC frames, paused time and CE marks at the same sampling instants
(:class:`~.counter_series.CounterSeries`).

``GetFidelity`` answers ``{"time_s", "unix_offset_s", "ports": [{"port",
"name", "rate_bps", "frame_us", "late", "lag_given_up_s",
"lag_given_up_events", "rx_overruns", "rx_ring_holes", "headroom_overflows",
"rx_wait"}, ...],
"behind":
{"interval_s", "bins": [[start, events, late, max_late_us,
given_up_us], ...]}}``: how late each port's departures left against their
schedule (``late`` and ``rx_wait``, how long received frames waited in the
socket, are :class:`~emulator.fidelity.LatenessHistogram` JSON), since the
last ``ResetStats``; bin starts are on the switch's clock (add
``unix_offset_s`` for Unix time). Ports without a rate are left out.

Errors: an unknown port is ``NOT_FOUND``, a bad value ``INVALID_ARGUMENT``
(with a one-line message); :class:`QueueControlClient` raises
:class:`QueueControlError` for both.
"""

from __future__ import annotations

import json
import time
from typing import Any, Callable

import grpc

from emulator.targets.builtin.errors import PortConfigError, SwitchError, UnknownPortError
from emulator.targets.builtin.marks import install_marks, port_stats_with_marks
from emulator.targets.builtin.switch import Switch

SERVICE = "aifabric.QueueControl"
METHODS = ("SetPortConfig", "GetPortConfig", "SetPfc", "GetPortStats", "ResetStats",
           "GetQueueSeries", "SetSampleInterval", "GetFidelity", "SetBuffer", "GetBuffer")


def _dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def _loads(data: bytes) -> Any:
    return json.loads(data) if data else {}


class QueueControlServicer:
    """The service's methods, on one switch (each runs through
    :meth:`Switch.call_in_dataplane`)."""

    def __init__(self, switch: Switch) -> None:
        self.switch = switch

    def SetPortConfig(self, request: dict) -> dict:
        port = _port(request)
        settings = {k: v for k, v in request.items() if k != "port"}
        config = self.switch.set_port_config(port, **settings)
        return {"port": port, "config": config.to_dict()}

    def GetPortConfig(self, request: dict) -> dict:
        ports = _ports(request)
        numbers = ports if ports is not None else self.switch.call_in_dataplane(
            lambda: sorted(self.switch.dataplane.ports))
        return {"ports": [{"port": n, "config": self.switch.port_config(n).to_dict()}
                          for n in numbers]}

    def SetPfc(self, request: dict) -> dict:
        port = _port(request)
        priority = request.get("priority")
        enabled = request.get("enabled", True)
        if not isinstance(priority, int) or isinstance(priority, bool):
            raise PortConfigError(f"priority must be an integer, got {priority!r}")
        if not isinstance(enabled, bool):
            raise PortConfigError(f"enabled must be true or false, got {enabled!r}")
        config = self.switch.set_pfc(port, priority, enabled)
        return {"port": port, "config": config.to_dict()}

    def SetBuffer(self, request: dict) -> dict:
        if not isinstance(request, dict):
            raise PortConfigError("the request must be a JSON object")
        return self.switch.set_buffer(**request)

    def GetBuffer(self, request: dict) -> dict:
        return self.switch.buffer_state()

    def GetPortStats(self, request: dict) -> dict:
        return port_stats_with_marks(self.switch, _ports(request))

    def ResetStats(self, request: dict) -> dict:
        self.switch.reset_stats(_ports(request))
        return {}

    def GetQueueSeries(self, request: dict) -> dict:
        since = request.get("since") if isinstance(request, dict) else None
        if since is not None and (not isinstance(since, (int, float)) or isinstance(since, bool)):
            raise PortConfigError(f"since must be a number, got {since!r}")
        out = queue_series_with_counts(self.switch, _ports(request), since)
        out["unix_offset_s"] = time.time() - self.switch.dataplane.clock()
        return out

    def GetFidelity(self, request: dict) -> dict:
        out = self.switch.fidelity(_ports(request))
        out["unix_offset_s"] = time.time() - self.switch.dataplane.clock()
        return out

    def SetSampleInterval(self, request: dict) -> dict:
        interval = request.get("interval_ms") if isinstance(request, dict) else None
        if not isinstance(interval, (int, float)) or isinstance(interval, bool):
            raise PortConfigError(f"interval_ms must be a number, got {interval!r}")
        return {"interval_ms": self.switch.set_sample_interval(interval)}


def queue_series_with_counts(switch: Switch, ports: list[int] | None = None,
                             since: float | None = None) -> dict[str, Any]:
    """``switch.queue_series`` with the counter series' ``port_counts`` and
    ``queue_counts`` (:meth:`~.counter_series.CounterSeries.query`)."""
    out = switch.queue_series(ports, since)
    out.update(switch.call_in_dataplane(
        lambda: switch.dataplane.series.counts.query(ports, since)))
    return out


def _port(request: Any) -> int:
    if not isinstance(request, dict):
        raise PortConfigError("the request must be a JSON object")
    port = request.get("port")
    if not isinstance(port, int) or isinstance(port, bool):
        raise PortConfigError(f"port must be an integer, got {port!r}")
    return port


def _ports(request: Any) -> list[int] | None:
    if not isinstance(request, dict):
        raise PortConfigError("the request must be a JSON object")
    ports = request.get("ports")
    if ports is None:
        return None
    if not isinstance(ports, list) or not all(
            isinstance(p, int) and not isinstance(p, bool) for p in ports):
        raise PortConfigError(f"ports must be a list of integers, got {ports!r}")
    return ports


def _unary(fn: Callable[[dict], dict]) -> grpc.RpcMethodHandler:
    def handle(request: Any, context: grpc.ServicerContext) -> Any:
        try:
            return fn(request)
        except UnknownPortError as exc:
            context.abort(grpc.StatusCode.NOT_FOUND, str(exc))
        except (SwitchError, ValueError, TypeError) as exc:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, str(exc))

    return grpc.unary_unary_rpc_method_handler(
        handle, request_deserializer=_loads, response_serializer=_dumps)


def add_queue_control(server: grpc.Server, switch: Switch) -> None:
    """Register ``aifabric.QueueControl`` for ``switch`` on ``server`` (a
    service hook, see :mod:`.server`)."""
    install_marks(switch)
    servicer = QueueControlServicer(switch)
    handlers = {name: _unary(getattr(servicer, name)) for name in METHODS}
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE, handlers),))


class QueueControlError(Exception):
    """A QueueControl call failed; the message is the server's."""

    def __init__(self, code: grpc.StatusCode | None, message: str) -> None:
        super().__init__(message)
        self.code = code


class QueueControlClient:
    """A client of ``aifabric.QueueControl`` at ``address`` (``host:port`` or
    ``unix:PATH``)."""

    def __init__(self, address: str, timeout_s: float = 10.0) -> None:
        self.address = address
        self.timeout_s = timeout_s
        self._channel = grpc.insecure_channel(address)
        self._stubs = {
            name: self._channel.unary_unary(f"/{SERVICE}/{name}", request_serializer=_dumps,
                                            response_deserializer=_loads)
            for name in METHODS}

    def _call(self, method: str, request: dict) -> Any:
        try:
            return self._stubs[method](request, timeout=self.timeout_s)
        except grpc.RpcError as exc:
            code = exc.code() if hasattr(exc, "code") else None
            details = exc.details() if hasattr(exc, "details") else str(exc)
            raise QueueControlError(code, f"{method} on {self.address}: {details}") from None

    def wait_ready(self, timeout_s: float = 10.0) -> None:
        try:
            grpc.channel_ready_future(self._channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            raise QueueControlError(None, f"no gRPC server at {self.address} "
                                          f"after {timeout_s} s") from None

    def set_port_config(self, port: int, **settings: Any) -> dict:
        return self._call("SetPortConfig", {"port": port, **settings})["config"]

    def get_port_config(self, ports: list[int] | None = None) -> list[dict]:
        return self._call("GetPortConfig", {} if ports is None else {"ports": ports})["ports"]

    def set_pfc(self, port: int, priority: int, enabled: bool = True) -> dict:
        return self._call("SetPfc", {"port": port, "priority": priority,
                                     "enabled": enabled})["config"]

    def set_buffer(self, **settings: Any) -> dict:
        return self._call("SetBuffer", settings)

    def get_buffer(self) -> dict:
        return self._call("GetBuffer", {})

    def get_port_stats(self, ports: list[int] | None = None) -> dict:
        return self._call("GetPortStats", {} if ports is None else {"ports": ports})

    def reset_stats(self, ports: list[int] | None = None) -> None:
        self._call("ResetStats", {} if ports is None else {"ports": ports})

    def get_queue_series(self, ports: list[int] | None = None,
                         since: float | None = None) -> dict:
        """The switch's queue-depth series (see ``GetQueueSeries`` above)."""
        request: dict[str, Any] = {}
        if ports is not None:
            request["ports"] = ports
        if since is not None:
            request["since"] = since
        return self._call("GetQueueSeries", request)

    def get_fidelity(self, ports: list[int] | None = None) -> dict:
        """Lateness, lag given up and overruns (see ``GetFidelity`` above)."""
        return self._call("GetFidelity", {} if ports is None else {"ports": ports})

    def set_sample_interval(self, interval_ms: float) -> float:
        return self._call("SetSampleInterval", {"interval_ms": interval_ms})["interval_ms"]

    def close(self) -> None:
        self._channel.close()

    def __enter__(self) -> "QueueControlClient":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

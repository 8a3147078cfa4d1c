"""Digests: ``DigestEntry`` configs and the ``DigestList`` stream (P4Runtime
spec §9.9).

Nothing is sent for a digest until the controller INSERTs its config, as
with PI. The :class:`DigestManager` receives digest messages from the data
plane (type name and executor value), encodes them as ``P4Data`` per the
P4Info ``type_spec``, drops duplicates of messages already buffered or sent
and not yet acknowledged (the cache, emptied by ``DigestListAck`` or after
``ack_timeout_ns``), and sends a ``DigestList`` when ``max_list_size``
distinct messages are buffered or ``max_timeout_ns`` after the first one.
A background thread enforces the timeouts.
"""

from __future__ import annotations

import itertools
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.codec import encode_p4data
from emulator.targets.p4runtime.context import PipelineContext
from emulator.targets.p4runtime.errors import already_exists, invalid_argument, not_found

Update = p4runtime_pb2.Update
Send = Callable[[p4runtime_pb2.StreamMessageResponse], None]


def write_digest_entry(ctx: PipelineContext, update_type: int, entry: p4runtime_pb2.DigestEntry,
                       manager: "DigestManager") -> None:
    info = ctx.lookup(ctx.index.digests, entry.digest_id, "digest")
    what = f"digest {info.preamble.name}"
    configured = entry.digest_id in ctx.digest_configs
    if update_type == Update.DELETE:
        if not configured:
            raise not_found(f"{what}: not configured")
        del ctx.digest_configs[entry.digest_id]
        manager.forget(ctx, entry.digest_id)
        return
    if update_type == Update.INSERT and configured:
        raise already_exists(f"{what}: already configured")
    if update_type == Update.MODIFY and not configured:
        raise not_found(f"{what}: not configured")
    if update_type not in (Update.INSERT, Update.MODIFY):
        raise invalid_argument(f"{what}: update type not set")
    config = entry.config
    if config.max_timeout_ns < 0 or config.max_list_size < 0 or config.ack_timeout_ns < 0:
        raise invalid_argument(f"{what}: negative config value")
    ctx.digest_configs[entry.digest_id] = p4runtime_pb2.DigestEntry.Config()
    ctx.digest_configs[entry.digest_id].CopyFrom(config)
    manager.flush(ctx, entry.digest_id)


def read_digest_entries(ctx: PipelineContext,
                        request: p4runtime_pb2.DigestEntry) -> list[p4runtime_pb2.Entity]:
    if request.digest_id:
        info = ctx.lookup(ctx.index.digests, request.digest_id, "digest")
        if request.digest_id not in ctx.digest_configs:
            raise not_found(f"digest {info.preamble.name}: not configured")
        ids = [request.digest_id]
    else:
        ids = list(ctx.digest_configs)
    out = []
    for did in ids:
        entity = p4runtime_pb2.Entity()
        entity.digest_entry.digest_id = did
        entity.digest_entry.config.CopyFrom(ctx.digest_configs[did])
        out.append(entity)
    return out


@dataclass
class _Buffer:
    first_ns: int
    keys: list[bytes] = field(default_factory=list)
    data: list[object] = field(default_factory=list)


class DigestManager:
    """Buffers, de-duplicates and sends digest lists for the live pipeline."""

    def __init__(self, send: Send, clock_ns: Callable[[], int] = time.monotonic_ns) -> None:
        self._send = send
        self._clock_ns = clock_ns
        self._cond = threading.Condition()
        self._ctx: PipelineContext | None = None
        self._buffers: dict[int, _Buffer] = {}
        self._cache: dict[int, dict[int, tuple[int, list[bytes]]]] = {}
        self._list_ids = itertools.count(1)
        self._stopped = False
        self._thread = threading.Thread(target=self._run, name="p4rt-digests", daemon=True)
        self._thread.start()

    def set_context(self, ctx: PipelineContext | None) -> None:
        """A new pipeline: forget everything buffered and cached."""
        with self._cond:
            self._ctx = ctx
            self._buffers.clear()
            self._cache.clear()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        self._thread.join(timeout=5)

    # ---- from the data plane ---------------------------------------------------
    def on_digest(self, type_name: str, value: object) -> None:
        ctx = self._ctx
        if ctx is None:
            return
        digest_id = ctx.index.digest_ids.get(type_name)
        config = ctx.digest_configs.get(digest_id) if digest_id else None
        if config is None:
            return
        spec = ctx.index.digests[digest_id].type_spec
        try:
            data = encode_p4data(value, spec, ctx.p4info.type_info)
        except Exception:  # a value the P4Info type does not describe: drop it
            return
        key = data.SerializeToString(deterministic=True)
        with self._cond:
            if ctx is not self._ctx:
                return
            now = self._clock_ns()
            self._expire(now)
            if any(key in keys for _, keys in self._cache.get(digest_id, {}).values()):
                return
            buffer = self._buffers.get(digest_id)
            if buffer is not None and key in buffer.keys:
                return
            if buffer is None:
                buffer = self._buffers[digest_id] = _Buffer(now)
            buffer.keys.append(key)
            buffer.data.append(data)
            if config.max_timeout_ns == 0 or (config.max_list_size and
                                              len(buffer.keys) >= config.max_list_size):
                self._flush_locked(digest_id, now)
            else:
                self._cond.notify_all()

    # ---- from the controller ------------------------------------------------------
    def ack(self, digest_id: int, list_id: int) -> None:
        with self._cond:
            self._cache.get(digest_id, {}).pop(list_id, None)

    def forget(self, ctx: PipelineContext, digest_id: int) -> None:
        """``digest_id`` of ``ctx`` is no longer configured."""
        with self._cond:
            if ctx is not self._ctx:
                return
            self._buffers.pop(digest_id, None)
            self._cache.pop(digest_id, None)

    def flush(self, ctx: PipelineContext, digest_id: int) -> None:
        """Send what is buffered for ``digest_id`` of ``ctx`` now (its config changed)."""
        with self._cond:
            if ctx is self._ctx and digest_id in self._buffers:
                self._flush_locked(digest_id, self._clock_ns())

    # ---- internals ------------------------------------------------------------------
    def _flush_locked(self, digest_id: int, now: int) -> None:
        buffer = self._buffers.pop(digest_id)
        ctx = self._ctx
        config = ctx.digest_configs.get(digest_id) if ctx is not None else None
        list_id = next(self._list_ids)
        message = p4runtime_pb2.StreamMessageResponse()
        message.digest.digest_id = digest_id
        message.digest.list_id = list_id
        message.digest.timestamp = time.time_ns()
        message.digest.data.extend(buffer.data)  # type: ignore[arg-type]
        if config is not None and config.ack_timeout_ns > 0:
            self._cache.setdefault(digest_id, {})[list_id] = (now, buffer.keys)
        self._send(message)

    def _expire(self, now: int) -> None:
        ctx = self._ctx
        for digest_id, lists in list(self._cache.items()):
            config = ctx.digest_configs.get(digest_id) if ctx is not None else None
            timeout = config.ack_timeout_ns if config is not None else 0
            for list_id, (sent, _) in list(lists.items()):
                if now - sent >= timeout:
                    del lists[list_id]

    def _next_deadline(self) -> int | None:
        ctx = self._ctx
        if ctx is None:
            return None
        deadlines = []
        for digest_id, buffer in self._buffers.items():
            config = ctx.digest_configs.get(digest_id)
            if config is not None:
                deadlines.append(buffer.first_ns + config.max_timeout_ns)
        return min(deadlines) if deadlines else None

    def _run(self) -> None:
        with self._cond:
            while not self._stopped:
                deadline = self._next_deadline()
                now = self._clock_ns()
                if deadline is not None and deadline <= now:
                    ctx = self._ctx
                    for digest_id, buffer in list(self._buffers.items()):
                        config = ctx.digest_configs.get(digest_id) if ctx is not None else None
                        if config is None:
                            del self._buffers[digest_id]
                        elif buffer.first_ns + config.max_timeout_ns <= now:
                            self._flush_locked(digest_id, now)
                    continue
                timeout = None if deadline is None else (deadline - now) / 1e9
                self._cond.wait(timeout=timeout if timeout is None else max(timeout, 0.0005))

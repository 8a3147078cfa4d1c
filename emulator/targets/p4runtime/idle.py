"""Idle timeouts of table entries (P4Runtime spec §9.1.7).

In a table with ``support_timeout = true`` (P4Info ``NOTIFY_CONTROL``), an
entry written with ``idle_timeout_ns`` is stamped on every hit by the data
plane (``Entry.last_hit_us``, on the pipeline's clock; insertion counts as
a hit). :class:`IdleTimeouts` sweeps the committed pipeline every
``sweep_s`` and sends the primary controllers one
``IdleTimeoutNotification`` listing the entries idle for their timeout or
longer; an entry that stays idle is listed again after each further
timeout, one that is hit starts over. The sweeping thread runs only while
the committed program has such a table.
"""

from __future__ import annotations

import threading
import time
from typing import Callable

from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.context import EntryExtras, PipelineContext
from emulator.targets.p4runtime.device import DeviceHandle
from emulator.targets.p4runtime.table_entries import entry_message, store_key

SWEEP_S = 0.1
Message = p4runtime_pb2.StreamMessageResponse


class IdleTimeouts:
    """The sweeper of one device. ``lock`` is the servicer's, held while
    sweeping so no write changes the tables under it."""

    def __init__(self, device: DeviceHandle, send: Callable[[Message], None],
                 lock: threading.RLock, sweep_s: float = SWEEP_S) -> None:
        self.device = device
        self.send = send
        self.sweep_s = sweep_s
        self._lock = lock
        self._ctx: PipelineContext | None = None
        self._notified_us: dict[tuple[int, object], float] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def set_context(self, ctx: PipelineContext | None) -> None:
        """The pipeline the device now runs (its entries start unnotified)."""
        self._ctx = ctx
        self._notified_us.clear()
        wanted = ctx is not None and any(tb.info.idle_timeout for tb in ctx.tables.values())
        if wanted and self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(target=self._run, name="p4rt-idle", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
            self._thread = None

    def _run(self) -> None:
        while not self._stop.wait(self.sweep_s):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - a sweep must not end the thread
                pass

    def sweep(self) -> int:
        """Notify what is idle now; returns how many entries were listed."""
        with self._lock:
            ctx = self._ctx
            if ctx is None:
                return 0
            expired = self.device.call_in_dataplane(lambda: self._expired(ctx))
        if expired:
            message = Message()
            message.idle_timeout_notification.table_entry.extend(expired)
            message.idle_timeout_notification.timestamp = time.time_ns()
            self.send(message)
        return len(expired)

    def _expired(self, ctx: PipelineContext) -> list[p4runtime_pb2.TableEntry]:
        now_us = ctx.pipeline.clock_us()
        out = []
        for tb in ctx.tables.values():
            if not tb.info.idle_timeout:
                continue
            for entry in tb.table.all_entries():
                if not entry.idle_timeout_ns:
                    continue
                key = (tb.info.id, store_key(tb, entry.key, entry.priority))
                since_us = max(entry.last_hit_us, self._notified_us.get(key, 0.0))
                if (now_us - since_us) * 1000.0 < entry.idle_timeout_ns:
                    continue
                self._notified_us[key] = now_us
                extras = ctx.extras.get(key) or EntryExtras()
                out.append(entry_message(ctx, tb, entry, extras))
        return out

"""Stopping a running network on signals and on a dead switch.

- :class:`SignalGuard` installs handlers for SIGINT, SIGTERM and SIGHUP
  while a network is up (main thread only: Python runs handlers there) and
  restores the previous ones after. A signal raises
  :class:`~.errors.FabricInterrupted` in the main thread, so the ``with``
  block unwinds and the network is torn down; a signal arriving *during*
  teardown is remembered and does not interrupt it.
- :class:`SwitchMonitor` is a thread that polls the switch processes. When
  one exits, it hands a :class:`~.errors.SwitchDiedError` (with the tail of
  the switch's log) to a callback, once.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any, Callable, Mapping

from emulator.network.errors import FabricInterrupted, SwitchDiedError
from emulator.network.process import tail

GUARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MONITOR_PERIOD_S = 0.2


class SignalGuard:
    """See the module docstring. ``pending_error()`` is consulted on SIGTERM
    first: a failure found by another thread is raised in the main thread by
    sending it SIGTERM (:meth:`interrupt_main`)."""

    def __init__(self, pending_error: Callable[[], BaseException | None]) -> None:
        self._pending_error = pending_error
        self._owner_pid = os.getpid()
        self._previous: dict[int, Any] = {}
        self.quiet = False  # set during teardown: remember signals, raise nothing
        self.deferred: int | None = None

    @property
    def installed(self) -> bool:
        return bool(self._previous)

    def install(self) -> bool:
        """Install the handlers; False (nothing done) outside the main thread."""
        if threading.current_thread() is not threading.main_thread():
            return False
        self._owner_pid = os.getpid()
        for sig in GUARDED_SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return True

    def restore(self) -> None:
        if not self._previous or threading.current_thread() is not threading.main_thread():
            return
        for sig, handler in self._previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._previous.clear()

    def interrupt_main(self) -> bool:
        """Make the main thread raise the pending error now; False if the
        handlers are not installed."""
        if not self.installed:
            return False
        signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)  # type: ignore[arg-type]
        return True

    def _handle(self, signum: int, _frame: Any) -> None:
        if os.getpid() != self._owner_pid:
            os._exit(128 + signum)
        if self.quiet:
            if signum != signal.SIGTERM or self.deferred is None:
                self.deferred = signum
            return
        if signum == signal.SIGTERM:
            error = self._pending_error()
            if error is not None:
                raise error
        raise FabricInterrupted(signum)


class SwitchMonitor(threading.Thread):
    """Polls ``procs`` (switch name → (Popen, log paths)) until stopped;
    calls ``on_death(error)`` for the first switch found dead."""

    def __init__(self, procs: Mapping[str, tuple[Any, list[str]]],
                 on_death: Callable[[SwitchDiedError], None],
                 period_s: float = MONITOR_PERIOD_S) -> None:
        super().__init__(name="aifabric switch monitor", daemon=True)
        self._procs = dict(procs)
        self._on_death = on_death
        self._period_s = period_s
        self._stop_event = threading.Event()

    def stop(self) -> None:
        self._stop_event.set()
        if self is not threading.current_thread() and self.is_alive():
            self.join(5.0)

    def run(self) -> None:
        while not self._stop_event.wait(self._period_s):
            for name, (proc, logs) in self._procs.items():
                status = proc.poll()
                if status is None or self._stop_event.is_set():
                    continue
                texts = [(path, tail(path)) for path in logs]
                found = [(path, text) for path, text in texts if text]
                log_file, log_tail = found[0] if found else (logs[0], "")
                self._on_death(SwitchDiedError(name, status, log_file, log_tail))
                return

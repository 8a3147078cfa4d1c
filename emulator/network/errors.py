"""Errors of the network layer.

Everything here derives from :class:`NetworkError` (a problem bringing up,
running or tearing down an emulated fabric), except
:class:`FabricInterrupted`, which derives from :class:`KeyboardInterrupt`
so that ``except Exception`` in caller code does not swallow a Ctrl-C or a
SIGTERM that asked the run to stop.
"""

from __future__ import annotations

import signal


class NetworkError(Exception):
    """The emulated network could not be built, run or removed."""

    exit_code = 1


class SwitchStartError(NetworkError):
    """A switch process exited, or did not open its gRPC port in time."""


class SwitchDiedError(NetworkError):
    """A switch process exited while the network was up."""

    def __init__(self, switch: str, status: int | None, log_file: str, log_tail: str) -> None:
        self.switch = switch
        self.status = status
        self.log_file = log_file
        self.log_tail = log_tail
        how = "was killed" if status is None or status < 0 else f"exited with status {status}"
        if status is not None and status < 0:
            how = f"was killed by {_signal_name(-status)}"
        tail = f"\n{log_tail}" if log_tail else " (log is empty)"
        super().__init__(f"switch {switch} {how} while the network was up; "
                         f"last lines of {log_file}:{tail}")


class TeardownError(NetworkError):
    """Teardown left something behind (listed in the message); the run record
    is kept so ``aifabric clean`` can finish the job."""


class FabricInterrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived while a network was up; the network
    is torn down before this propagates."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(f"interrupted by {_signal_name(signum)}")


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"

"""Mininet switch classes for the two switch targets.

A :class:`P4SwitchNode` runs one switch process in the root namespace (the
Mininet default for switches) with the command line of :mod:`.command`;
the subclass only picks the binary and the target-specific tail:

- :class:`BuiltinSwitchNode` runs ``aifabric-switch``, with the ports'
  rate, delay and buffer in a ``--port-config`` file and its own ``--seed``;
- :class:`Bmv2SwitchNode` runs ``simple_switch_grpc`` and sets queue depth
  and rate over Thrift once it is up (:mod:`.bmv2`).

Starting is split so a network can start many switches at once:
:meth:`~P4SwitchNode.launch` spawns the process (own session, so the
whole process group can be signalled), :meth:`~P4SwitchNode.poll_ready`
says whether its gRPC port accepts connections (raising, with the tail of
its log, if it exited), :meth:`~P4SwitchNode.after_ready` applies what
needs a running switch. ``start()`` does all three for one switch, as
Mininet expects. Stopping sends SIGTERM to the process group and SIGKILL
after a grace period.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from mininet.node import Switch

from emulator.network import bmv2
from emulator.network.command import LOOPBACK, SwitchLaunch, switch_args
from emulator.targets.builtin.config import switch_seed
from emulator.network.errors import SwitchStartError
from emulator.network.process import port_open, stop_popen, tail

BUILTIN_BINARY = "aifabric-switch"
BUILTIN_MODULE = "emulator.targets.builtin.cli"
DEFAULT_START_TIMEOUT_S = 30.0
DEFAULT_STOP_GRACE_S = 3.0
# Built-in switches run their data plane at this SCHED_FIFO priority while it
# stays light (emulator.fidelity.process.RealtimeGuard): on a machine busy
# with other work, a woken switch then sends on time.
REALTIME_PRIORITY = 10


class P4SwitchNode(Switch):
    """One P4 switch process; see the module docstring."""

    target = ""

    def __init__(self, name: str, launch: SwitchLaunch, **params: Any) -> None:
        params.setdefault("inNamespace", False)
        super().__init__(name, dpid=f"{launch.device_id:x}", **params)
        self.launch_spec = launch
        self.proc: subprocess.Popen | None = None
        self._output: Any = None

    # What subclasses choose.

    def binary(self) -> list[str]:
        raise NotImplementedError

    def target_args(self) -> list[str]:
        return []

    def after_ready(self) -> None:
        """Settings that need a running switch (none for the built-in one)."""

    # The process.

    def command(self) -> list[str]:
        return switch_args(self.binary(), self.launch_spec, self.target_args())

    @property
    def grpc_addr(self) -> str:
        return self.launch_spec.grpc_addr

    @property
    def log_file(self) -> str:
        return self.launch_spec.log_file

    def launch(self) -> subprocess.Popen:
        """Spawn the switch process without waiting for it."""
        if self.proc is not None:
            raise SwitchStartError(f"switch {self.name} was already started")
        args = self.command()
        output = Path(self.launch_spec.output_file)
        output.parent.mkdir(parents=True, exist_ok=True)
        self._output = open(output, "ab")
        self._output.write(("$ " + " ".join(args) + "\n").encode())
        self._output.flush()
        try:
            self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=self._output,
                                         stderr=subprocess.STDOUT, start_new_session=True,
                                         close_fds=True)
        except OSError as exc:
            raise SwitchStartError(f"switch {self.name}: cannot run {args[0]}: "
                                   f"{exc.strerror}") from None
        return self.proc

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def poll_ready(self) -> bool:
        """True once the gRPC port accepts connections; raises if the process
        has exited."""
        if self.proc is None:
            raise SwitchStartError(f"switch {self.name} was not launched")
        status = self.proc.poll()
        if status is not None:
            raise SwitchStartError(
                f"switch {self.name} exited with status {status} before it was ready"
                f"{self.diagnostics()}")
        return port_open(LOOPBACK, self.launch_spec.grpc_port)

    def wait_ready(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while not self.poll_ready():
            if time.monotonic() > deadline:
                raise self.not_ready_error(timeout_s)
            time.sleep(0.05)

    def not_ready_error(self, timeout_s: float) -> SwitchStartError:
        return SwitchStartError(
            f"switch {self.name}: gRPC port {self.grpc_addr} not accepting connections after "
            f"{timeout_s:g} s{self.diagnostics()}")

    def diagnostics(self) -> str:
        """The last lines of the switch's log and output, for error messages."""
        parts = []
        for path in self.log_paths():
            text = tail(path)
            if text:
                parts.append(f"\n--- last lines of {path}:\n{text}")
        return "".join(parts) or f" (log {self.log_file} is empty)"

    def log_paths(self) -> list[str]:
        return [self.log_file, self.launch_spec.output_file]

    def stop_process(self, grace_s: float = DEFAULT_STOP_GRACE_S) -> list[int]:
        """SIGTERM, then SIGKILL after ``grace_s``; returns pids that needed
        SIGKILL."""
        killed: list[int] = []
        if self.proc is not None:
            killed = stop_popen([self.proc], grace_s)
        self.close_output()
        return killed

    def close_output(self) -> None:
        if self._output is not None:
            self._output.close()
            self._output = None

    # Mininet's interface.

    def start(self, controllers: Sequence[Any] = ()) -> None:
        self.launch()
        self.wait_ready()
        self.after_ready()

    def stop(self, deleteIntfs: bool = True) -> None:
        self.stop_process()
        super().stop(deleteIntfs=deleteIntfs)


class BuiltinSwitchNode(P4SwitchNode):
    """The project's switch, ``aifabric-switch``."""

    target = "builtin"

    def binary(self) -> list[str]:
        return builtin_binary()

    def target_args(self) -> list[str]:
        spec = self.launch_spec
        args = ["--seed", str(switch_seed(spec.run_seed, spec.name)),
                "--rt-priority", str(REALTIME_PRIORITY)]
        return args + (["--port-config", spec.port_config_file] if spec.port_config_file else [])


class Bmv2SwitchNode(P4SwitchNode):
    """BMv2's ``simple_switch_grpc`` (installed in the Vagrant VM only)."""

    target = "bmv2"

    def binary(self) -> list[str]:
        return [bmv2.require_tool(bmv2.SWITCH_BINARY)]

    def log_paths(self) -> list[str]:
        # BMv2 may add ".txt" to the --log-file name, depending on its version.
        return [self.log_file, self.log_file + ".txt", self.launch_spec.output_file]

    def after_ready(self) -> None:
        spec = self.launch_spec
        bmv2.set_queues(self.name, spec.thrift_port, spec.ports, spec.queue_frame_bytes)


SWITCH_CLASSES: dict[str, type[P4SwitchNode]] = {
    "builtin": BuiltinSwitchNode,
    "bmv2": Bmv2SwitchNode,
}


def builtin_binary() -> list[str]:
    """``aifabric-switch`` next to the running interpreter (a venv's bin), else
    on PATH, else the module run by this interpreter."""
    beside = Path(sys.executable).parent / BUILTIN_BINARY
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside)]
    found = shutil.which(BUILTIN_BINARY)
    if found:
        return [found]
    return [sys.executable, "-m", BUILTIN_MODULE]

"""The NIC agent processes of a live run: one ``python -m emulator.traffic.agent``
per server, inside its namespace, with its config, stats and stderr files;
started together and waited for until each says ``ready``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

REPO = Path(__file__).resolve().parents[2]


class AgentStartError(RuntimeError):
    """An agent did not come up (its stderr tail is in the message)."""


class AgentProcess:
    """``python -m emulator.traffic.agent`` inside a server's namespace."""

    def __init__(self, server: str, netns: str, config: dict[str, Any], workdir: Path,
                 sockdir: Path, safety_s: float) -> None:
        self.server = server
        self.config_path = workdir / f"{server}.config.json"
        self.stats_path = workdir / f"{server}.stats.json"
        self.stderr_path = workdir / f"{server}.stderr.log"
        self.control = str(sockdir / f"{server}.sock")
        self.config_path.write_text(json.dumps(config, indent=1))
        self._stderr = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-m", "emulator.traffic.agent",
             "--config", str(self.config_path), "--stats", str(self.stats_path),
             "--control", self.control, "--duration", f"{safety_s:.3f}"],
            cwd=REPO, stdout=subprocess.PIPE, stderr=self._stderr, start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)})
        self.ready: dict[str, Any] | None = None
        self._buf = b""

    def poll_ready(self) -> bool:
        """Read the ``ready`` line if it is there; raise if the agent died."""
        if self.ready is not None:
            return True
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while select.select([fd], [], [], 0)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            self._buf += chunk
            if b"\n" in self._buf:
                line = self._buf.split(b"\n", 1)[0]
                self.ready = json.loads(line)
                return True
        if self.proc.poll() is not None:
            raise AgentStartError(f"agent of {self.server} exited with status "
                                  f"{self.proc.returncode}: {self.stderr_tail()}")
        return False

    def stderr_tail(self, limit: int = 400) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-limit:].strip()
        except OSError:
            return ""

    def stop(self, timeout_s: float = 10.0) -> dict[str, Any] | None:
        """SIGTERM, wait, SIGKILL if need be; the stats it wrote (None if none)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout_s)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._stderr.close()
        try:
            return json.loads(self.stats_path.read_text())
        except (OSError, ValueError):
            return None


def wait_ready(agents: Sequence[AgentProcess], timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not all(a.poll_ready() for a in agents):
        if time.monotonic() > deadline:
            late = [a.server for a in agents if a.ready is None]
            raise AgentStartError(f"agents not ready within {timeout_s:.0f} s: {', '.join(late)}")
        time.sleep(0.05)

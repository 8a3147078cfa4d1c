"""Capturing at a GPU's NIC: tcpdump on the GPU's interface inside its
server's namespace, for the run's ``capture`` points that name a GPU.

The capture sees what the NIC agent sends and receives on that interface
(RoCE data, ACKs, CNPs, the PFC frames the leaf sends it), with the
kernel's timestamps, the first ``max_packets`` frames. :class:`GpuCapture`
starts tcpdump and stops it (SIGINT, so it flushes and closes the file);
:meth:`GpuCapture.result` counts what the file holds.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path
from typing import Any


class GpuCaptureError(RuntimeError):
    """tcpdump did not start (missing, or the interface is not there)."""


class GpuCapture:
    """tcpdump on ``iface`` in namespace ``netns`` writing ``path``."""

    def __init__(self, point: str, netns: str, iface: str, path: Path, max_packets: int) -> None:
        self.point = point
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._stderr = path.with_suffix(".tcpdump.log")
        with open(self._stderr, "wb") as err:
            try:
                self.proc = subprocess.Popen(
                    ["ip", "netns", "exec", netns, "tcpdump", "-Z", "root", "-i", iface, "-U", "-s", "0",
                     "-c", str(max_packets), "-w", str(path)],
                    stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)
            except OSError as exc:
                raise GpuCaptureError(f"capture {point}: cannot run tcpdump: {exc}") from None

    def wait_listening(self, timeout_s: float = 5.0) -> None:
        """Wait until tcpdump says it listens (its first stderr line)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise GpuCaptureError(f"capture {self.point}: tcpdump exited: "
                                      f"{self._stderr.read_text(errors='replace').strip()}")
            if "listening" in self._stderr.read_text(errors="replace"):
                return
            time.sleep(0.02)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._stderr.unlink(missing_ok=True)

    def result(self, max_packets: int) -> dict[str, Any]:
        from emulator.measure.inspect import InspectError, read_pcap_frames

        try:
            packets = len(read_pcap_frames(self.path))
        except InspectError:
            packets = 0
        return {"file": str(self.path.relative_to(self.path.parent.parent)), "packets": packets,
                "seen": None, "truncated": packets >= max_packets}

"""What the P4Runtime server needs from a switch, and a fake one for tests.

The switch process implements :class:`DeviceHandle`; the server never
touches its ports or threads. Control-plane mutations go through
:meth:`DeviceHandle.call_in_dataplane` so they happen between two packets;
packet-ins and digests come back through the handlers the server installs.
"""

from __future__ import annotations

import threading
from typing import Callable, Protocol, TypeVar

from p4.config.v1 import p4info_pb2

from emulator.p4.exec.pipeline import ProcessResult, V1ModelPipeline

T = TypeVar("T")

#: Builds the pipeline of a ``SetForwardingPipelineConfig`` from the P4Info
#: and the ``p4_device_config`` bytes; raises (any exception) on a config
#: the target cannot run — the message goes back as INVALID_ARGUMENT.
DeviceConfigLoader = Callable[[p4info_pb2.P4Info, bytes], V1ModelPipeline]
PacketInHandler = Callable[[bytes], None]
DigestHandler = Callable[[str, object], None]


class DeviceHandle(Protocol):
    """The switch as the P4Runtime server sees it."""

    def call_in_dataplane(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` while no packet is in the pipeline; return its result
        (exceptions propagate)."""

    def set_pipeline(self, pipeline: V1ModelPipeline | None) -> None:
        """Make ``pipeline`` the one packets go through (None: drop all)."""

    def inject_packet_out(self, data: bytes) -> None:
        """A PacketOut: ``data`` (packet_out header + payload) enters ingress
        on the CPU port."""

    def set_packet_in_handler(self, fn: PacketInHandler | None) -> None:
        """``fn(frame)`` for every frame the pipeline sends to the CPU port."""

    def set_digest_handler(self, fn: DigestHandler | None) -> None:
        """``fn(type_name, value)`` for every digest the pipeline emits."""


class FakeDevice:
    """A :class:`DeviceHandle` that runs the pipeline in the calling thread.

    :meth:`inject` pushes a frame received on a port through the pipeline;
    frames to ``cpu_port`` go to the packet-in handler, the others are
    appended to :attr:`sent` as (port, frame)."""

    def __init__(self, cpu_port: int | None = None) -> None:
        self.cpu_port = cpu_port
        self.pipeline: V1ModelPipeline | None = None
        self.sent: list[tuple[int, bytes]] = []
        self.dropped = 0
        self._lock = threading.RLock()
        self._packet_in: PacketInHandler | None = None
        self._digest: DigestHandler | None = None

    def call_in_dataplane(self, fn: Callable[[], T]) -> T:
        with self._lock:
            return fn()

    def set_pipeline(self, pipeline: V1ModelPipeline | None) -> None:
        with self._lock:
            self.pipeline = pipeline

    def inject_packet_out(self, data: bytes) -> None:
        if self.cpu_port is None:
            raise RuntimeError("the fake device has no CPU port")
        self.inject(self.cpu_port, data)

    def set_packet_in_handler(self, fn: PacketInHandler | None) -> None:
        self._packet_in = fn

    def set_digest_handler(self, fn: DigestHandler | None) -> None:
        self._digest = fn

    def inject(self, port: int, data: bytes) -> ProcessResult:
        """Process a frame received on ``port``; returns what the pipeline did."""
        with self._lock:
            if self.pipeline is None:
                self.dropped += 1
                return ProcessResult(dropped=1)
            result = self.pipeline.process(port, data)
            self.dropped += result.dropped
        for out in result.outputs:
            if out.port == self.cpu_port and self._packet_in is not None:
                self._packet_in(out.data)
            else:
                self.sent.append((out.port, out.data))
        if self._digest is not None:
            for name, value in result.digests:
                self._digest(name, value)
        return result

"""The built-in switch target: a P4 switch in one Python process.

Modules, from the wire inwards:

- :mod:`.ports` — port back ends (AF_PACKET sockets, in-memory fakes, the
  CPU port) and port counters;
- :mod:`.pfc` — PFC frames and pause timers (the MAC, below P4);
- :mod:`.tm` — the traffic manager's per-port per-priority queues and their
  counters;
- :mod:`.eventheap` — the heap of timed events (C structs where compiled):
  the data plane's timers and the virtual-time engine's events;
- :mod:`.dataplane` — receive → ingress → queues → egress → serialisation,
  delay → send, timed on virtual per-port clocks;
- :mod:`.switch` — the data-plane thread and the control plane's way in
  (:meth:`Switch.call_in_dataplane`);
- :mod:`.queue_control`, :mod:`.server` — the gRPC server and the
  ``aifabric.QueueControl`` service;
- :mod:`.config`, :mod:`.loader`, :mod:`.pcap`, :mod:`.cli` — settings,
  device configs, captures, the ``aifabric-switch`` command.
"""

from emulator.targets.builtin.config import PortConfig, SwitchOptions
from emulator.targets.builtin.dataplane import DataPlane
from emulator.targets.builtin.errors import (
    PipelineLoadError, PortConfigError, SwitchError, UnknownPortError,
)
from emulator.targets.builtin.ports import CpuPort, FakePort, RawPort
from emulator.targets.builtin.switch import Switch

__all__ = ["CpuPort", "DataPlane", "FakePort", "PipelineLoadError", "PortConfig",
           "PortConfigError", "RawPort", "Switch", "SwitchError", "SwitchOptions",
           "UnknownPortError"]

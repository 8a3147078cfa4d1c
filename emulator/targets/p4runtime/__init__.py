"""The P4Runtime server of the built-in target (P4Runtime 1.4.1 semantics,
behaving like PI/BMv2's server where the spec leaves room).

The switch calls :func:`add_p4runtime_service` with its
:class:`~.device.DeviceHandle` and a :data:`~.device.DeviceConfigLoader`;
tests use :class:`~.device.FakeDevice`. Layers, as p4runtime-shell has them:

- :mod:`.server` — the gRPC servicer (RPCs, stream, config changes);
- :mod:`.arbitration` — primary/backup election;
- :mod:`emulator.p4.p4info.index` and :mod:`.context` — P4Info ids and names bound to
  the executor's pipeline objects;
- :mod:`.entities` dispatching to :mod:`.table_entries`, :mod:`.profiles`,
  :mod:`.pre`, :mod:`.resources` and :mod:`.digests`;
- :mod:`.codec` (bytestrings, ``P4Data``), :mod:`.packet_io` (controller
  headers), :mod:`.errors` (statuses with per-update details),
  :mod:`.p4config` (BMv2's ``p4.tmp.P4DeviceConfig`` wrapper), :mod:`.idle`
  (idle-timeout notifications).

Only :mod:`emulator.p4` is imported from the project.
"""

from emulator.targets.p4runtime.device import DeviceConfigLoader, DeviceHandle, FakeDevice
from emulator.targets.p4runtime.errors import P4RuntimeError
from emulator.targets.p4runtime.server import (
    P4RUNTIME_API_VERSION, P4RuntimeServicer, add_p4runtime_service,
)

__all__ = [
    "DeviceConfigLoader", "DeviceHandle", "FakeDevice", "P4RUNTIME_API_VERSION",
    "P4RuntimeError", "P4RuntimeServicer", "add_p4runtime_service",
]

"""The switch's gRPC server: one ``grpc.server`` on ``--grpc-server-addr``
carrying every control service of the switch.

Services plug in as *service hooks*, ``hook(server, switch)``, called before
the server starts: :func:`~.queue_control.add_queue_control` is one; the
P4Runtime service is another. :class:`~.switch.Switch` is the P4Runtime
server's ``DeviceHandle`` (``call_in_dataplane``, ``set_pipeline``,
``inject_packet_out``, ``set_packet_in_handler``, ``set_digest_handler``), so
its hook is::

    lambda server, switch: add_p4runtime_service(
        server, switch, switch.options.device_id, loader,
        cpu_port=switch.options.cpu_port)

Addresses: ``host:port`` (port 0 picks a free one, see :attr:`ControlServer.port`)
or ``unix:PATH``; the socket file of a ``unix:`` address is removed at stop.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Sequence

import grpc

from emulator.targets.builtin.errors import SwitchError
from emulator.targets.builtin.switch import Switch

# A hook may return an object with close() (a servicer with threads of its
# own); the server calls it at stop.
ServiceHook = Callable[[grpc.Server, Switch], object]


class ControlServer:
    """A started-on-demand ``grpc.server`` with the services of ``hooks``.

    Every open P4Runtime ``StreamChannel`` holds a worker thread for as long
    as the controller stays connected, so the pool is sized for many
    controllers (threads start only when needed); beyond ``max_workers``
    concurrent RPCs a new one fails at once with ``RESOURCE_EXHAUSTED``
    instead of waiting forever for a worker.
    """

    def __init__(self, switch: Switch, address: str, hooks: Sequence[ServiceHook],
                 max_workers: int = 64) -> None:
        self.address = address
        self._server = grpc.server(ThreadPoolExecutor(max_workers=max_workers,
                                                      thread_name_prefix="aifabric-grpc"),
                                   maximum_concurrent_rpcs=max_workers)
        self._closers = []
        for hook in hooks:
            added = hook(self._server, switch)
            if callable(getattr(added, "close", None)):
                self._closers.append(added)
        try:
            self.port = self._server.add_insecure_port(address)
        except RuntimeError as exc:
            raise SwitchError(f"gRPC server cannot listen on {address}: {exc}") from None
        if not self.port and not address.startswith("unix:"):
            raise SwitchError(f"gRPC server cannot listen on {address}")
        self._unix_path = _unix_path(address)

    def start(self) -> None:
        self._server.start()

    def stop(self, grace_s: float = 0.5) -> None:
        self._server.stop(grace_s).wait()
        for servicer in self._closers:
            servicer.close()
        if self._unix_path and os.path.exists(self._unix_path):
            os.unlink(self._unix_path)


def _unix_path(address: str) -> str | None:
    if address.startswith("unix://"):
        return address[len("unix://"):]
    if address.startswith("unix:"):
        return address[len("unix:"):]
    return None

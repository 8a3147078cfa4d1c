"""Mininet classes for servers and links (switch classes: :mod:`.switches`).

Mininet's division of labour holds: nodes run commands, interfaces
configure themselves, links connect nodes. What changes is how:

- :class:`FabricLink` is a plain veth pair (``mininet.link.Link``, no
  TCLink: there is no netem here; rate and delay are the switch target's
  job) created over netlink, with both MACs set at creation.
- :class:`FabricIntf` does nothing in ``config()``: addresses, MTU, state
  and offloads are applied in bulk over netlink by :mod:`.netlink` from the
  plan of :mod:`.plan`, instead of one ``ifconfig`` process per setting.
- :class:`FabricHost` is a server: one Mininet host (its own network
  namespace, entered with ``host.cmd``/``host.popen`` as usual) with one NIC
  per GPU.
"""

from __future__ import annotations

from typing import Any

from mininet.link import Intf, Link
from mininet.node import Host, Node
from pyroute2 import IPRoute

from emulator.network import netlink
from emulator.network.errors import NetworkError


class FabricIntf(Intf):
    """An interface configured over netlink by the network layer."""

    def config(self, **_params: Any) -> dict:  # type: ignore[override]
        return {}


class FabricLink(Link):
    """A veth pair made over netlink. ``root_ipr`` is an ``IPRoute`` of the
    root namespace; at least one end must be on a node of that namespace
    (switches are), and that end is the one created and deleted there."""

    def __init__(self, node1: Node, node2: Node, *, root_ipr: IPRoute, **params: Any) -> None:
        self.root_ipr = root_ipr
        params.setdefault("intf", FabricIntf)
        super().__init__(node1, node2, **params)

    # Mininet calls this on the instance ("override to change link type").
    def makeIntfPair(  # type: ignore[override]
            self, intfname1: str, intfname2: str, addr1: str | None = None,
            addr2: str | None = None, node1: Node | None = None, node2: Node | None = None,
            deleteIntfs: bool = True) -> None:
        if node1 is None or node2 is None or addr1 is None or addr2 is None:
            raise NetworkError("FabricLink needs both nodes and both MAC addresses")
        if not node1.inNamespace:
            netlink.create_veth(self.root_ipr, intfname1, addr1, intfname2, addr2,
                                node2.pid if node2.inNamespace else None)
        elif not node2.inNamespace:
            netlink.create_veth(self.root_ipr, intfname2, addr2, intfname1, addr1, node1.pid)
        else:
            raise NetworkError(f"link {node1.name}-{node2.name}: one end must be in the root "
                               "namespace")

    def root_end(self) -> Intf:
        return self.intf1 if not self.intf1.node.inNamespace else self.intf2

    def delete(self) -> None:
        netlink.delete_links(self.root_ipr, [self.root_end().name])
        for intf in (self.intf1, self.intf2):
            intf.node.delIntf(intf)
            intf.link = None

    def stop(self) -> None:
        self.delete()


class FabricHost(Host):
    """A server: one Mininet host, NICs named ``srv{s}-eth{r}``."""

    @property
    def netns_path(self) -> str:
        """The host's network namespace, usable while its shell runs."""
        if self.pid is None:
            raise NetworkError(f"host {self.name} has no shell")
        return f"/proc/{self.pid}/ns/net"

    def counters(self) -> dict[str, dict[str, int]]:
        """Interface counters of this host (see :func:`.netlink.link_counters`)."""
        with IPRoute(netns=self.netns_path, flags=0) as ipr:
            return netlink.link_counters(ipr, self.intfNames())

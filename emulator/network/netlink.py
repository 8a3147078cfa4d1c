"""Kernel network configuration over netlink (pyroute2) and ethtool ioctls:
veth pairs, addresses, neighbours, policy rules, routes, offloads,
sysctls, counters and namespace bind mounts. No ``ip``, ``tc`` or
``ethtool`` processes.

Namespaces: rtnetlink calls in a host's namespace use pyroute2's
``IPRoute(netns="/proc/<pid>/ns/net")`` (pyroute2 0.9 opens the socket in
a short-lived child that enters the namespace). Ethtool ioctls and
``/proc/sys/net`` writes bind to the namespace of the calling *thread*, so
:func:`in_netns` runs them in a fresh thread that has entered the
namespace with ``setns(2)``; the caller's threads never move.
"""

from __future__ import annotations

import ctypes
import errno
import os
import socket
import threading
from typing import Any, Callable, Iterable, Mapping, Sequence, TypeVar

from pyroute2 import IPRoute, NetlinkError
from pyroute2 import netns as pyroute2_netns
from pyroute2.ethtool import Ethtool

from emulator.network.errors import NetworkError
from emulator.network.plan import DEFAULT_ROUTE, HostPlan, PortPlan

T = TypeVar("T")
CLONE_NEWNET = 0x40000000
NUD_PERMANENT = 0x80
RTNH_F_ONLINK = 0x4
IFA_F_NOPREFIXROUTE = 0x200
NETNS_RUN_DIR = "/run/netns"
SO_RCVBUFFORCE = 33
# sysctls of every host namespace: no IPv6 (no router solicitations or DAD
# frames on the fabric), no reverse-path filter (replies may come back on
# another NIC than the request left by).
HOST_SYSCTLS = {
    "net/ipv6/conf/all/disable_ipv6": "1",
    "net/ipv6/conf/default/disable_ipv6": "1",
    "net/ipv4/conf/all/rp_filter": "0",
    "net/ipv4/conf/default/rp_filter": "0",
}
# Offloads off: an AF_PACKET switch port would read a TSO/GSO/GRO
# super-frame as one frame, and a frame sent with a partial checksum arrives
# at the next host with a wrong one.
_OFFLOAD_PREFIXES = ("tx-checksum", "rx-checksum", "tx-scatter-gather", "tx-gso", "rx-gro",
                     "rx-lro", "rx-udp-gro")
_COUNTER_KEYS = ("rx_packets", "rx_bytes", "rx_dropped", "rx_errors",
                 "tx_packets", "tx_bytes", "tx_dropped", "tx_errors")


def is_offload_feature(name: str) -> bool:
    return name.startswith(_OFFLOAD_PREFIXES) or name.endswith("segmentation")


def in_netns(path: str, fn: Callable[[], T]) -> T:
    """``fn()`` run in a new thread that has entered the network namespace at
    ``path``; its result or exception is passed on."""
    result: list[Any] = []

    def work() -> None:
        try:
            libc = ctypes.CDLL(None, use_errno=True)
            fd = os.open(path, os.O_RDONLY)
            try:
                if libc.setns(fd, CLONE_NEWNET) != 0:
                    err = ctypes.get_errno()
                    raise OSError(err, f"setns({path}): {os.strerror(err)}")
            finally:
                os.close(fd)
            result.append((True, fn()))
        except BaseException as exc:  # handed to the calling thread
            result.append((False, exc))

    thread = threading.Thread(target=work, name=f"netns {path}", daemon=True)
    thread.start()
    thread.join()
    ok, value = result[0]
    if not ok:
        raise value
    return value


def packet_socket(netns: str, ifname: str, ethertype: int = 0x0003,
                  rcvbuf_bytes: int = 0) -> socket.socket:
    """An AF_PACKET socket bound to ``ifname`` of a namespace (a name under
    /run/netns or a path); it stays in that namespace whatever thread uses
    it. ``ethertype`` 3 (ETH_P_ALL) receives every frame; ``rcvbuf_bytes``
    forces the receive buffer past the sysctl limit (root)."""
    path = netns if netns.startswith("/") else f"{NETNS_RUN_DIR}/{netns}"

    def make() -> socket.socket:
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ethertype))
        sock.bind((ifname, ethertype))
        return sock
    sock = in_netns(path, make)
    if rcvbuf_bytes:
        sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf_bytes)
    return sock


def write_sysctls(values: Mapping[str, str]) -> None:
    """Write ``/proc/sys/<key>`` values in the calling thread's namespace."""
    for key, value in values.items():
        with open(f"/proc/sys/{key}", "w") as handle:
            handle.write(value)


def disable_offloads(ifnames: Iterable[str]) -> None:
    """Turn checksum, segmentation and receive offloads off on interfaces of
    the calling thread's namespace."""
    tool = Ethtool()
    try:
        for ifname in ifnames:
            features = tool.get_features(ifname)
            changed = False
            for name, feature in features.features.items():
                if feature.available and feature.enable and is_offload_feature(name):
                    feature.enable = False
                    changed = True
            if changed:
                tool.set_features(ifname, features)
    finally:
        tool.close()


def create_veth(ipr: IPRoute, name: str, mac: str, peer_name: str, peer_mac: str,
                peer_pid: int | None = None) -> None:
    """A veth pair: ``name`` in ``ipr``'s namespace, ``peer_name`` in the
    namespace of ``peer_pid`` (or the same one)."""
    peer: dict[str, Any] = {"ifname": peer_name, "address": peer_mac}
    if peer_pid is not None:
        peer["net_ns_pid"] = peer_pid
    try:
        ipr.link("add", ifname=name, kind="veth", address=mac, peer=peer)
    except NetlinkError as exc:
        raise NetworkError(f"cannot create veth {name} <-> {peer_name}: {exc.args[-1]}") from None


def link_names(ipr: IPRoute) -> list[str]:
    return [link.get_attr("IFLA_IFNAME") for link in ipr.get_links()]


def delete_links(ipr: IPRoute, names: Iterable[str]) -> list[str]:
    """Delete interfaces by name (deleting one end of a veth deletes both);
    returns those that existed."""
    deleted = []
    for name in names:
        try:
            ipr.link("del", ifname=name)
            deleted.append(name)
        except NetlinkError as exc:
            if exc.code not in (errno.ENODEV, errno.ENOENT):
                raise NetworkError(f"cannot delete interface {name}: {exc.args[-1]}") from None
    return deleted


def set_up_switch_ports(ipr: IPRoute, ports: Sequence[PortPlan], mtu: int) -> None:
    """IPv6 off (no router solicitations or MLD reports towards the hosts),
    alias, MTU, up and offloads off, for switch ports in ``ipr``'s
    namespace (the caller's: the root namespace)."""
    write_sysctls({f"net/ipv6/conf/{p.ifname}/disable_ipv6": "1" for p in ports})
    for port in ports:
        index = _index(ipr, port.ifname)
        ipr.link("set", index=index, ifalias=port.alias, mtu=mtu, state="up")
    disable_offloads(p.ifname for p in ports)


def apply_host_plan(netns_path: str, plan: HostPlan) -> None:
    """Configure a host's namespace as ``plan`` says (module :mod:`.plan`)."""
    def prepare() -> None:
        sysctls = dict(HOST_SYSCTLS)
        for nic in plan.nics:
            sysctls[f"net/ipv6/conf/{nic.ifname}/disable_ipv6"] = "1"
            sysctls[f"net/ipv4/conf/{nic.ifname}/rp_filter"] = "0"
        write_sysctls(sysctls)
        disable_offloads(nic.ifname for nic in plan.nics)

    try:
        in_netns(netns_path, prepare)
        with IPRoute(netns=netns_path, flags=0) as ipr:
            ipr.link("set", index=_index(ipr, "lo"), state="up")
            index = {nic.ifname: _index(ipr, nic.ifname) for nic in plan.nics}
            for nic in plan.nics:
                ipr.link("set", index=index[nic.ifname], address=nic.mac, mtu=nic.mtu, state="up")
                ipr.addr("add", index=index[nic.ifname], address=nic.ip,
                         prefixlen=nic.prefix_len, flags=IFA_F_NOPREFIXROUTE)
            for neighbour in plan.neighbours:
                ipr.neigh("replace", dst=neighbour.ip, lladdr=neighbour.mac,
                          ifindex=index[neighbour.ifname], state=NUD_PERMANENT)
            for rule in plan.rules:
                ipr.rule("add", table=rule.table, priority=rule.priority, src=rule.src,
                         src_len=32)
            for route in plan.routes:
                ipr.route("add", dst=route.dst, gateway=route.gateway,
                          oif=index[route.ifname], table=route.table, flags=RTNH_F_ONLINK)
    except (NetlinkError, OSError) as exc:
        raise NetworkError(f"configuring host {plan.server}: {exc}") from None


def configure_plain_host(netns_path: str, ifname: str, mac: str, ip: str, prefix_len: int,
                         mtu: int, rate_bps: int = 0) -> None:
    """A host as Mininet sets one up (the p4lang tutorials' hosts): one NIC
    with its MAC and an address *with* its on-link route, IPv6 and offloads
    off; a token bucket at ``rate_bps`` on the NIC when non-zero. Routes and
    neighbours are left to the host's own commands."""
    def prepare() -> None:
        write_sysctls({**HOST_SYSCTLS, "net/ipv6/conf/lo/disable_ipv6": "1",
                       f"net/ipv6/conf/{ifname}/disable_ipv6": "1"})
        disable_offloads([ifname])

    try:
        in_netns(netns_path, prepare)
        with IPRoute(netns=netns_path, flags=0) as ipr:
            ipr.link("set", index=_index(ipr, "lo"), state="up")
            index = _index(ipr, ifname)
            ipr.link("set", index=index, address=mac, mtu=mtu, state="up")
            ipr.addr("add", index=index, address=ip, prefixlen=prefix_len)
            if rate_bps:
                # Burst: at least one MTU frame and 10 ms at the rate.
                burst_bytes = max(mtu + 100, rate_bps // 800)
                ipr.tc("add", "tbf", index=index, handle="1:", rate=f"{rate_bps}bit",
                       burst=burst_bytes, latency="100ms")
    except (NetlinkError, OSError) as exc:
        raise NetworkError(f"configuring host NIC {ifname}: {exc}") from None


def read_host_config(netns_path: str) -> dict[str, Any]:
    """What a host's namespace holds, in :mod:`.plan`'s terms: ``links``
    (name → mac, mtu, up), ``addresses`` (name → [ip/len]),
    ``neighbours`` [(name, ip, mac, permanent)], ``rules`` [(src, table,
    priority)] and ``routes`` [(dst, gateway, name, table)] (IPv4,
    ``proto static`` only)."""
    with IPRoute(netns=netns_path, flags=0) as ipr:
        names = {}
        links = {}
        for link in ipr.get_links():
            name = link.get_attr("IFLA_IFNAME")
            names[link["index"]] = name
            links[name] = {"mac": link.get_attr("IFLA_ADDRESS"), "mtu": link.get_attr("IFLA_MTU"),
                           "up": bool(link["flags"] & 1)}
        addresses: dict[str, list[str]] = {}
        for addr in ipr.get_addr():
            addresses.setdefault(names.get(addr["index"], "?"), []).append(
                f"{addr.get_attr('IFA_ADDRESS')}/{addr['prefixlen']}")
        neighbours = [(names.get(n["ifindex"], "?"), n.get_attr("NDA_DST"),
                       n.get_attr("NDA_LLADDR"), bool(n["state"] & NUD_PERMANENT))
                      for n in ipr.get_neighbours(family=2)]
        rules = [(r.get_attr("FRA_SRC"), r.get_attr("FRA_TABLE") or r["table"],
                  r.get_attr("FRA_PRIORITY")) for r in ipr.get_rules(family=2)
                 if r.get_attr("FRA_SRC")]
        routes = []
        for route in ipr.get_routes(family=2):  # every table
            if route["proto"] != 4:  # RTPROT_STATIC
                continue
            dst = route.get_attr("RTA_DST")
            dst = f"{dst}/{route['dst_len']}" if dst else DEFAULT_ROUTE
            routes.append((dst, route.get_attr("RTA_GATEWAY"),
                           names.get(route.get_attr("RTA_OIF"), "?"),
                           route.get_attr("RTA_TABLE") or route["table"]))
    return {"links": links, "addresses": addresses, "neighbours": neighbours,
            "rules": rules, "routes": routes}


def link_counters(ipr: IPRoute, names: Iterable[str] | None = None) -> dict[str, dict[str, int]]:
    """Interface counters (``rx_packets``, ``rx_bytes``, ``rx_dropped``,
    ``rx_errors`` and the ``tx_`` ones) by interface name."""
    wanted = set(names) if names is not None else None
    out = {}
    for link in ipr.get_links():
        name = link.get_attr("IFLA_IFNAME")
        if wanted is not None and name not in wanted:
            continue
        stats = link.get_attr("IFLA_STATS64") or link.get_attr("IFLA_STATS") or {}
        out[name] = {key: int(stats.get(key, 0)) for key in _COUNTER_KEYS}
    return out


def bind_netns(name: str, pid: int) -> str:
    """Bind-mount the namespace of ``pid`` at /run/netns/<name> (as ``ip
    netns attach`` does); returns the path."""
    path = os.path.join(NETNS_RUN_DIR, name)
    try:
        pyroute2_netns.attach(path, pid)
    except OSError as exc:
        raise NetworkError(f"cannot bind-mount the namespace of pid {pid} at {path}: "
                           f"{exc.strerror or exc}") from None
    return path


def unbind_netns(path: str) -> bool:
    """Unmount and remove a namespace bind mount; False if it was not there."""
    if not os.path.lexists(path):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    libc.umount2(path.encode(), 2)  # MNT_DETACH; fails harmlessly if not mounted
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def _index(ipr: IPRoute, ifname: str) -> int:
    found = ipr.link_lookup(ifname=ifname)
    if not found:
        raise NetworkError(f"no interface {ifname}")
    return found[0]

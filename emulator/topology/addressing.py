"""The addressing plan: IPv4 and MAC addresses, router ids, interface names.

Every value is a pure function of the topology's shape, so it is unique inside
a topology and the same on every run.

- **Leaf prefixes.** Every switch hosts plug into (leaf, ToR, fat-tree edge)
  owns one /24: ``10.{rail}.{leaf}.0/24``, where ``rail`` is the leaf's rail
  (0 in designs without rails) and ``leaf`` its number inside that rail
  (``leaf-r1-0`` owns ``10.1.0.0/24``; ``tor2`` owns ``10.0.2.0/24``; fat-tree
  edge ``i`` of pod ``p`` is leaf ``p*k/2 + i`` of plane 0). Routes between
  leaves are one prefix per leaf. All prefixes sit in ``10.0.0.0/8``.
- **NIC addresses.** A NIC gets ``10.{rail}.{leaf}.{port}``: the last octet is
  the leaf port it is plugged into (ports count from 1, hosts first). In a
  rail-optimized fabric that is ``s % servers_per_leaf + 1``, so GPU ``r`` of
  server ``s`` is ``10.{r}.{s // servers_per_leaf}.{s % servers_per_leaf + 1}``
  (``srv2/gpu1`` of rail-4x4 is ``10.1.0.3``).
- **Gateway.** Each leaf prefix has the virtual gateway ``10.{rail}.{leaf}.254``
  answered by the leaf; a NIC's gateway MAC is the MAC of the leaf port it is
  plugged into. A host reaches every other NIC via its own NIC's gateway.
- **NIC MACs.** ``02:00:`` + the four IPv4 octets in hex (``10.1.0.3`` ->
  ``02:00:0a:01:00:03``): locally administered, unicast, readable.
- **Switch port MACs.** ``02:01:{switch index, 2 bytes}:{port, 2 bytes}``, the
  switch index being its position in ``Topology.switches``.
- **Scale-up ports.** GPU port ``n`` (counting from 1 in the domain's GPU
  order) of scale-up domain ``d`` is ``10.{128 + d // 256}.{d % 256}.{n}``:
  rails stop at 63, so the range never meets a leaf prefix; its MAC follows
  the NIC rule. The domain's switch owns no routed prefix (nothing outside
  the domain reaches it).
- **Router ids.** ``10.255.{index // 256}.{index % 256}``; rail 255 never
  exists (at most 64 GPUs per server), so router ids collide with no NIC.
- **Interface names.** Host NIC ``r`` of ``srv{s}`` is ``srv{s}-eth{r}``;
  switch port ``n`` is ``{switch}-eth{n}``, or ``s{index}-eth{n}`` when that
  would pass the 15 characters Linux allows.
"""

from __future__ import annotations

FABRIC_SUPERNET = "10.0.0.0/8"
LEAF_PREFIX_LEN = 24
GATEWAY_HOST_OCTET = 254
MAX_INTF_NAME_CHARS = 15
SCALE_UP_SECOND_OCTET = 128
# Second octets 128..254 (255 holds router ids), 256 domains each.
MAX_SCALE_UP_DOMAINS = (255 - SCALE_UP_SECOND_OCTET) * 256
MAX_GPUS_PER_DOMAIN = GATEWAY_HOST_OCTET - 1


def leaf_prefix(rail: int, leaf_index: int) -> str:
    return f"10.{rail}.{leaf_index}.0/{LEAF_PREFIX_LEN}"


def nic_ip(rail: int, leaf_index: int, leaf_port: int) -> str:
    return f"10.{rail}.{leaf_index}.{leaf_port}"


def scale_up_ip(domain: int, port: int) -> str:
    return f"10.{SCALE_UP_SECOND_OCTET + domain // 256}.{domain % 256}.{port}"


def gateway_ip(rail: int, leaf_index: int) -> str:
    return f"10.{rail}.{leaf_index}.{GATEWAY_HOST_OCTET}"


def nic_mac(ip: str) -> str:
    octets = [int(part) for part in ip.split(".")]
    return "02:00:" + ":".join(f"{octet:02x}" for octet in octets)


def switch_port_mac(switch_index: int, port: int) -> str:
    return (f"02:01:{switch_index >> 8 & 0xFF:02x}:{switch_index & 0xFF:02x}:"
            f"{port >> 8 & 0xFF:02x}:{port & 0xFF:02x}")


def router_id(switch_index: int) -> str:
    return f"10.255.{switch_index // 256}.{switch_index % 256}"


def host_intf(server: str, nic_index: int) -> str:
    return f"{server}-eth{nic_index}"


def switch_intf(switch: str, switch_index: int, port: int) -> str:
    name = f"{switch}-eth{port}"
    if len(name) <= MAX_INTF_NAME_CHARS:
        return name
    return f"s{switch_index}-eth{port}"

"""Where every server, GPU NIC and switch of a topology goes in a picture.

Servers sit at the bottom as boxes holding one NIC per GPU; switches sit
above in tiers (leaves, then spines; fat-tree: edge, aggregation, core),
the leaves serving a group of servers above that group, by rail. The
layout is in inches (boxes and text keep their size whatever the fabric's
size; the picture grows instead), with y growing upwards. Pure data, no
drawing library: ``topo draw`` (:mod:`.draw`, matplotlib) and the web view
(:mod:`emulator.view`, a browser) both place things from it.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.topology.model import Switch, Topology

NIC_PITCH_IN = 0.17  # between NIC dots of one server, at least
NIC_PITCH_MAX_IN = 0.4  # when there is room to spare
SERVER_PAD_IN = 0.12  # server box margin left and right of the dots
SERVER_MIN_WIDTH_IN = 0.5  # room for the server's name
SERVER_GAP_IN = 0.22
SERVER_HEIGHT_IN = 0.42
SWITCH_PITCH_MIN_IN = 1.0
MIN_WIDTH_IN = 5.8  # room for the title
SWITCH_WIDTH_IN = 0.86
SWITCH_HEIGHT_IN = 0.4
FABRIC_GAP_IN = 1.25  # between switch tiers, box centre to box centre


@dataclass(frozen=True)
class Box:
    """A rectangle by its centre and size (inches)."""

    x: float  # centre
    y: float  # centre
    width: float
    height: float

    @property
    def top(self) -> float:
        return self.y + self.height / 2

    @property
    def bottom(self) -> float:
        return self.y - self.height / 2


@dataclass(frozen=True)
class TopologyLayout:
    """The positions of one topology (see the module docstring)."""

    width_in: float
    height_in: float
    servers: dict[str, Box]      # server name -> its box
    nics: dict[str, tuple[float, float]]  # GPU name -> its NIC's dot
    switches: dict[str, Box]     # switch name -> its box
    tiers: list[list[Switch]]    # switch rows, bottom to top
    tier_y: list[float]          # the centre line of each row
    tier_names: list[str]        # "leaves", "spines", ... (bottom to top)


def switch_tiers(topology: Topology) -> list[list[Switch]]:
    """Switch rows from bottom to top, each in drawing order (left to right)."""
    if topology.kind == "fat-tree":
        return [list(topology.switches_with_role(role)) for role in ("edge", "agg", "core")]
    leaves = list(topology.leaves)
    # The leaves serving one group of servers go above that group, by rail.
    leaves.sort(key=lambda leaf: (leaf.leaf_index or 0, leaf.rail or 0))
    return [leaves, list(topology.switches_with_role("spine"))]


def tier_names(topology: Topology) -> list[str]:
    if topology.kind == "fat-tree":
        return ["edge", "aggregation", "core"]
    return ["leaves" if topology.kind == "rail-optimized" else "ToR leaves", "spines"]


def _server_width(gpus_per_server: int, nic_pitch_in: float) -> float:
    return max((gpus_per_server - 1) * nic_pitch_in + 2 * SERVER_PAD_IN, SERVER_MIN_WIDTH_IN)


def layout_topology(topology: Topology) -> TopologyLayout:
    """Place every server, NIC and switch of ``topology`` (module docstring)."""
    gpus_per_server = topology.spec.gpus_per_server
    tiers = switch_tiers(topology)
    server_width = _server_width(gpus_per_server, NIC_PITCH_IN)
    width = max(len(topology.servers) * (server_width + SERVER_GAP_IN),
                max(len(tier) for tier in tiers) * SWITCH_PITCH_MIN_IN, MIN_WIDTH_IN)
    server_pitch = width / len(topology.servers)
    # Spread the NICs of a server when the servers have room to spare.
    nic_pitch = NIC_PITCH_IN
    if gpus_per_server > 1:
        spare = (0.6 * server_pitch - 2 * SERVER_PAD_IN) / (gpus_per_server - 1)
        nic_pitch = min(max(spare, NIC_PITCH_IN), NIC_PITCH_MAX_IN)
    server_width = _server_width(gpus_per_server, nic_pitch)
    # Host links of a rail-optimized fabric cross each other; give them height.
    crossing = gpus_per_server if topology.kind == "rail-optimized" else 1
    host_gap = 0.95 + 0.11 * min(crossing, 8)
    tier_y = [SERVER_HEIGHT_IN + host_gap + level * FABRIC_GAP_IN for level in range(len(tiers))]
    height = tier_y[-1] + SWITCH_HEIGHT_IN / 2 + (0.25 if topology.kind == "fat-tree" else 0.05)

    nics: dict[str, tuple[float, float]] = {}
    servers: dict[str, Box] = {}
    for server in topology.servers:
        box = Box((server.index + 0.5) * server_pitch, SERVER_HEIGHT_IN / 2, server_width,
                  SERVER_HEIGHT_IN)
        servers[server.name] = box
        first_x = box.x - (gpus_per_server - 1) * nic_pitch / 2
        for gpu_name in server.gpus:
            nics[gpu_name] = (first_x + topology.gpu(gpu_name).index * nic_pitch,
                              SERVER_HEIGHT_IN * 0.7)
    switches: dict[str, Box] = {}
    for tier, y in zip(tiers, tier_y):
        pitch = width / len(tier)
        for i, switch in enumerate(tier):
            switches[switch.name] = Box((i + 0.5) * pitch, y, min(SWITCH_WIDTH_IN, pitch * 0.86),
                                        SWITCH_HEIGHT_IN)
    return TopologyLayout(width, height, servers, nics, switches, tiers, tier_y,
                          tier_names(topology))

"""Where every host, NIC and switch of a topology goes in a picture.

Servers sit in a row as boxes holding one dot per NIC; the backend's
switches sit above in tiers (leaves, then spines; fat-tree: edge,
aggregation, core; then border switches where there are sites), the leaves
serving a group of servers above that group, by rail. Storage nodes and
front-end clients sit in the server row right of the servers; the switches
of a front-end or storage fabric sit below the row (leaves, then spines), so
the backend stays on top and the networks do not cross; scale-up switches
(role ``scale-up``), where the topology holds them, right under the row,
each under its domain's servers. GPU NICs are dots
along a box's top edge, front-end and storage NICs along its bottom edge.

Sites (``sites`` key) are panels side by side, each laid out as above, with
a gap between them; DCI links join border switches across the gap.

The layout is in inches (boxes and text keep their size whatever the
fabric's size; the picture grows instead), with y growing upwards. Pure
data, no drawing library: ``topo draw`` (:mod:`.draw`, matplotlib) and the
web view (:mod:`emulator.view`, a browser) both place things from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from emulator.topology.model import Server, Switch, Topology

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
SITE_GAP_IN = 1.6  # between the panels of two sites
DCI_RISE_IN = 0.9  # the most a DCI arc rises above the border switches
SIDE_GAP_IN = 1.0  # server row to the front-end/storage leaves, box centre to box edge


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
    servers: dict[str, Box]      # host name (servers, storage nodes, clients) -> its box
    nics: dict[str, tuple[float, float]]  # GPU or other NIC name -> its dot
    switches: dict[str, Box]     # switch name -> its box
    tiers: list[list[Switch]]    # switch rows, bottom to top (every site's in one row)
    tier_y: list[float]          # the centre line of each row
    tier_names: list[str]        # "leaves", "spines", ... (bottom to top)
    sites: tuple[tuple[str, Box], ...] = ()  # "site 0" and its panel, where there are sites
    server_y: float = SERVER_HEIGHT_IN / 2  # the centre line of the host row


def _backend_tiers(topology: Topology, switches: list[Switch]) -> list[list[Switch]]:
    if topology.kind == "fat-tree":
        rows = [[s for s in switches if s.role == role] for role in ("edge", "agg", "core")]
        rows[0] += [s for s in switches if s.role == "leaf"]  # storage leaves on the backend
    else:
        leaves = [s for s in switches if s.role == "leaf"]
        # The leaves serving one group of servers go above that group, by
        # rail; storage leaves on the backend (another plane) last.
        leaves.sort(key=lambda leaf: (leaf.rail is not None and leaf.rail >= 100,
                                      leaf.leaf_index or 0, leaf.rail or 0))
        rows = [leaves, [s for s in switches if s.role == "spine"]]
    borders = [s for s in switches if s.role == "border"]
    return rows + ([borders] if borders else [])


# Role of the switch of a scale-up domain, where the topology holds one.
SCALE_UP_ROLE = "scale-up"


def below_rows(topology: Topology) -> list[tuple[str, Callable[[Switch], bool]]]:
    """The switch rows under the servers, from the servers down, each as its
    name and the test of its switches: scale-up switches (where there are),
    then the front-end and storage fabrics' leaves and spines."""
    rows: list[tuple[str, Callable[[Switch], bool]]] = []
    if any(s.role == SCALE_UP_ROLE for s in topology.switches):
        rows.append(("scale-up", lambda s: s.role == SCALE_UP_ROLE))
    side = [s for s in topology.switches if s.network != "backend"]
    words = " /\n".join(sorted({s.network for s in side}))
    for tier, name in ((1, "leaves"), (2, "spines")):
        if any(s.tier == tier for s in side):
            rows.append((f"{words}\n{name}",
                         lambda s, tier=tier: s.network != "backend" and s.tier == tier))
    return rows


def _in_backend(switch: Switch) -> bool:
    return switch.network == "backend" and switch.role != SCALE_UP_ROLE


def switch_tiers(topology: Topology) -> list[list[Switch]]:
    """Switch rows from bottom to top, each in drawing order (left to right):
    the rows under the servers (:func:`below_rows`, farthest first), then the
    backend's tiers."""
    sites = _site_members(topology)
    backend = [_backend_tiers(topology, [s for s in switches if _in_backend(s)])
               for _, switches in sites]
    rows: list[list[Switch]] = []
    for _, test in reversed(below_rows(topology)):
        rows.append([s for _, switches in sites for s in switches if test(s)])
    for level in range(max(map(len, backend))):
        rows.append([s for tiers in backend if level < len(tiers) for s in tiers[level]])
    return rows


def tier_names(topology: Topology) -> list[str]:
    if topology.kind == "fat-tree":
        names = ["edge", "aggregation", "core"]
    else:
        names = ["leaves" if topology.kind == "rail-optimized" else "ToR leaves", "spines"]
    if topology.spec.sites is not None:
        names.append("border")
    return [name for name, _ in reversed(below_rows(topology))] + names


def _site_members(topology: Topology) -> list[tuple[list[Server], list[Switch]]]:
    """Per site (one entry without sites): its hosts and its switches."""
    count = topology.spec.site_count
    return [([h for h in topology.hosts if (h.site or 0) == site],
             [s for s in topology.switches if (s.site or 0) == site]) for site in range(count)]


def _host_nics(topology: Topology, host: Server) -> tuple[list[str], list[str]]:
    """A host's NICs on the top edge (GPUs) and on the bottom edge (others)."""
    return list(host.gpus), list(host.nics)


def _server_width(nics: int, nic_pitch_in: float) -> float:
    return max((nics - 1) * nic_pitch_in + 2 * SERVER_PAD_IN, SERVER_MIN_WIDTH_IN)


def layout_topology(topology: Topology) -> TopologyLayout:
    """Place every host, NIC and switch of ``topology`` (module docstring)."""
    sites = _site_members(topology)
    rows = switch_tiers(topology)
    side_rows = len(below_rows(topology))
    most_nics = max(max(len(h.gpus), len(h.nics)) for h in topology.hosts)
    server_width = _server_width(most_nics, NIC_PITCH_IN)
    panel_widths = []
    site_of = {s.name: s.site or 0 for s in topology.switches}
    for site, (hosts, _) in enumerate(sites):
        per_row = [sum(site_of[s.name] == site for s in row) for row in rows]
        panel_widths.append(max(len(hosts) * (server_width + SERVER_GAP_IN),
                                max(per_row) * SWITCH_PITCH_MIN_IN))
    width = max(sum(panel_widths) + SITE_GAP_IN * (len(sites) - 1), MIN_WIDTH_IN)
    if len(sites) == 1:
        panel_widths = [width]
    server_pitch = min(panel / len(hosts) for panel, (hosts, _) in zip(panel_widths, sites))
    # Spread the NICs of a server when the servers have room to spare.
    nic_pitch = NIC_PITCH_IN
    if most_nics > 1:
        spare = (0.6 * server_pitch - 2 * SERVER_PAD_IN) / (most_nics - 1)
        nic_pitch = min(max(spare, NIC_PITCH_IN), NIC_PITCH_MAX_IN)
    server_width = _server_width(most_nics, nic_pitch)
    # Host links of a rail-optimized fabric cross each other; give them height.
    crossing = topology.spec.gpus_per_server if topology.kind == "rail-optimized" else 1
    host_gap = 0.95 + 0.11 * min(crossing, 8)
    base = (SWITCH_HEIGHT_IN / 2 + 0.05 + (side_rows - 1) * FABRIC_GAP_IN + SIDE_GAP_IN
            + SWITCH_HEIGHT_IN / 2 if side_rows else 0.0)
    server_y = base + SERVER_HEIGHT_IN / 2
    side_y = [SWITCH_HEIGHT_IN / 2 + 0.05 + level * FABRIC_GAP_IN for level in range(side_rows)]
    backend_y = [base + SERVER_HEIGHT_IN + host_gap + level * FABRIC_GAP_IN
                 for level in range(len(rows) - side_rows)]
    tier_y = side_y + backend_y
    height = tier_y[-1] + SWITCH_HEIGHT_IN / 2 + (0.25 if topology.kind == "fat-tree" else 0.05)
    if len(sites) > 1:
        height += DCI_RISE_IN / 2 + 0.2  # a quadratic arc reaches half its control point

    nics: dict[str, tuple[float, float]] = {}
    servers: dict[str, Box] = {}
    switches: dict[str, Box] = {}
    panels: list[tuple[str, Box]] = []
    left = 0.0
    for site, ((hosts, _), panel) in enumerate(zip(sites, panel_widths)):
        pitch = panel / len(hosts)
        for i, host in enumerate(hosts):
            box = Box(left + (i + 0.5) * pitch, server_y, server_width, SERVER_HEIGHT_IN)
            servers[host.name] = box
            for names, y in zip(_host_nics(topology, host),
                                (server_y + SERVER_HEIGHT_IN * 0.2,
                                 server_y - SERVER_HEIGHT_IN * 0.2)):
                first_x = box.x - (len(names) - 1) * nic_pitch / 2
                for n, name in enumerate(names):
                    nics[name] = (first_x + n * nic_pitch, y)
        for row, y in zip(rows, tier_y):
            here = [s for s in row if site_of[s.name] == site]
            if not here:
                continue
            row_pitch = panel / len(here)
            for i, switch in enumerate(here):
                switches[switch.name] = Box(left + (i + 0.5) * row_pitch, y,
                                            min(SWITCH_WIDTH_IN, row_pitch * 0.86),
                                            SWITCH_HEIGHT_IN)
        for domain in (d for d in topology.domains if d.name in switches):
            # a domain's scale-up switch sits right under the domain's servers
            box = switches[domain.name]
            members = [servers[name].x for name in domain.servers]
            switches[domain.name] = Box((min(members) + max(members)) / 2, box.y, box.width,
                                        box.height)
        if len(sites) > 1:
            panels.append((f"site {site}", Box(left + panel / 2, height / 2, panel + 0.4,
                                               height)))
        left += panel + SITE_GAP_IN
    return TopologyLayout(width, height, servers, nics, switches, rows, tier_y,
                          tier_names(topology), tuple(panels), server_y)

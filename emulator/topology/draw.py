"""Drawing a topology to an image file with matplotlib (no display needed);
where things go comes from :mod:`.layout` (the web view places them from it too).

Servers sit at the bottom as boxes holding one dot per GPU NIC; switches sit
above in tiers (leaves, then spines; fat-tree: edge, aggregation, core). NICs
and host links are coloured by GPU index, so in a rail-optimized fabric every
rail has one colour from NIC to leaf; in designs without rails the colours
show every index meeting on one switch. Uses the Agg canvas directly, so no
pyplot state or backend selection is involved.

With :class:`LinkValues` (a run's link utilisation, say) the same drawing
shows one number per link instead: every link is coloured on a scale from
0 to 100 % (with a colour bar) and widened by its value, idle links are thin
grey dashes, and the links given a label carry it; NICs and leaves keep their
rail colours.

The layout is computed in inches (data units are inches), so boxes and text
keep their size whatever the fabric's size; the figure grows instead, up to
:data:`MAX_DETAIL_WIDTH_IN`. Big fabrics are drawn as blocks instead
(:mod:`.draw_blocks`) unless asked for every node.
"""

from __future__ import annotations

from os import PathLike

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch, PathPatch
from matplotlib.path import Path

from emulator.topology.aggregate import aggregated
from emulator.topology.draw_blocks import draw_blocks
from emulator.topology.draw_style import (
    utilisation_bar,
    AGG_COLOUR, BOTTOM_MARGIN_IN, COLOURBAR_MARGIN_IN, DPI, FABRIC_LINK_COLOUR, HEADING_IN,
    IDLE_LINK_COLOUR, LEFT_MARGIN_IN, LEGEND_COLUMNS, LEGEND_ROW_IN, MUTED_COLOUR,
    RIGHT_MARGIN_IN, SPINE_COLOUR, TEXT_COLOUR, TOP_MARGIN_IN, VALUE_WIDTH_PT, LinkValues,
    NETWORK_COLOURS, free_spot, rail_colours, title, value_colours,
)
from emulator.topology.layout import DCI_RISE_IN, SCALE_UP_ROLE, Box, layout_topology
from emulator.topology.model import Link, Switch, Topology
from emulator.topology.networks import STORAGE_PLANE
from emulator.topology.scale_up import scale_up_tier
from emulator.topology.units import format_delay, format_rate

# Agg draws at most 2**16 pixels a side: 436 inches at 150 dpi.
MAX_DETAIL_WIDTH_IN = 400.0

def draw_topology(topology: Topology, path: str | PathLike[str],
                  values: LinkValues | None = None, aggregate: str = "auto") -> None:
    """Draw ``topology`` into an image file; the format follows the suffix
    (PNG, SVG, PDF). With ``values``, the links show them (module docstring).
    ``aggregate`` (auto, on, off): blocks and bundles (:mod:`.draw_blocks`)
    or every node; auto draws blocks above
    :data:`emulator.topology.aggregate.AGGREGATE_NODES` servers and switches."""
    if aggregated(topology, aggregate):
        draw_blocks(topology, path, values)
        return
    heading = title(topology)  # of the file's topology: sim adds the scale-up tier
    topology = scale_up_tier(topology)  # the domains' switches and links, as sim builds them
    gpus_per_server = topology.spec.gpus_per_server
    place = layout_topology(topology)
    width, height, tier_y = place.width_in, place.height_in, place.tier_y

    figure_width = (LEFT_MARGIN_IN + width + RIGHT_MARGIN_IN
                    + (COLOURBAR_MARGIN_IN if values else 0.0))
    bottom_margin = BOTTOM_MARGIN_IN + LEGEND_ROW_IN * -(-gpus_per_server // LEGEND_COLUMNS)
    headings = values.heading.count("\n") + 1 if values and values.heading else 0
    top_margin = TOP_MARGIN_IN + HEADING_IN * headings
    figure_height = top_margin + height + bottom_margin
    if figure_width > MAX_DETAIL_WIDTH_IN:
        raise ValueError(f"every node of {topology.name} is {figure_width:.0f} inches wide "
                         f"(at most {MAX_DETAIL_WIDTH_IN:.0f}); draw it as blocks "
                         "(--aggregate auto or on)")
    figure = Figure(figsize=(figure_width, figure_height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((LEFT_MARGIN_IN / figure_width, bottom_margin / figure_height,
                            width / figure_width, height / figure_height))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")
    colours = rail_colours(gpus_per_server)

    nic_xy = place.nics
    server_boxes = list(place.servers.items())
    boxes = place.switches

    if topology.kind == "fat-tree":
        _draw_pods(axes, topology, boxes)
    for label, frame in place.sites:
        axes.add_patch(FancyBboxPatch(
            (frame.x - frame.width / 2, frame.bottom), frame.width, frame.height,
            boxstyle="round,pad=0,rounding_size=0.1", facecolor="#fbfcfd", edgecolor="#cbd5e1",
            linewidth=0.9, linestyle="--", zorder=0))
        axes.text(frame.x - frame.width / 2 + 0.08, frame.top - 0.06, label, ha="left",
                  va="top", fontsize=7.5, color="#64748b", zorder=0.5)
    _draw_domains(axes, topology, place.servers, boxes)
    if values is None:
        _draw_links(axes, topology, nic_xy, boxes, place.servers, colours)
    else:
        _draw_link_values(axes, topology, nic_xy, boxes, place.servers, values)
    for name, box in server_boxes:
        axes.add_patch(FancyBboxPatch(
            (box.x - box.width / 2, box.bottom), box.width, box.height,
            boxstyle="round,pad=0,rounding_size=0.06", facecolor="#f3f4f6",
            edgecolor=MUTED_COLOUR, linewidth=0.8, zorder=2))
        host = topology.host(name)
        # the name sits clear of the NIC dots: GPUs' along the top, others' along the bottom
        shift = (0.0 if host.gpus and host.nics else 0.23 if host.nics else -0.23)
        axes.text(box.x, box.y + box.height * shift, name, ha="center", va="center", fontsize=6.5,
                  color=TEXT_COLOUR, zorder=3)
    axes.scatter([xy[0] for xy in nic_xy.values()], [xy[1] for xy in nic_xy.values()],
                 s=16, c=[_nic_colour(topology, name, colours) for name in nic_xy],
                 edgecolors="white", linewidths=0.4, zorder=4)
    for switch in topology.switches:
        _draw_switch(axes, switch, boxes[switch.name], colours, topology.kind)

    for name, y in [("servers", place.server_y), *zip(place.tier_names, tier_y)]:
        axes.text(-0.12, y, name, ha="right", va="center", fontsize=8, color=MUTED_COLOUR,
                  style="italic", clip_on=False)

    rails = topology.kind == "rail-optimized"
    handles = [Patch(facecolor=colour, edgecolor="none", label=f"{'rail' if rails else 'GPU'} {r}")
               for r, colour in enumerate(colours)]
    handles += [Patch(facecolor=NETWORK_COLOURS[network], edgecolor="none",
                      label=_network_label(topology, network))
                for network in ("scale-up", "front-end", "storage", "dci")
                if any(link.network == network for link in topology.links)]
    legend = figure.legend(
        handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.02),
        ncol=min(len(handles), LEGEND_COLUMNS), fontsize=7, frameon=False, handlelength=1.2,
        columnspacing=1.2,
        title=("NIC colour = " if values else "NIC and host link colour = ")
        + ("rail" if rails else "GPU index (no rails)"),
        title_fontsize=7)
    legend.get_title().set_color(MUTED_COLOUR)
    heading += f"\n{values.heading}" if values and values.heading else ""
    figure.text(0.5, 1 - 0.12 / figure_height, heading, ha="center", va="top",
                fontsize=9, color=TEXT_COLOUR)
    if values is not None:
        utilisation_bar(figure, LEFT_MARGIN_IN + width + RIGHT_MARGIN_IN, bottom_margin,
                        height, values.label)
    figure.savefig(path, dpi=DPI)


def _nic_colour(topology: Topology, name: str,
                colours: list[tuple[float, float, float, float]]) -> object:
    nic = topology.gpu(name)
    return colours[nic.index] if nic.network == "backend" and name in topology.host(
        nic.server).gpus else NETWORK_COLOURS[nic.network]


def _ends(link: Link, nic_xy: dict[str, tuple[float, float]],
          boxes: dict[str, Box]) -> tuple[float, float, float, float]:
    """Where a link's line starts and ends: from the facing edges of its boxes
    (``boxes`` holds the hosts' boxes too)."""
    high = boxes[link.node_b]
    if link.network == "scale-up":
        # from under the GPU's dot, out of the server box's bottom edge
        x0, y0 = nic_xy[link.gpu][0], boxes[link.node_a].bottom
    elif link.gpu is not None:
        x0, y0 = nic_xy[link.gpu]
    else:
        low = boxes[link.node_a]
        x0, y0 = low.x, (low.top if low.y < high.y else low.bottom)
    return x0, y0, high.x, (high.bottom if y0 < high.y else high.top)


def _dci_path(x0: float, y0: float, x1: float, y1: float) -> Path:
    """A DCI link: an arc over the gap between two sites' border switches."""
    rise = min(0.35 + 0.04 * abs(x1 - x0), DCI_RISE_IN)
    return Path([(x0, y0), ((x0 + x1) / 2, max(y0, y1) + rise), (x1, y1)],
                [Path.MOVETO, Path.CURVE3, Path.CURVE3])


def _draw_links(axes: Axes, topology: Topology, nic_xy: dict[str, tuple[float, float]],
                boxes: dict[str, Box], servers: dict[str, Box], colours: list[tuple[float, float, float, float]]
                ) -> None:
    every_box = {**boxes, **servers}
    for link in topology.links:
        if link.network == "dci":
            a, b = boxes[link.node_a], boxes[link.node_b]
            axes.add_patch(PathPatch(_dci_path(a.x, a.top, b.x, b.top), facecolor="none",
                                     edgecolor=NETWORK_COLOURS["dci"], linewidth=1.4, zorder=1))
            continue
        x0, y0, x1, y1 = _ends(link, nic_xy, every_box)
        if link.network == "scale-up":
            axes.add_line(Line2D([x0, x1], [y0, y1], color=NETWORK_COLOURS["scale-up"],
                                 linewidth=0.8, alpha=0.8, zorder=2.5))
        elif link.gpu is not None:
            axes.add_line(Line2D([x0, x1], [y0, y1],
                                 color=_nic_colour(topology, link.gpu, colours),
                                 linewidth=0.9, alpha=0.8, zorder=2.5))
        else:
            colour = (FABRIC_LINK_COLOUR if link.network == "backend"
                      else NETWORK_COLOURS[link.network])
            axes.add_line(Line2D([x0, x1], [y0, y1], color=colour, linewidth=0.8, zorder=1))


def _draw_link_values(axes: Axes, topology: Topology, nic_xy: dict[str, tuple[float, float]],
                      boxes: dict[str, Box], servers: dict[str, Box], values: LinkValues) -> None:
    cmap = value_colours()
    low_w, high_w = VALUE_WIDTH_PT
    texts: list[tuple[float, str, float, float, float, float, bool]] = []  # ..., host link
    every_box = {**boxes, **servers}
    for link in topology.links:
        key = (link.node_a, link.port_a)
        value = min(max(float(values.values.get(key, 0.0)), 0.0), 1.0)
        x0, y0, x1, y1 = _ends(link, nic_xy, every_box)
        base_z = 2.5 if link.gpu is not None else 1.0
        if link.network == "dci":
            a, b = boxes[link.node_a], boxes[link.node_b]
            dashed = value <= 0
            axes.add_patch(PathPatch(
                _dci_path(a.x, a.top, b.x, b.top), facecolor="none",
                edgecolor=IDLE_LINK_COLOUR if dashed else cmap(value),
                linewidth=0.6 if dashed else low_w + (high_w - low_w) * value,
                linestyle=(0, (3, 2)) if dashed else "-", zorder=1))
            x0, y0, x1, y1 = a.x, a.top, b.x, b.top
        elif value > 0:
            axes.add_line(Line2D([x0, x1], [y0, y1], color=cmap(value),
                                 linewidth=low_w + (high_w - low_w) * value,
                                 solid_capstyle="butt", zorder=base_z + 0.4 * value))
        else:
            axes.add_line(Line2D([x0, x1], [y0, y1], color=IDLE_LINK_COLOUR, linewidth=0.6,
                                 linestyle=(0, (3, 2)), zorder=base_z - 0.2))
        text = values.labels.get(key)
        if text:
            texts.append((value, text, x0, y0, x1, y1, link.gpu is not None))
    placed: list[tuple[float, float, float]] = []  # centre x, centre y, half width
    for value, text, x0, y0, x1, y1, host in sorted(texts, key=lambda item: -item[0]):
        # host links cross each other mid-way: label them near their NIC, where they are apart
        spots = (0.22, 0.32, 0.14, 0.42, 0.52) if host else (0.5, 0.62, 0.38, 0.74, 0.26)
        x, y = free_spot(text, x0, y0, x1, y1, placed, spots)
        axes.text(x, y, text, ha="center", va="center", fontsize=6, color=TEXT_COLOUR,
                  zorder=6, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                  "edgecolor": cmap(value), "linewidth": 0.6, "alpha": 0.92})


def _draw_switch(axes: Axes, switch: Switch, box: Box,
                 colours: list[tuple[float, float, float, float]], kind: str) -> None:
    if (switch.role == "leaf" and kind == "rail-optimized" and switch.rail is not None
            and switch.rail < len(colours)):
        colour = colours[switch.rail]
        face: object = (*colour[:3], 0.2)
        edge: object = colour
        text_colour = TEXT_COLOUR
    elif (switch.network != "backend" or switch.role in ("border", SCALE_UP_ROLE)
          or switch.rail == STORAGE_PLANE):
        colour = NETWORK_COLOURS["dci" if switch.role == "border" else
                                 "scale-up" if switch.role == SCALE_UP_ROLE else
                                 "storage" if switch.rail == STORAGE_PLANE else switch.network]
        face, edge = (colour, colour) if switch.tier > 1 else ("#f1f5f9", colour)
        text_colour = "white" if switch.tier > 1 else TEXT_COLOUR
    elif switch.role in ("leaf", "edge"):
        face, edge, text_colour = "#e5e7eb", "#4b5563", TEXT_COLOUR
    elif switch.role == "agg":
        face, edge, text_colour = AGG_COLOUR, AGG_COLOUR, "white"
    else:
        face, edge, text_colour = SPINE_COLOUR, SPINE_COLOUR, "white"
    axes.add_patch(FancyBboxPatch(
        (box.x - box.width / 2, box.bottom), box.width, box.height,
        boxstyle="round,pad=0,rounding_size=0.06", facecolor=face, edgecolor=edge,
        linewidth=1.0, zorder=3))
    if switch.prefix is None:
        axes.text(box.x, box.y, switch.name, ha="center", va="center", fontsize=7,
                  color=text_colour, zorder=5)
        return
    # Leaves also show the prefix they own.
    axes.text(box.x, box.y + box.height * 0.17, switch.name, ha="center", va="center",
              fontsize=7, color=text_colour, zorder=5)
    axes.text(box.x, box.y - box.height * 0.24, switch.prefix, ha="center", va="center",
              fontsize=5.5, color=MUTED_COLOUR, zorder=5)


def _draw_pods(axes: Axes, topology: Topology, boxes: dict[str, Box]) -> None:
    """A faint frame around each pod's edge and aggregation switches."""
    pods = sorted({(s.site or 0, s.pod) for s in topology.switches if s.pod is not None})
    for site, pod in pods:  # each site has its own pods
        members = [boxes[s.name] for s in topology.switches
                   if s.pod == pod and (s.site or 0) == site]
        left = min(b.x - b.width / 2 for b in members) - 0.06
        right = max(b.x + b.width / 2 for b in members) + 0.06
        bottom = min(b.bottom for b in members) - 0.08
        top = max(b.top for b in members) + 0.2
        axes.add_patch(FancyBboxPatch(
            (left, bottom), right - left, top - bottom, boxstyle="round,pad=0,rounding_size=0.08",
            facecolor="#f8fafc", edgecolor="#cbd5e1", linewidth=0.8, linestyle="--", zorder=0))
        axes.text(left + 0.06, top - 0.04, f"pod {pod}", ha="left", va="top", fontsize=6,
                  color="#64748b", zorder=0.5)


def _network_label(topology: Topology, network: str) -> str:
    """A legend entry: the network, and for the scale-up tier its rate and hop."""
    if network != "scale-up" or not topology.domains:
        return network
    domain = topology.domains[0]
    return (f"scale-up ({format_rate(domain.rate_bps)} a GPU, "
            f"{format_delay(domain.hop_latency_ns)} hop)")


def _draw_domains(axes: Axes, topology: Topology, servers: dict[str, Box],
                  switches: dict[str, Box]) -> None:
    """A dashed frame in the scale-up colour around each scale-up domain: its
    servers and its scale-up switch (named after the domain) under them."""
    colour = NETWORK_COLOURS["scale-up"]
    for domain in topology.domains:
        members = [servers[name] for name in domain.servers]
        switch = switches.get(domain.name)
        left = min(b.x - b.width / 2 for b in members) - 0.07
        right = max(b.x + b.width / 2 for b in members) + 0.07
        top = max(b.top for b in members) + 0.07
        bottom = (switch.bottom if switch else min(b.bottom for b in members)) - 0.07
        if switch:
            left = min(left, switch.x - switch.width / 2 - 0.07)
            right = max(right, switch.x + switch.width / 2 + 0.07)
        axes.add_patch(FancyBboxPatch(
            (left, bottom), right - left, top - bottom, boxstyle="round,pad=0,rounding_size=0.08",
            facecolor=(0.012, 0.412, 0.631, 0.05), edgecolor=colour, linewidth=1.0,
            linestyle="--", zorder=0.6))

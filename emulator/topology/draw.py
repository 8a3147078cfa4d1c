"""Drawing a topology to an image file with matplotlib (no display needed).

Servers sit at the bottom as boxes holding one dot per GPU NIC; switches sit
above in tiers (leaves, then spines; fat-tree: edge, aggregation, core). NICs
and host links are coloured by GPU index, so in a rail-optimized fabric every
rail has one colour from NIC to leaf; in designs without rails the colours
show every index meeting on one switch. Uses the Agg canvas directly, so no
pyplot state or backend selection is involved.

The layout is computed in inches (data units are inches), so boxes and text
keep their size whatever the fabric's size; the figure grows instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from os import PathLike

from matplotlib import colormaps
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch

from emulator.topology.model import Switch, Topology, counts
from emulator.topology.units import format_delay, format_rate

_DPI = 150
_NIC_PITCH_IN = 0.17  # between NIC dots of one server, at least
_NIC_PITCH_MAX_IN = 0.4  # when there is room to spare
_SERVER_PAD_IN = 0.12  # server box margin left and right of the dots
_SERVER_MIN_WIDTH_IN = 0.5  # room for the server's name
_SERVER_GAP_IN = 0.22
_SERVER_HEIGHT_IN = 0.42
_SWITCH_PITCH_MIN_IN = 1.0
_MIN_WIDTH_IN = 5.8  # room for the title
_SWITCH_WIDTH_IN = 0.86
_SWITCH_HEIGHT_IN = 0.4
_FABRIC_GAP_IN = 1.25  # between switch tiers, box centre to box centre
_LEFT_MARGIN_IN = 0.95  # tier names
_RIGHT_MARGIN_IN = 0.3
_TOP_MARGIN_IN = 0.75  # title
_BOTTOM_MARGIN_IN = 0.48  # legend title, plus a row per 8 legend entries
_LEGEND_ROW_IN = 0.17
_LEGEND_COLUMNS = 8
_SPINE_COLOUR = "#4d5b6a"
_AGG_COLOUR = "#7a8794"
_FABRIC_LINK_COLOUR = "#9aa3ad"
_TEXT_COLOUR = "#1f2937"
_MUTED_COLOUR = "#6b7280"


@dataclass(frozen=True)
class _Box:
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


def _colours(count: int) -> list[tuple[float, float, float, float]]:
    """One colour per rail; tab10 without its grey, which fabric links use."""
    if count <= 9:
        cmap = colormaps["tab10"]
        return [cmap(i) for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)[:count]]
    cmap = colormaps["turbo"]
    return [cmap(0.05 + 0.9 * i / (count - 1)) for i in range(count)]


def _tiers(topology: Topology) -> list[list[Switch]]:
    """Switch rows from bottom to top, each in drawing order (left to right)."""
    if topology.kind == "fat-tree":
        return [list(topology.switches_with_role(role)) for role in ("edge", "agg", "core")]
    leaves = list(topology.leaves)
    # The leaves serving one group of servers go above that group, by rail.
    leaves.sort(key=lambda leaf: (leaf.leaf_index or 0, leaf.rail or 0))
    return [leaves, list(topology.switches_with_role("spine"))]


def _server_width(gpus_per_server: int, nic_pitch_in: float) -> float:
    return max((gpus_per_server - 1) * nic_pitch_in + 2 * _SERVER_PAD_IN, _SERVER_MIN_WIDTH_IN)


def _plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def _title(topology: Topology) -> str:
    c = counts(topology)
    spec = topology.spec
    if topology.kind == "fat-tree":
        switches = (f"k={spec.k}, {c['leaves']} edge, {c['aggs']} agg, "
                    f"{c['spines']} core switches")
    elif topology.kind == "leaf-spine":
        switches = (f"{_plural(c['leaves'], 'ToR leaf', 'ToR leaves')}, "
                    f"{_plural(c['spines'], 'spine')}, no rails")
    else:
        switches = (f"{_plural(c['rails'], 'rail')}, {_plural(c['leaves'], 'leaf', 'leaves')}, "
                    f"{_plural(c['spines'], 'spine')}")
    host, fabric = spec.host_link, spec.fabric_link
    links = (f"host links {format_rate(host.rate_bps)} / {format_delay(host.delay_ns)}, "
             f"fabric links {format_rate(fabric.rate_bps)} / {format_delay(fabric.delay_ns)}")
    return (f"{topology.name} ({topology.kind}): {_plural(c['servers'], 'server')}, "
            f"{c['gpus']} GPUs, {switches}\n{links}  ·  {c['host_links']} host links, "
            f"{c['fabric_links']} fabric links")


def draw_topology(topology: Topology, path: str | PathLike[str]) -> None:
    """Draw ``topology`` into an image file; the format follows the suffix (PNG, SVG, PDF)."""
    gpus_per_server = topology.spec.gpus_per_server
    tiers = _tiers(topology)
    server_width = _server_width(gpus_per_server, _NIC_PITCH_IN)
    width = max(len(topology.servers) * (server_width + _SERVER_GAP_IN),
                max(len(tier) for tier in tiers) * _SWITCH_PITCH_MIN_IN, _MIN_WIDTH_IN)
    server_pitch = width / len(topology.servers)
    # Spread the NICs of a server when the servers have room to spare.
    nic_pitch = _NIC_PITCH_IN
    if gpus_per_server > 1:
        spare = (0.6 * server_pitch - 2 * _SERVER_PAD_IN) / (gpus_per_server - 1)
        nic_pitch = min(max(spare, _NIC_PITCH_IN), _NIC_PITCH_MAX_IN)
    server_width = _server_width(gpus_per_server, nic_pitch)
    # Host links of a rail-optimized fabric cross each other; give them height.
    crossing = gpus_per_server if topology.kind == "rail-optimized" else 1
    host_gap = 0.95 + 0.11 * min(crossing, 8)
    tier_y = [_SERVER_HEIGHT_IN + host_gap + level * _FABRIC_GAP_IN for level in range(len(tiers))]
    height = tier_y[-1] + _SWITCH_HEIGHT_IN / 2 + (0.25 if topology.kind == "fat-tree" else 0.05)

    figure_width = _LEFT_MARGIN_IN + width + _RIGHT_MARGIN_IN
    bottom_margin = _BOTTOM_MARGIN_IN + _LEGEND_ROW_IN * -(-gpus_per_server // _LEGEND_COLUMNS)
    figure_height = _TOP_MARGIN_IN + height + bottom_margin
    figure = Figure(figsize=(figure_width, figure_height), dpi=_DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((_LEFT_MARGIN_IN / figure_width, bottom_margin / figure_height,
                            width / figure_width, height / figure_height))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")
    colours = _colours(gpus_per_server)

    # Where everything goes.
    nic_xy: dict[str, tuple[float, float]] = {}
    server_boxes = []
    for server in topology.servers:
        box = _Box((server.index + 0.5) * server_pitch, _SERVER_HEIGHT_IN / 2, server_width,
                   _SERVER_HEIGHT_IN)
        server_boxes.append((server.name, box))
        first_x = box.x - (gpus_per_server - 1) * nic_pitch / 2
        for gpu_name in server.gpus:
            nic_xy[gpu_name] = (first_x + topology.gpu(gpu_name).index * nic_pitch,
                                _SERVER_HEIGHT_IN * 0.7)
    boxes: dict[str, _Box] = {}
    for tier, y in zip(tiers, tier_y):
        pitch = width / len(tier)
        for i, switch in enumerate(tier):
            boxes[switch.name] = _Box((i + 0.5) * pitch, y, min(_SWITCH_WIDTH_IN, pitch * 0.86),
                                      _SWITCH_HEIGHT_IN)

    if topology.kind == "fat-tree":
        _draw_pods(axes, topology, boxes)
    for link in topology.links:
        if link.gpu is not None:
            gpu = topology.gpu(link.gpu)
            x0, y0 = nic_xy[gpu.name]
            leaf = boxes[link.node_b]
            axes.add_line(Line2D([x0, leaf.x], [y0, leaf.bottom], color=colours[gpu.index],
                                 linewidth=0.9, alpha=0.8, zorder=2.5))
        else:
            low, high = boxes[link.node_a], boxes[link.node_b]
            axes.add_line(Line2D([low.x, high.x], [low.top, high.bottom],
                                 color=_FABRIC_LINK_COLOUR, linewidth=0.8, zorder=1))
    for name, box in server_boxes:
        axes.add_patch(FancyBboxPatch(
            (box.x - box.width / 2, box.bottom), box.width, box.height,
            boxstyle="round,pad=0,rounding_size=0.06", facecolor="#f3f4f6",
            edgecolor=_MUTED_COLOUR, linewidth=0.8, zorder=2))
        axes.text(box.x, box.height * 0.27, name, ha="center", va="center", fontsize=6.5,
                  color=_TEXT_COLOUR, zorder=3)
    axes.scatter([xy[0] for xy in nic_xy.values()], [xy[1] for xy in nic_xy.values()],
                 s=16, c=[colours[topology.gpu(name).index] for name in nic_xy],
                 edgecolors="white", linewidths=0.4, zorder=4)
    for switch in topology.switches:
        _draw_switch(axes, switch, boxes[switch.name], colours, topology.kind)

    names = (["edge", "aggregation", "core"] if topology.kind == "fat-tree"
             else ["leaves" if topology.kind == "rail-optimized" else "ToR leaves", "spines"])
    for name, y in [("servers", _SERVER_HEIGHT_IN / 2), *zip(names, tier_y)]:
        axes.text(-0.12, y, name, ha="right", va="center", fontsize=8, color=_MUTED_COLOUR,
                  style="italic", clip_on=False)

    rails = topology.kind == "rail-optimized"
    handles = [Patch(facecolor=colour, edgecolor="none", label=f"{'rail' if rails else 'GPU'} {r}")
               for r, colour in enumerate(colours)]
    legend = figure.legend(
        handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.02),
        ncol=min(len(handles), _LEGEND_COLUMNS), fontsize=7, frameon=False, handlelength=1.2,
        columnspacing=1.2,
        title="NIC and host link colour = " + ("rail" if rails else "GPU index (no rails)"),
        title_fontsize=7)
    legend.get_title().set_color(_MUTED_COLOUR)
    figure.text(0.5, 1 - 0.12 / figure_height, _title(topology), ha="center", va="top",
                fontsize=9, color=_TEXT_COLOUR)
    figure.savefig(path, dpi=_DPI)


def _draw_switch(axes: Axes, switch: Switch, box: _Box,
                 colours: list[tuple[float, float, float, float]], kind: str) -> None:
    if switch.role == "leaf" and kind == "rail-optimized" and switch.rail is not None:
        colour = colours[switch.rail]
        face: object = (*colour[:3], 0.2)
        edge: object = colour
        text_colour = _TEXT_COLOUR
    elif switch.role in ("leaf", "edge"):
        face, edge, text_colour = "#e5e7eb", "#4b5563", _TEXT_COLOUR
    elif switch.role == "agg":
        face, edge, text_colour = _AGG_COLOUR, _AGG_COLOUR, "white"
    else:
        face, edge, text_colour = _SPINE_COLOUR, _SPINE_COLOUR, "white"
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
              fontsize=5.5, color=_MUTED_COLOUR, zorder=5)


def _draw_pods(axes: Axes, topology: Topology, boxes: dict[str, _Box]) -> None:
    """A faint frame around each pod's edge and aggregation switches."""
    pods = sorted({s.pod for s in topology.switches if s.pod is not None})
    for pod in pods:
        members = [boxes[s.name] for s in topology.switches if s.pod == pod]
        left = min(b.x - b.width / 2 for b in members) - 0.06
        right = max(b.x + b.width / 2 for b in members) + 0.06
        bottom = min(b.bottom for b in members) - 0.08
        top = max(b.top for b in members) + 0.2
        axes.add_patch(FancyBboxPatch(
            (left, bottom), right - left, top - bottom, boxstyle="round,pad=0,rounding_size=0.08",
            facecolor="#f8fafc", edgecolor="#cbd5e1", linewidth=0.8, linestyle="--", zorder=0))
        axes.text(left + 0.06, top - 0.04, f"pod {pod}", ha="left", va="top", fontsize=6,
                  color="#64748b", zorder=0.5)

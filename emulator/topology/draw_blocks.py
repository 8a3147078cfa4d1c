"""Drawing a big fabric as blocks (:mod:`.aggregate`): one box per group of
servers or switches, one line per bundle of links between two boxes.

Rows go bottom to top as in the node-by-node picture (servers, then switch
tiers); a box names its group and counts its members; a line's ends spread
along its boxes so bundles leaving one box stay apart. Without values, host
bundles carry the rail's colour (rail-optimized) and every line its link
count; with :class:`LinkValues` a bundle is coloured and widened by its
busiest member, idle bundles are grey dashes and the busiest bundles are
labelled "max NN %". The width stays bounded (at most
:data:`emulator.topology.aggregate.MAX_BLOCKS_PER_ROW` boxes a row), so
labels keep their size at 100 % zoom whatever the fabric's size.

The scale-up tier (a ``scale_up`` key; built here as sim builds it) is a
row of blocks right under the servers, each under the server block its
domains start in and counted in domains and GPUs; a dashed frame in the
scale-up colour holds each such block with its servers and names the
domains' size and rate, as the node-by-node picture frames each domain.
"""

from __future__ import annotations

from os import PathLike

from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import FancyBboxPatch, Patch, PathPatch
from matplotlib.path import Path

from emulator.topology.aggregate import (
    Aggregation, Bundle, Group, GroupKey, aggregate, member_words,
)
from emulator.topology.draw_style import (
    utilisation_bar,
    AGG_COLOUR, BOTTOM_MARGIN_IN, COLOURBAR_MARGIN_IN, DPI, FABRIC_LINK_COLOUR, HEADING_IN,
    IDLE_LINK_COLOUR, LEFT_MARGIN_IN, LEGEND_COLUMNS, LEGEND_ROW_IN, MUTED_COLOUR,
    RIGHT_MARGIN_IN, SPINE_COLOUR, TEXT_COLOUR, TOP_MARGIN_IN, VALUE_WIDTH_PT, LinkValues,
    NETWORK_COLOURS, free_spot, rail_colours, title, value_colours,
)
from emulator.topology.layout import Box
from emulator.topology.model import Topology
from emulator.topology.scale_up import scale_up_tier
from emulator.topology.units import format_rate

BLOCK_WIDTH_IN = 1.25
BLOCK_HEIGHT_IN = 0.52
BLOCK_PITCH_IN = 1.45
MIN_WIDTH_IN = 7.0  # room for the title
HOST_GAP_IN = 1.9  # servers to the first switch row, box centre to box centre
FABRIC_GAP_IN = 1.45
LABELLED_BUNDLES = 12  # with values, the busiest bundles get a "max NN %" label
COUNTED_BUNDLES = 48  # without values, lines carry their link count up to this many bundles


def block_layout(agg: Aggregation) -> tuple[float, float, dict[GroupKey, Box], list[float]]:
    """Width and height (inches), every group's box, each row's centre line."""
    rows: dict[int, list[Group]] = {}
    for group in agg.groups:
        rows.setdefault(group.key.row, []).append(group)
    width = max(MIN_WIDTH_IN, max(len(r) for r in rows.values()) * BLOCK_PITCH_IN)
    row_y: list[float] = []
    for row in range(agg.first_row, agg.first_row + len(agg.row_names)):
        gap = HOST_GAP_IN if row == 1 else FABRIC_GAP_IN
        row_y.append(row_y[-1] + gap if row_y else BLOCK_HEIGHT_IN / 2)
    boxes: dict[GroupKey, Box] = {}
    for row, groups in rows.items():
        pitch = width / len(groups)
        for i, group in enumerate(groups):
            boxes[group.key] = Box((i + 0.5) * pitch, row_y[row - agg.first_row],
                                   min(BLOCK_WIDTH_IN, 0.86 * pitch), BLOCK_HEIGHT_IN)
    for group in rows.get(agg.scale_up_row, []) if agg.scale_up_row is not None else []:
        servers = agg.server_block(group)
        if servers is not None:  # under its servers, as wide
            box, home = boxes[group.key], boxes[servers.key]
            boxes[group.key] = Box(home.x, box.y, home.width, box.height)
    # DCI bundles arc over the top row
    top = row_y[-1] + BLOCK_HEIGHT_IN / 2 + (0.6 if any(
        b.low.row == b.high.row for b in agg.bundles) else 0.05)
    return width, top, boxes, row_y


def _ends(agg: Aggregation, boxes: dict[GroupKey, Box]) -> dict[int, tuple[float, float]]:
    """Per bundle (by position in agg.bundles), the x of its low and high end:
    spread along each box in the order of the other ends, so lines do not
    start on top of each other."""
    at: dict[tuple[GroupKey, str], list[tuple[float, int]]] = {}
    for i, bundle in enumerate(agg.bundles):
        level = bundle.low.row == bundle.high.row  # a DCI bundle leaves both boxes on top
        at.setdefault((bundle.low, "top"), []).append((boxes[bundle.high].x, i))
        at.setdefault((bundle.high, "top" if level else "bottom"), []).append(
            (boxes[bundle.low].x, -1 - i if level else i))
    ends: dict[int, list[float]] = {i: [0.0, 0.0] for i in range(len(agg.bundles))}
    for (key, side), others in at.items():
        box = boxes[key]
        others.sort()
        span = 0.8 * box.width
        for j, (_, i) in enumerate(others):
            x = box.x if len(others) == 1 else box.x - span / 2 + span * j / (len(others) - 1)
            if i < 0:  # the high end of a DCI bundle
                ends[-1 - i][1] = x
            else:
                ends[i][0 if side == "top" else 1] = x
    return {i: (low, high) for i, (low, high) in ends.items()}


def bundle_value(bundle: Bundle, values: LinkValues) -> float:
    """A bundle's value: its busiest member's, clipped to 0..1."""
    return min(max((float(values.values.get(k, 0.0)) for k in bundle.links), default=0.0), 1.0)


def _block_colours(topology: Topology, group: Group,
                   colours: list[tuple[float, float, float, float]]) -> tuple:
    if group.key.row == 0:
        return "#f3f4f6", MUTED_COLOUR, TEXT_COLOUR
    if group.key.rail is not None:
        colour = colours[group.key.rail]
        return (*colour[:3], 0.2), colour, TEXT_COLOUR
    switch = topology.switch(group.members[0])
    role = switch.role
    if switch.network != "backend" or role in ("border", "scale-up"):
        colour = NETWORK_COLOURS["dci" if role == "border" else
                                 "scale-up" if role == "scale-up" else switch.network]
        return (colour, colour, "white") if switch.tier > 1 else ("#f1f5f9", colour, TEXT_COLOUR)
    if role in ("leaf", "edge"):
        return "#e5e7eb", "#4b5563", TEXT_COLOUR
    if role == "agg":
        return AGG_COLOUR, AGG_COLOUR, "white"
    return SPINE_COLOUR, SPINE_COLOUR, "white"


def _bundle_sizes(agg: Aggregation) -> str:
    """'servers–leaves 16 links, leaves–spines 64 links' (a range where sizes differ)."""
    sizes: dict[tuple[int, int], list[int]] = {}
    for b in agg.bundles:
        sizes.setdefault((b.low.row, b.high.row), []).append(len(b.links))
    parts = []
    for (low, high), counts in sorted(sizes.items()):
        span = f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)}–{max(counts)}"
        names = tuple(agg.row_name(row).replace(" /\n", "/").replace("\n", " ")
                      for row in (low, high))
        parts.append(f"{names[0]}–{names[1]} {span} links")
    return ", ".join(parts)


def draw_blocks(topology: Topology, path: str | PathLike[str],
                values: LinkValues | None = None) -> None:
    """Draw ``topology`` as blocks into an image file (module docstring)."""
    heading_of = title(topology)  # of the file's topology: sim adds the scale-up tier
    topology = scale_up_tier(topology)
    agg = aggregate(topology)
    width, height, boxes, row_y = block_layout(agg)
    rails = topology.kind == "rail-optimized"
    colours = rail_colours(topology.spec.gpus_per_server)
    entries = (len(colours) if rails else 0) + (1 if topology.domains else 0)
    legend_rows = -(-entries // LEGEND_COLUMNS)
    bottom_margin = BOTTOM_MARGIN_IN + LEGEND_ROW_IN * legend_rows
    note = ("Drawn as blocks, one line per bundle of links (" + _bundle_sizes(agg)
            + "); `aifabric topo draw --aggregate off` draws every node")
    heading = heading_of + "\n" + note + (f"\n{values.heading}"
                                              if values and values.heading else "")
    top_margin = TOP_MARGIN_IN + HEADING_IN * (heading.count("\n") - 1)
    figure_width = (LEFT_MARGIN_IN + width + RIGHT_MARGIN_IN
                    + (COLOURBAR_MARGIN_IN if values else 0.0))
    figure_height = top_margin + height + bottom_margin
    figure = Figure(figsize=(figure_width, figure_height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((LEFT_MARGIN_IN / figure_width, bottom_margin / figure_height,
                            width / figure_width, height / figure_height))
    axes.set_xlim(0, width)
    axes.set_ylim(0, height)
    axes.axis("off")

    _draw_bundles(axes, agg, boxes, colours if rails else None, values)
    _frame_domains(axes, topology, agg, boxes)
    for group in agg.groups:
        box = boxes[group.key]
        face, edge, text_colour = _block_colours(topology, group, colours)
        axes.add_patch(FancyBboxPatch(
            (box.x - box.width / 2, box.bottom), box.width, box.height,
            boxstyle="round,pad=0,rounding_size=0.06", facecolor=face, edgecolor=edge,
            linewidth=1.0, zorder=3))
        axes.text(box.x, box.y + 0.1, group.label, ha="center", va="center", fontsize=7.5,
                  color=text_colour, zorder=5)
        axes.text(box.x, box.y - 0.12, member_words(topology, group), ha="center",
                  va="center", fontsize=6, color=text_colour, zorder=5)
    for name, y in zip(agg.row_names, row_y):
        axes.text(-0.12, y, name, ha="right", va="center", fontsize=8, color=MUTED_COLOUR,
                  style="italic", clip_on=False)

    if rails or topology.domains:
        handles = [Patch(facecolor=c, edgecolor="none", label=f"rail {r}")
                   for r, c in enumerate(colours)] if rails else []
        if topology.domains:
            handles.append(Patch(facecolor=NETWORK_COLOURS["scale-up"], edgecolor="none",
                                 label=f"scale-up ({_domain_words(topology)})"))
        legend = figure.legend(
            handles=handles, loc="lower center", bbox_to_anchor=(0.5, 0.02),
            ncol=min(len(handles), LEGEND_COLUMNS), fontsize=7, frameon=False,
            handlelength=1.2, columnspacing=1.2,
            title=("leaf colour = rail"
                   + ("" if values else ", host bundles in their rail's colour")) if rails
            else "",
            title_fontsize=7)
        legend.get_title().set_color(MUTED_COLOUR)
    figure.text(0.5, 1 - 0.12 / figure_height, heading, ha="center", va="top", fontsize=9,
                color=TEXT_COLOUR)
    if values is not None:
        utilisation_bar(figure, LEFT_MARGIN_IN + width + RIGHT_MARGIN_IN, bottom_margin,
                        height, values.label + ", busiest link of a bundle")
    figure.savefig(path, dpi=DPI)


def _domain_words(topology: Topology) -> str:
    """'8 GPUs a domain, 3600 Gbps a GPU' (the first domain's; they are alike)."""
    domain = topology.domains[0]
    return f"{len(domain.gpus)} GPUs a domain, {format_rate(domain.rate_bps)} a GPU"


def _frame_domains(axes: Axes, topology: Topology, agg: Aggregation,
                   boxes: dict[GroupKey, Box]) -> None:
    """A dashed frame in the scale-up colour around each scale-up block and
    the server blocks its domains' servers are in, named over the block."""
    if agg.scale_up_row is None:
        return
    colour = NETWORK_COLOURS["scale-up"]
    by_name = {d.name: d for d in topology.domains}
    block_of = {m: g.key for g in agg.groups if g.key.row == 0 for m in g.members}
    for group in agg.groups:
        if group.key.row != agg.scale_up_row:
            continue
        servers = {block_of[s] for m in group.members for s in by_name[m].servers}
        held = [boxes[group.key], *(boxes[k] for k in servers)]
        left = min(b.x - b.width / 2 for b in held) - 0.07
        right = max(b.x + b.width / 2 for b in held) + 0.07
        top = max(b.top for b in held) + 0.07
        bottom = min(b.bottom for b in held) - 0.07
        axes.add_patch(FancyBboxPatch(
            (left, bottom), right - left, top - bottom,
            boxstyle="round,pad=0,rounding_size=0.08",
            facecolor=(0.012, 0.412, 0.631, 0.05), edgecolor=colour, linewidth=1.0,
            linestyle="--", zorder=0.6, clip_on=False))
        # named in the gap over the scale-up block, beside its bundle
        block = boxes[group.key]
        axes.text(block.x - block.width / 2, block.top + 0.12, "scale-up domains",
                  ha="left", va="bottom", fontsize=6, color=colour, zorder=5,
                  bbox={"boxstyle": "round,pad=0.1", "facecolor": "white",
                        "edgecolor": "none", "alpha": 0.85})


def _draw_bundles(axes: Axes, agg: Aggregation, boxes: dict[GroupKey, Box],
                  colours: list[tuple[float, float, float, float]] | None,
                  values: LinkValues | None) -> None:
    ends = _ends(agg, boxes)
    cmap = value_colours()
    low_w, high_w = VALUE_WIDTH_PT
    texts: list[tuple[float, str, float, float, float, float]] = []
    for i, bundle in enumerate(agg.bundles):
        x0, x1 = ends[i]
        y0, y1 = boxes[bundle.low].top, boxes[bundle.high].bottom
        if bundle.low.row == bundle.high.row:  # DCI: an arc between two sites' borders
            y1 = boxes[bundle.high].top
            value = bundle_value(bundle, values) if values is not None else 0.0
            colour = (cmap(value) if values is not None and value > 0
                      else NETWORK_COLOURS["dci"] if values is None else IDLE_LINK_COLOUR)
            axes.add_patch(PathPatch(
                Path([(x0, y0), ((x0 + x1) / 2, y0 + 1.0), (x1, y1)],
                     [Path.MOVETO, Path.CURVE3, Path.CURVE3]), facecolor="none",
                edgecolor=colour, linewidth=min(1.0 + len(bundle.links) / 32, 3.0), zorder=1))
            texts.append((value, f"DCI {len(bundle.links)}" if values is None
                          else f"max {value * 100:.0f} %", x0, y0 + 0.5, x1, y1 + 0.5))
            continue
        if values is None:
            colour = (colours[bundle.high.rail] if colours is not None
                      and bundle.high.rail is not None
                      else NETWORK_COLOURS[bundle.network] if bundle.network != "backend"
                      else FABRIC_LINK_COLOUR)
            axes.add_line(Line2D([x0, x1], [y0, y1], color=colour, alpha=0.85, zorder=1,
                                 linewidth=min(1.0 + len(bundle.links) / 32, 3.0)))
            if len(agg.bundles) <= COUNTED_BUNDLES:
                texts.append((0.0, f"{len(bundle.links)}", x0, y0, x1, y1))
            continue
        value = bundle_value(bundle, values)
        if value > 0:
            axes.add_line(Line2D([x0, x1], [y0, y1], color=cmap(value),
                                 linewidth=low_w + (high_w - low_w) * value,
                                 solid_capstyle="butt", zorder=1 + 0.4 * value))
            texts.append((value, f"max {value * 100:.0f} %", x0, y0, x1, y1))
        else:
            axes.add_line(Line2D([x0, x1], [y0, y1], color=IDLE_LINK_COLOUR, linewidth=0.6,
                                 linestyle=(0, (3, 2)), zorder=0.8))
    if values is not None:
        texts = sorted(texts, key=lambda item: -item[0])[:LABELLED_BUNDLES]
    placed: list[tuple[float, float, float]] = []
    for value, text, x0, y0, x1, y1 in texts:
        x, y = free_spot(text, x0, y0, x1, y1, placed, (0.5, 0.62, 0.38, 0.74, 0.26))
        axes.text(x, y, text, ha="center", va="center", fontsize=6, color=TEXT_COLOUR,
                  zorder=6, bbox={"boxstyle": "round,pad=0.15", "facecolor": "white",
                                  "edgecolor": cmap(value) if values else FABRIC_LINK_COLOUR,
                                  "linewidth": 0.6, "alpha": 0.92})

"""``link_heatmap.png``: every link's utilisation of a big fabric as one grid,
where the block picture (:mod:`emulator.topology.draw_blocks`) shows only each
bundle's busiest member.

One row per bundle of links between two blocks (:mod:`emulator.topology.aggregate`:
servers to a pod's edge, a rail's leaves to the spines, ...), rows grouped by
tier bottom up (host links first) and by pod or rail inside a tier; one cell
per member link, in topology order, coloured by its utilisation over the run
(the busier direction, on the same 0..100 % scale as ``utilisation.png``;
idle links grey);
right of each row its busiest and mean member. A bundle of more than
:data:`MAX_COLUMNS` links takes several rows. A row with one hot cell is
an ECMP collision; a whole hot row is a hot pod or rail. The counters give
one figure per link for the whole run, so columns are links, not time.
"""

from __future__ import annotations

from os import PathLike
from typing import Mapping

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from emulator.topology.aggregate import Aggregation
from emulator.topology.draw_style import (
    DPI, IDLE_LINK_COLOUR, MUTED_COLOUR, TEXT_COLOUR, value_colours,
)

MAX_COLUMNS = 64
IDLE = -1.0  # a link that carried nothing: grey, apart from a barely used one
CELL_WIDTH_IN = 0.16
CELL_HEIGHT_IN = 0.16
MIN_CELL_HEIGHT_IN = 0.1  # rows shrink to this before the picture grows past MAX_GRID_HEIGHT_IN
MAX_GRID_HEIGHT_IN = 16.0
LABEL_WIDTH_IN = 2.6
SUMMARY_WIDTH_IN = 1.5
TOP_IN = 0.3  # plus a line per title line
BOTTOM_IN = 0.55


def heatmap_rows(agg: Aggregation, values: Mapping[tuple[str, int], float]
                 ) -> list[tuple[str, list[float]]]:
    """(label, member values clipped to 0..1) per row, bottom tier first."""
    rows: list[tuple[str, list[float]]] = []
    for bundle in agg.bundles:
        members = [min(max(float(values.get(k, 0.0)), 0.0), 1.0) for k in bundle.links]
        name = f"{bundle.low.label} – {bundle.high.label}"
        for start in range(0, len(members), MAX_COLUMNS):
            part = members[start:start + MAX_COLUMNS]
            label = name if len(members) <= MAX_COLUMNS else (
                f"{name} [{start + 1}–{start + len(part)}]")
            rows.append((label, part))
    return rows


def draw_heatmap(agg: Aggregation, values: Mapping[tuple[str, int], float],
                 path: str | PathLike[str], *, title: str, label: str) -> None:
    """Draw the grid (module docstring) into ``path``; ``title`` heads it,
    ``label`` names the value on the colour bar."""
    rows = heatmap_rows(agg, values)
    columns = max(len(cells) for _, cells in rows)
    cell_h = max(min(CELL_HEIGHT_IN, MAX_GRID_HEIGHT_IN / len(rows)), MIN_CELL_HEIGHT_IN)
    grid_w, grid_h = max(columns * CELL_WIDTH_IN, 3.0), len(rows) * cell_h
    top = TOP_IN + 0.2 * (title.count("\n") + 1)
    width = LABEL_WIDTH_IN + grid_w + SUMMARY_WIDTH_IN + 0.9
    height = top + grid_h + BOTTOM_IN
    figure = Figure(figsize=(width, height), dpi=DPI)
    FigureCanvasAgg(figure)
    axes = figure.add_axes((LABEL_WIDTH_IN / width, BOTTOM_IN / height,
                            grid_w / width, grid_h / height))
    grid = np.full((len(rows), columns), np.nan)
    for i, (_, cells) in enumerate(rows):
        grid[i, :len(cells)] = [c if c > 0 else IDLE for c in cells]
    cmap = value_colours().with_extremes(bad="white", under=IDLE_LINK_COLOUR)
    image = axes.imshow(np.ma.masked_invalid(grid), cmap=cmap, vmin=0.0, vmax=1.0,
                        aspect="auto", interpolation="nearest", origin="upper")
    font = min(6.5, cell_h * 72 * 0.8)
    axes.set_yticks(range(len(rows)), [name for name, _ in rows], fontsize=font,
                    color=TEXT_COLOUR)
    step = 1 if columns <= 16 else 4 if columns <= 64 else 8
    axes.set_xticks(range(0, columns, step), [str(c + 1) for c in range(0, columns, step)],
                    fontsize=6, color=MUTED_COLOUR)
    axes.set_xlabel("member link of the bundle (topology order)", fontsize=7,
                    color=MUTED_COLOUR)
    axes.tick_params(length=0)
    axes.set_xticks(np.arange(-0.5, columns, 1), minor=True)
    axes.set_yticks(np.arange(-0.5, len(rows), 1), minor=True)
    axes.grid(which="minor", color="white", linewidth=0.5)
    axes.tick_params(which="minor", length=0)
    for spine in axes.spines.values():
        spine.set_visible(False)
    for i, (_, cells) in enumerate(rows):
        axes.text(columns - 0.5 + 0.3, i, f"max {max(cells) * 100:.0f} %  mean "
                  f"{sum(cells) / len(cells) * 100:.0f} %", ha="left", va="center",
                  fontsize=font, color=TEXT_COLOUR, clip_on=False)
    bar_left = (LABEL_WIDTH_IN + grid_w + SUMMARY_WIDTH_IN) / width
    cax = figure.add_axes((bar_left, BOTTOM_IN / height, 0.14 / width,
                           min(grid_h, 3.0) / height))
    bar = figure.colorbar(image, cax=cax)
    bar.set_ticks([0, 0.5, 1.0])
    bar.set_ticklabels(["0 %", "50 %", "100 %"])
    bar.ax.tick_params(labelsize=7, colors=MUTED_COLOUR)
    bar.set_label(label, fontsize=7, color=TEXT_COLOUR)
    bar.outline.set_edgecolor(MUTED_COLOUR)
    figure.text(0.5, 1 - 0.12 / height, title, ha="center", va="top", fontsize=9,
                color=TEXT_COLOUR)
    figure.savefig(path, dpi=DPI)

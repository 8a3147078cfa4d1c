"""What the topology pictures share (:mod:`.draw` node by node,
:mod:`.draw_blocks` as blocks): the values a picture can show per link, the
colours of rails and of values, the title, the page's margins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

from matplotlib import colormaps
from matplotlib.cm import ScalarMappable
from matplotlib.colors import Colormap, LinearSegmentedColormap, Normalize
from matplotlib.figure import Figure

from emulator.topology.model import Topology, counts
from emulator.topology.units import format_delay, format_rate

DPI = 150
LEFT_MARGIN_IN = 0.95  # tier names
RIGHT_MARGIN_IN = 0.3
TOP_MARGIN_IN = 0.75  # title
BOTTOM_MARGIN_IN = 0.48  # legend title, plus a row per 8 legend entries
LEGEND_ROW_IN = 0.17
LEGEND_COLUMNS = 8
SPINE_COLOUR = "#4d5b6a"
AGG_COLOUR = "#7a8794"
FABRIC_LINK_COLOUR = "#9aa3ad"
TEXT_COLOUR = "#1f2937"
MUTED_COLOUR = "#6b7280"
IDLE_LINK_COLOUR = "#c4c9d0"
COLOURBAR_MARGIN_IN = 1.05  # right of the fabric, for the colour bar and its label
HEADING_IN = 0.16  # one more title line
VALUE_WIDTH_PT = (0.8, 5.0)  # line width of a link at value 0 and at value 1
# Links, NICs and switches of the networks other than the backend's rails.
NETWORK_COLOURS = {"front-end": "#0f766e", "storage": "#b45309", "dci": "#6d28d9",
                   "backend": "#4d5b6a", "scale-up": "#0369a1"}


@dataclass(frozen=True)
class LinkValues:
    """One number per link to draw over the fabric instead of the rail colours.

    ``values`` maps a link's ``(node_a, port_a)`` to a fraction, drawn on a
    0..1 scale (clipped; 0 or absent = idle); ``label`` titles the colour
    bar (shown in percent); ``labels`` (same keys) are written on their
    links; ``heading`` is a line added under the title.
    """

    values: Mapping[tuple[str, int], float]
    label: str
    labels: Mapping[tuple[str, int], str] = field(default_factory=dict)
    heading: str = ""


def rail_colours(count: int) -> list[tuple[float, float, float, float]]:
    """One colour per rail; tab10 without its grey, which fabric links use."""
    if count <= 9:
        cmap = colormaps["tab10"]
        return [cmap(i) for i in (0, 1, 2, 3, 4, 5, 6, 8, 9)[:count]]
    cmap = colormaps["turbo"]
    return [cmap(0.05 + 0.9 * i / (count - 1)) for i in range(count)]


def plural(count: int, word: str, words: str | None = None) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {words or word + 's'}"


def title(topology: Topology) -> str:
    c = counts(topology)
    spec = topology.spec
    if topology.kind == "fat-tree":
        switches = (f"k={spec.k}, {c['leaves']} edge, {c['aggs']} agg, "
                    f"{c['spines']} core switches")
    elif topology.kind == "leaf-spine":
        switches = (f"{plural(c['leaves'], 'ToR leaf', 'ToR leaves')}, "
                    f"{plural(c['spines'], 'spine')}, no rails")
    else:
        switches = (f"{plural(c['rails'], 'rail')}, {plural(c['leaves'], 'leaf', 'leaves')}, "
                    f"{plural(c['spines'], 'spine')}")
    host, fabric = spec.host_link, spec.fabric_link
    links = (f"host links {format_rate(host.rate_bps)} / {format_delay(host.delay_ns)}, "
             f"fabric links {format_rate(fabric.rate_bps)} / {format_delay(fabric.delay_ns)}")
    extra = ""
    if spec.sites is not None:
        dci = spec.sites.dci_link
        reach = (f"{spec.sites.distance_m / 1000:g} km" if spec.sites.distance_m is not None
                 else format_delay(dci.delay_ns))
        borders = plural(c["border_switches"] // spec.sites.count, "border switch",
                         "border switches")
        extra += (f"\n{spec.sites.count} sites x {borders}, {plural(c['dci_links'], 'DCI link')} "
                  f"{format_rate(dci.rate_bps)} / {reach}")
    sides = [f"{plural(c[key + '_switches'], 'switch', 'switches')} and "
             f"{plural(c[key + '_nics'], 'NIC')} on the {network}"
             for key, network in (("front_end", "front-end"), ("storage", "storage"))
             if c.get(key + "_switches")]
    if spec.storage is not None and spec.storage.network != "separate":
        sides.append(f"{plural(c['storage_nics'], 'storage NIC')} on the "
                     f"{spec.storage.network}")
    if sides:
        extra += "\n" + "; ".join(sides)
        hosts = [plural(c[key], word) for key, word in (("storage_nodes", "storage node"),
                                                         ("clients", "client")) if key in c]
        extra += (" (" + ", ".join(hosts) + ")") if hosts else ""
    return (f"{topology.name} ({topology.kind}): {plural(c['servers'], 'server')}, "
            f"{c['gpus']} GPUs, {switches}\n{links}  ·  {c['host_links']} host links, "
            f"{c['fabric_links']} fabric links{extra}")


def value_colours() -> Colormap:
    """Pale yellow (barely used) to dark red (saturated); white is left out so
    a lightly used link still shows against the background."""
    base = colormaps["YlOrRd"]
    return LinearSegmentedColormap.from_list(
        "link-values", [base(0.18 + 0.82 * i / 15) for i in range(16)])


def utilisation_bar(figure: Figure, left_in: float, bottom_in: float, height_in: float,
                    label: str) -> None:
    """The 0-100 % colour bar right of a drawing (``*_in``: inches from the
    figure's left and bottom edges; the bar spans the middle 80 % of
    ``height_in``)."""
    width_in, fig_height_in = figure.get_size_inches()
    cax = figure.add_axes((left_in / width_in, (bottom_in + 0.1 * height_in) / fig_height_in,
                           0.14 / width_in, 0.8 * height_in / fig_height_in))
    bar = figure.colorbar(ScalarMappable(Normalize(0, 100), value_colours()), cax=cax)
    bar.set_ticks([0, 25, 50, 75, 100])
    bar.set_ticklabels(["0 %", "25 %", "50 %", "75 %", "100 %"])
    bar.ax.tick_params(labelsize=7, colors=MUTED_COLOUR)
    bar.set_label(label, fontsize=8, color=TEXT_COLOUR)
    bar.outline.set_edgecolor(MUTED_COLOUR)


def free_spot(text: str, x0: float, y0: float, x1: float, y1: float,
               placed: list[tuple[float, float, float]],
               spots: tuple[float, ...]) -> tuple[float, float]:
    """The first of ``spots`` (fractions of the way from (x0, y0) to (x1, y1))
    where a label of ``text`` does not cover one already placed (the first
    spot when all do); records it."""
    half_w, height = 0.035 * len(text) + 0.05, 0.16  # inches, at font size 6
    chosen = None
    for t in spots:
        x, y = x0 + t * (x1 - x0), y0 + t * (y1 - y0)
        if all(abs(x - px) >= half_w + pw or abs(y - py) >= height for px, py, pw in placed):
            chosen = (x, y)
            break
    if chosen is None:
        chosen = (x0 + spots[0] * (x1 - x0), y0 + spots[0] * (y1 - y0))
    placed.append((chosen[0], chosen[1], half_w))
    return chosen

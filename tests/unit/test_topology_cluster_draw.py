"""The README's picture of the AI cluster (``docs/ai-cluster.png``, section
"The AI cluster"), drawn by ``topo draw`` of ``topologies/ai-cluster.yaml``:
scale-up domains boxed around their servers and switch, sites apart, DCI
arcs, front-end and storage fabrics in their colours; and ``topo show``'s
links table, one row per network. ``AIFABRIC_UPDATE_PICTURES=1`` writes the
regenerated picture over the committed one."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
from matplotlib.colors import to_rgb
from matplotlib.image import imread

from emulator.cli.main import main
from emulator.topology import load_topology, scale_up_tier
from emulator.topology.draw_style import NETWORK_COLOURS
from emulator.topology.layout import layout_topology

ROOT = Path(__file__).resolve().parents[2]
AI_CLUSTER = ROOT / "topologies" / "ai-cluster.yaml"
PICTURE = ROOT / "docs" / "ai-cluster.png"


def _pixels(image: np.ndarray, network: str) -> int:
    colour = np.array(to_rgb(NETWORK_COLOURS[network]))
    return int((np.abs(image[..., :3] - colour) < 0.04).all(axis=-1).sum())


def test_each_scale_up_switch_sits_under_its_domains_servers():
    t = scale_up_tier(load_topology(AI_CLUSTER))
    place = layout_topology(t)
    assert len(t.domains) == 8
    for domain in t.domains:
        (server,) = domain.servers
        switch, box = place.switches[domain.name], place.servers[server]
        assert switch.x == box.x and switch.top < box.bottom
        # nearer the servers than any front-end or storage switch
        side = [place.switches[s.name].y for s in t.switches if s.network != "backend"]
        assert switch.y > max(side)


def test_readme_picture_shows_every_network(tmp_path, capsys):
    out = tmp_path / "ai-cluster.png"
    assert main(["topo", "draw", str(AI_CLUSTER), "-o", str(out)]) == 0
    image = imread(out)
    # scale-up frames, switches and links; the DCI arcs and borders; both side fabrics
    assert _pixels(image, "scale-up") > 6000  # 10,952 as drawn; none without the tier
    assert _pixels(image, "dci") > 2000
    assert _pixels(image, "front-end") > 2000 and _pixels(image, "storage") > 2000
    if os.environ.get("AIFABRIC_UPDATE_PICTURES") == "1":
        shutil.copy(out, PICTURE)
    committed = imread(PICTURE)
    assert committed.shape == image.shape  # the committed picture is the current drawing's
    assert abs(_pixels(committed, "scale-up") - _pixels(image, "scale-up")) < 200


def test_topo_show_gives_each_network_its_own_row(capsys):
    assert main(["topo", "show", str(AI_CLUSTER)]) == 0
    rows = {}
    for line in capsys.readouterr().out.splitlines():
        cells = [c.strip() for c in line.strip("│ ").split("│")]
        if len(cells) == 4 and cells[1].isdigit():
            rows[cells[0]] = cells[1:]
    t = load_topology(AI_CLUSTER)
    # the backend's host and fabric rows count only its own links: 64 GPUs' NICs;
    # per site 8 leaves x 2 spines + 2 borders x 2 spines
    assert rows["host"] == ["64", "400Gbps", "1us"]
    assert rows["fabric"] == ["40", "400Gbps", "1us"]
    assert rows["scale-up (sim)"] == ["64", "3600Gbps", "250ns hop"]
    assert rows["dci"] == ["2", "400Gbps", "50us"]
    assert sum(int(count) for name, (count, _, _) in rows.items()
               if name != "scale-up (sim)") == len(t.links)

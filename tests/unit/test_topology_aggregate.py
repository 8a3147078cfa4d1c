"""Big fabrics drawn as blocks: which groups and bundles a fabric has, when
``auto`` aggregates, a bundle coloured by its busiest member, the pictures'
size bound, and the shipped (small) fabrics still drawn node by node."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from matplotlib.image import imread

from emulator.cli.main import main
from emulator.topology import load_topology, topology_from_dict
from emulator.topology.aggregate import MAX_BLOCKS_PER_ROW, aggregate, aggregated
from emulator.topology.draw import LinkValues, draw_topology
from emulator.topology.draw_blocks import bundle_value
from emulator.topology.draw_style import DPI, value_colours

TOPOLOGIES = Path(__file__).resolve().parents[2] / "topologies"
LINK = {"rate": "400Gbps", "delay": "1us"}
# A picture of any fabric drawn as blocks fits in this many pixels (width, height).
MAX_BLOCKS_PX = (4000, 1300)


def fat_tree(k: int):
    return topology_from_dict({"name": f"ft{k}", "kind": "fat-tree", "k": k,
                               "gpus_per_server": 1, "host_link": LINK, "fabric_link": LINK})


def rail(servers: int, gpus: int = 8, per_leaf: int = 16, spines: int = 8,
         kind: str = "rail-optimized"):
    return topology_from_dict({"name": f"{kind}-{servers}", "kind": kind, "servers": servers,
                               "gpus_per_server": gpus, "servers_per_leaf": per_leaf,
                               "spines": spines, "host_link": LINK, "fabric_link": LINK})


def test_fat_tree_k8_has_a_block_per_pod_and_tier_and_bundles_of_16():
    t = fat_tree(8)
    agg = aggregate(t)
    rows = Counter(g.key.row for g in agg.groups)
    assert rows == {0: 8, 1: 8, 2: 8, 3: 1}  # servers, edge, agg by pod; one core block
    assert [g.label for g in agg.groups][:2] == ["pod 0 servers", "pod 1 servers"]
    assert all(len(g.members) == 16 for g in agg.groups if g.key.row == 0)
    assert len(agg.bundles) == 24 and {len(b.links) for b in agg.bundles} == {16}
    # every link in exactly one bundle, and that bundle joins its ends' blocks
    keys = [k for b in agg.bundles for k in b.links]
    assert sorted(keys) == sorted((lk.node_a, lk.port_a) for lk in t.links)
    core = next(b for b in agg.bundles if b.high.label == "core" and b.low.label == "pod 3 agg")
    assert all(name.startswith("agg-p3-") for name, _ in core.links)


def test_a_1024_gpu_rail_fabric_bundles_each_server_group_to_each_rail():
    t = rail(128)
    agg = aggregate(t)
    assert [g.label for g in agg.groups if g.key.row == 0][:2] == ["srv0–15", "srv16–31"]
    host = [b for b in agg.bundles if b.kind == "host"]
    fabric = [b for b in agg.bundles if b.kind == "fabric"]
    assert len(host) == 8 * 8 and {len(b.links) for b in host} == {16}
    assert len(fabric) == 8 and {len(b.links) for b in fabric} == {8 * 8}  # 8 leaves x 8 spines
    assert {b.high.rail for b in host} == set(range(8))  # host bundles end on their rail's block
    assert sum(len(b.links) for b in agg.bundles) == len(t.links)


def test_many_leaves_share_blocks_so_a_row_stays_bounded():
    t = rail(256, gpus=2, per_leaf=4, spines=4, kind="leaf-spine")  # 64 ToRs
    agg = aggregate(t)
    per_row = Counter(g.key.row for g in agg.groups)
    assert per_row[0] == per_row[1] == MAX_BLOCKS_PER_ROW
    assert agg.groups[MAX_BLOCKS_PER_ROW].label == "tor0–3"
    assert agg.groups[0].label == "srv0–15"
    assert sum(len(b.links) for b in agg.bundles) == len(t.links)
    pods = aggregate(fat_tree(20))  # 20 pods: two to a block
    assert [g.label for g in pods.groups if g.key.row == 1][:2] == ["pods 0–1 edge",
                                                                    "pods 2–3 edge"]
    assert Counter(g.key.row for g in pods.groups) == {0: 10, 1: 10, 2: 10, 3: 1}


def test_auto_aggregates_big_fabrics_only():
    for path in sorted(TOPOLOGIES.glob("*.yaml")):
        topo = load_topology(path)
        # above 64 servers and switches: the shipped 1,024-GPU rail fabric
        big = len(topo.servers) + len(topo.switches) > 64
        assert aggregated(topo) == big, path.name
    assert aggregated(load_topology(TOPOLOGIES / "rail-128x8.yaml"))
    assert aggregated(fat_tree(8)) and aggregated(rail(128))
    assert aggregated(load_topology(TOPOLOGIES / "quickstart.yaml"), "on")
    assert not aggregated(fat_tree(8), "off")
    with pytest.raises(ValueError, match="auto, on, off"):
        aggregated(fat_tree(8), "yes")


def _pixels_near(image: np.ndarray, rgb: tuple[float, float, float], tol: float = 0.04) -> int:
    return int((np.abs(image[..., :3] - np.array(rgb)) < tol).all(axis=-1).sum())


def test_a_bundle_takes_the_colour_of_its_busiest_member(tmp_path):
    t = fat_tree(8)
    agg = aggregate(t)
    hot = next(b for b in agg.bundles if b.low.label == "pod 2 edge")
    values = {hot.links[5]: 1.0, hot.links[6]: 0.1}  # one saturated member, one barely used
    assert bundle_value(hot, LinkValues(values, "u")) == 1.0
    assert bundle_value(agg.bundles[0], LinkValues(values, "u")) == 0.0
    out, idle = tmp_path / "hot.png", tmp_path / "idle.png"
    draw_topology(t, out, LinkValues(values, "utilisation"))
    draw_topology(t, idle, LinkValues({hot.links[6]: 0.1}, "utilisation"))
    dark = value_colours()(1.0)[:3]
    # the saturated end of the scale appears on the line (and the colour bar) only when the
    # busiest member is saturated; the bar alone is 0.14 in wide
    bar_only = _pixels_near(imread(idle), dark)
    assert _pixels_near(imread(out), dark) > bar_only + 200


def test_block_pictures_stay_bounded_and_labels_keep_their_size(tmp_path):
    for t in (fat_tree(8), fat_tree(16), fat_tree(20), rail(128),
              rail(256, per_leaf=4, spines=32)):
        values = {(lk.node_a, lk.port_a): 0.5 for lk in t.links}
        for name, v in (("plain", None), ("values", LinkValues(values, "u", heading="a\nb"))):
            out = tmp_path / f"{t.name}-{name}.png"
            draw_topology(t, out, v)
            height, width = imread(out).shape[:2]
            assert width <= MAX_BLOCKS_PX[0] and height <= MAX_BLOCKS_PX[1], (t.name, width,
                                                                              height)
    assert DPI == 150  # block labels are 6..7.5 pt: 12..16 px high at 100 % zoom


def test_shipped_fabrics_are_drawn_as_before(tmp_path):
    for name in ("quickstart", "rail-4x4", "leaf-spine-4x4"):
        t = load_topology(TOPOLOGIES / f"{name}.yaml")
        auto, detail, blocks = (tmp_path / f"{name}-{m}.png" for m in ("auto", "off", "on"))
        draw_topology(t, auto)
        draw_topology(t, detail, aggregate="off")
        draw_topology(t, blocks, aggregate="on")
        assert np.array_equal(imread(auto), imread(detail))
        assert imread(auto).shape != imread(blocks).shape


def test_cli_draws_blocks_on_request_and_refuses_a_detail_too_wide(tmp_path, capsys):
    small = TOPOLOGIES / "rail-4x4.yaml"
    out = tmp_path / "blocks.png"
    assert main(["topo", "draw", str(small), "-o", str(out), "--aggregate", "on"]) == 0
    assert "Drawn as blocks" not in capsys.readouterr().err
    big = tmp_path / "big.yaml"
    big.write_text("name: big\nkind: rail-optimized\nservers: 512\ngpus_per_server: 8\n"
                   "servers_per_leaf: 32\nspines: 16\nhost_link: {rate: 400Gbps, delay: 1us}\n"
                   "fabric_link: {rate: 400Gbps, delay: 1us}\n")
    wide = tmp_path / "wide.png"
    assert main(["topo", "draw", str(big), "-o", str(wide), "--aggregate", "off"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "inches wide" in err and "--aggregate" in err
    assert not wide.exists()
    with pytest.raises(SystemExit):
        main(["topo", "draw", str(small), "-o", str(out), "--aggregate", "maybe"])


def with_scale_up(t, servers_per_domain: int = 1, built: bool = True):
    """``t`` with 450 GB/s scale-up domains; with the tier built (as sim builds it)."""
    from emulator.topology import scale_up_tier
    spec = {**t.spec.to_dict(), "scale_up": {"rate": "450GBps", "hop_latency": "250ns",
                                             "servers_per_domain": servers_per_domain}}
    return scale_up_tier(topology_from_dict(spec)) if built else topology_from_dict(spec)


@pytest.mark.parametrize("servers_per_domain", [1, 4])
def test_scale_up_blocks_sit_under_their_servers_counted_in_domains(servers_per_domain):
    from emulator.topology.aggregate import scale_up_words
    from emulator.topology.draw_blocks import block_layout
    t = with_scale_up(rail(128), servers_per_domain)   # 8 server blocks of 16 servers
    agg = aggregate(t)
    assert agg.scale_up_row == -1 and agg.row_name(-1) == "scale-up"
    su = [g for g in agg.groups if g.key.row == -1]
    servers = [g for g in agg.groups if g.key.row == 0]
    assert len(su) == len(servers) == 8     # one scale-up block per server block
    _, _, boxes, _ = block_layout(agg)
    per_block = 16 // servers_per_domain
    for i, group in enumerate(su):
        home = agg.server_block(group)
        assert home is not None and home.key.order == group.key.order
        assert boxes[group.key].x == boxes[home.key].x       # right under its servers
        assert boxes[group.key].top < boxes[home.key].bottom
        first = i * per_block
        assert group.label == f"su{first}–{first + per_block - 1}"
        assert scale_up_words(t, group) == f"{per_block} domains · 128 GPUs"
        # every domain's servers are in the block it sits under
        domains = {d.name: d for d in t.domains}
        assert {s for m in group.members for s in domains[m].servers} <= set(home.members)
    # one bundle per server block to its scale-up block, a link per GPU
    bundles = [b for b in agg.bundles if b.network == "scale-up"]
    assert len(bundles) == 8 and all(len(b.links) == 128 for b in bundles)
    assert all(b.low.row == -1 and b.high.row == 0 and b.low.order == b.high.order
               for b in bundles)
    assert scale_up_words(t, servers[0]) is None


def test_a_block_picture_frames_and_names_the_scale_up_tier(tmp_path):
    from matplotlib.colors import to_rgb
    from emulator.topology.draw_style import NETWORK_COLOURS
    plain, tiered = rail(128), with_scale_up(rail(128))
    colour = np.array(to_rgb(NETWORK_COLOURS["scale-up"]))
    pixels = {}
    for name, t in (("plain", plain), ("tiered", tiered)):
        out = tmp_path / f"{name}.png"
        draw_topology(t, out, aggregate="on")
        image = imread(out)
        height, width = image.shape[:2]
        assert width <= MAX_BLOCKS_PX[0] and height <= MAX_BLOCKS_PX[1], (name, width, height)
        pixels[name] = int((np.abs(image[..., :3] - colour) < 0.04).all(axis=-1).sum())
    # frames, block edges, bundles and the legend in the scale-up colour; none without it
    assert pixels["plain"] == 0 and pixels["tiered"] > 3000, pixels
    # the file's topology (no tier built) is drawn with it: topo draw builds it;
    # only the heading differs (it counts the file's links, as node by node)
    out = tmp_path / "file.png"
    draw_topology(with_scale_up(plain, built=False), out, aggregate="on")
    drawn, built = imread(out), imread(tmp_path / "tiered.png")
    assert drawn.shape == built.shape
    assert np.array_equal(drawn[160:], built[160:])

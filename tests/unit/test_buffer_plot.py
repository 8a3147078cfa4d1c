"""``buffer.png`` (emulator/measure/buffer_plot.py) on synthetic rows of
``buffer.csv`` and ``priority_groups.csv``: what each panel draws, its
legend, and what it says when there is nothing to draw. The figures are
caught before they are closed."""

from __future__ import annotations

import pytest

from emulator.measure.buffer_plot import TOP_GROUPS, group_series, plot_buffer, switch_series
from tests.unit.plot_kit import PNG, figures, legend, texts  # noqa: F401 (figures: a fixture)

def _pool(switch, t, shared, headroom):
    return {"switch": switch, "t_s": str(t), "shared_used_bytes": str(shared),
            "headroom_used_bytes": str(headroom), "shared_bytes": "2000000",
            "headroom_bytes": "40000"}


def _group(switch, port, t, held, headroom, xoff):
    return {"switch": switch, "port": str(port), "priority": "3", "t_s": str(t),
            "pg_bytes": str(held), "headroom_used_bytes": str(headroom), "xoff": str(xoff)}


def test_panels_show_pool_headroom_and_fullest_groups(tmp_path, figures):
    # s1 fills to 500 KB with 10 KB of headroom; s2 to 100 KB, no headroom;
    # s3 holds nothing (a trailing zero only): left out
    buffer = [_pool("s1", 0.01 * i, 100_000 * i, 2_000 * i) for i in range(6)] + \
        [_pool("s1", 0.06, 0, 0), _pool("s2", 0.02, 100_000, 0), _pool("s2", 0.03, 0, 0),
         _pool("s3", 0.01, 0, 0)]
    groups = [_group("s1", p, 0.01 * i, 1_000 * i * p, 100 * i, int(i >= 3))
              for p in range(1, TOP_GROUPS + 3) for i in range(4)]
    path = plot_buffer(buffer, groups, tmp_path / "buffer.png", title="t", duration_s=0.1)
    assert path.read_bytes()[:8] == PNG
    fig = figures[0]
    ax_sh, ax_hr, ax_pg = fig.axes
    assert legend(ax_sh) == ["s1 (peak 500 KB of 2 MB, 25 %)", "s2 (peak 100 KB of 2 MB, 5 %)"]
    assert [list(line.get_ydata()) for line in ax_sh.lines][1] == [100.0, 0.0]   # KB
    assert legend(ax_hr) == ["s1 (peak 10 KB of 40 KB reserved)"]
    # the six fullest groups, fullest first, XOFF counted; dotted headroom lines
    labels = legend(ax_pg)
    assert len(labels) == TOP_GROUPS
    assert labels[0] == "s1 in-port 8 prio 3 (peak 24 KB, XOFF in 1 samples)"
    assert sum(1 for line in ax_pg.lines if line.get_linestyle() == ":") == TOP_GROUPS
    assert ax_pg.get_xlim() == pytest.approx((0.0, 0.1))


def test_nothing_held_says_so(tmp_path, figures):
    plot_buffer([_pool("s1", 0.01, 0, 0)], [], tmp_path / "buffer.png")
    ax_sh, _, ax_pg = figures[0].axes
    assert "no buffer held" in texts(ax_sh)
    assert "no ingress group held bytes" in texts(ax_pg)
    plot_buffer([_pool("s1", 0.01, 5_000, 0)], [], tmp_path / "buffer.png")
    assert "no headroom used" in texts(figures[1].axes[1])


def test_rows_become_series_by_time():
    pools = switch_series([_pool("s", 0.02, 2, 0), _pool("s", 0.01, 1, 0)])
    assert pools == {"s": [(0.01, 1, 0, 2_000_000, 40_000), (0.02, 2, 0, 2_000_000, 40_000)]}
    pgs = group_series([_group("s", 1, 0.02, 5, 1, 1), _group("s", 1, 0.01, 3, 0, 0)])
    assert pgs == {("s", 1, 3): [(0.01, 3, 0, False), (0.02, 5, 1, True)]}

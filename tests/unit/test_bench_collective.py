"""aifabric bench collective: nccl-tests' rows on the sim clock."""

import pytest

from emulator.cli.main import main
from emulator.run.bench import bench_collective, parse_size, sizes

TOPO = {"name": "b", "kind": "rail-optimized", "servers": 4, "gpus_per_server": 1,
        "servers_per_leaf": 4, "spines": 1,
        "host_link": {"rate": "1Gbps", "delay": "1us"},
        "fabric_link": {"rate": "1Gbps", "delay": "1us"}}


def test_sizes_follow_nccl_tests_syntax():
    assert sizes(parse_size("8", "-b"), parse_size("1K", "-e"), 2)[-1] == 1024
    assert parse_size("128M", "-e") == 128 << 20


def test_large_size_busbw_near_line_rate_and_small_size_latency_bound():
    small, large = bench_collective("all_reduce", [8, 1 << 20], "srv[0-3]/gpu0", TOPO)
    # idle fabric: busbw is the 1 Gb/s line less the frames' headers (within 5 % of 0.95)
    assert 0.90e9 <= large["busbw_GBps"] * 8e9 <= 1.0e9
    # 8 B: 2(n-1) = 6 ring steps, each two 1 us links plus two serializations of one
    # small frame (<= 128 B at 1 Gb/s: <= 1.024 us each)
    assert 6 * 2.0 <= small["time_us"] <= 6 * (2.0 + 2 * 1.024)
    assert small["wrong"] == 0 and large["completed"]


@pytest.mark.parametrize("argv, needle", [
    (["-b", "x"], "-b 'x'"), (["-f", "1"], "-f 1"), (["-b", "1M", "-e", "8"], "-e 8"),
    (["--topology", "no-such.yaml"], "--topology no-such.yaml: does not exist"),
    (["--topology", "topologies"], "--topology topologies: is a directory")])
def test_bad_flags_one_line(argv, needle, capsys):
    assert main(["bench", "collective", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert needle in err and "\n" not in err


@pytest.mark.parametrize("op, factor", [("all_gather", 3 / 4), ("reduce_scatter", 3 / 4),
                                        ("alltoall", 3 / 4), ("all_reduce", 6 / 4),
                                        ("sendrecv", 1.0)])
def test_json_rows_carry_nccl_tests_busbw_factor(op, factor, capsys):
    import json
    assert main(["bench", "collective", "--op", op, "-b", "4K", "-e", "8K", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["clock"] == "sim" and [r["size_bytes"] for r in out["rows"]] == [4096, 8192]
    for row in out["rows"]:
        assert row["busbw_GBps"] == pytest.approx(row["algbw_GBps"] * factor, rel=1e-6)
        assert row["algbw_GBps"] == pytest.approx(row["size_bytes"] / row["time_us"] / 1e3,
                                                  rel=1e-3)


def test_sendrecv_moves_the_whole_size_to_the_next_rank_at_line_rate():
    """nccl-tests' sendrecv: every rank sends S to the next and receives S
    from the previous at once; busbw = algbw; a large S runs each NIC at its
    line rate less headers both ways, a small one takes one hop's latency."""
    from emulator.scenario.collectives import plan_collective
    from emulator.scenario.loader import scenario_from_dict
    from emulator.run.bench import bench_scenario
    small, large = bench_collective("sendrecv", [8, 1 << 20], "srv[0-3]/gpu0", TOPO)
    assert 0.90e9 <= large["busbw_GBps"] * 8e9 <= 1.0e9
    assert large["busbw_GBps"] == pytest.approx(large["algbw_GBps"], rel=1e-9)
    # one step: two 1 us links and two serializations of one small frame
    assert 2.0 <= small["time_us"] <= 2.0 + 2 * 1.024
    assert small["wrong"] == 0 and large["completed"] and large["redop"] == "none"
    # the plan: one flow a rank to the next (a ring shift), S bytes each, no dependencies
    scenario = scenario_from_dict(bench_scenario("sendrecv", 1 << 20, "srv[0-3]/gpu0", TOPO),
                                  "<b>", ".", "sim")
    plan = plan_collective(scenario.collectives[0], scenario.topology)
    pairs = sorted((f.src, f.dst, f.size_bytes) for f in plan.flows)
    assert pairs == [(f"srv{i}/gpu0", f"srv{(i + 1) % 4}/gpu0", 1 << 20) for i in range(4)]
    assert plan.steps == 1 and all(op.after == () for op in plan.ops)

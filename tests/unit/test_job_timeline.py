"""The step timeline: idle spans, and a PNG of a pipelined step."""

from emulator.measure.job_timeline import idle_spans, plot_step
from emulator.scenario.jobs_graph import FabricCost, TrainingJob, build_step, evaluate
from emulator.scenario.jobs_model import Gpu, ModelShape


def test_idle_spans_are_the_gaps():
    assert idle_spans([(2.0, 3.0), (0.5, 1.0), (2.5, 4.0)], 5.0) == [(0.0, 0.5), (1.0, 2.0),
                                                                   (4.0, 5.0)]
    assert idle_spans([], 1.0) == [(0.0, 1.0)]
    assert idle_spans([(0.0, 1.0)], 1.0) == []


def test_timeline_png_of_a_pipelined_step(tmp_path):
    model = ModelShape(layers=4, hidden=512, heads=8, kv_heads=8, ffn=2048, vocab=1000)
    job = TrainingJob(model, Gpu(1e13, 0.5), seq=256, micro_batch=1, global_batch=8, pp=2, dp=2)
    nodes = build_step(job)
    result = evaluate(nodes, FabricCost(rate_bps=1e9))
    out = plot_step(nodes, result, tmp_path / "step.png", title="[analytic]")
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # stage 0 waits in the pipeline's bubble: its idle time is the step less its compute
    busy = [(result.start_s[n.id], result.end_s[n.id]) for n in nodes
            if n.rank == 0 and n.kind == "compute"]
    idle = sum(b - a for a, b in idle_spans(busy, result.iteration_s))
    compute0 = sum(n.duration_s for n in nodes if n.rank == 0 and n.kind == "compute")
    assert abs(idle - (result.iteration_s - compute0)) < 1e-12 and idle > 0

"""The calibration's measurements (emulator/budget/calibrate.py): the
leaf forwards every frame it is given, into a sink that keeps none, and
the per-frame figures are positive CPU times of a sane size."""

from __future__ import annotations

from emulator.p4.exec.pipeline import QueueInfo
from emulator.budget import calibrate


def test_calibration_leaf_forwards_the_write_frame_to_the_far_gpu():
    with calibrate.calibration_leaf(payload_bytes=256) as leaf:
        assert len(leaf.frame) == 256 + 58  # Ethernet, IPv4, UDP, BTH, ICRC
        (item,) = leaf.pipeline.ingress(leaf.port, leaf.frame).queued
        (out,) = leaf.pipeline.egress(item, QueueInfo()).outputs
        assert out.data[:6] != leaf.frame[:6]  # rewritten for the next hop
        assert out.data[14 + 8] == leaf.frame[14 + 8] - 1  # TTL
        dp = leaf.dataplane
        now = 1.0
        for _ in range(50):
            now += 1e-6
            dp.receive(leaf.port, leaf.frame, now)
            dp.run_due(now)
        dp.run_due(now + 1.0)
        assert leaf.sink.sent == 50


def test_per_frame_figures_are_positive_and_below_a_millisecond():
    switch_us = calibrate.measure_switch_us(frames=200)
    agent_us = calibrate.measure_agent_us(size_bytes=64 << 10)
    assert 0 < switch_us < 1000 and 0 < agent_us < 1000

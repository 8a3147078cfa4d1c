"""LatenessTally: counting per µs and folding when read gives the histogram
recording each event gives (buckets, count, sum, max), read at any time."""

from __future__ import annotations

import random

from emulator.fidelity import LatenessHistogram
from emulator.targets.builtin.tally import LatenessTally


def test_a_tally_reads_as_the_histogram_of_every_event():
    rng = random.Random(7)
    tally, reference = LatenessTally(), LatenessHistogram()
    for i in range(5000):
        late_s = rng.choice([-1e-6, 0.0, 3e-7, 1e-6]) if i % 3 else rng.expovariate(1 / 2e-4)
        assert tally.record_s(late_s) == reference.record_s(late_s)
        if i % 777 == 0:  # read in the middle: folding twice changes nothing
            assert tally.to_dict() == reference.to_dict()
    assert tally.to_dict() == reference.to_dict()
    assert tally.count == reference.count == 5000 and tally.max_us == reference.max_us
    assert tally.histogram().percentile_us(0.99) == reference.percentile_us(0.99)
    tally.reset()
    assert tally.count == 0 and tally.to_dict() == LatenessHistogram().to_dict()


def test_the_hot_path_may_add_to_counts_directly():
    tally = LatenessTally()
    counts = tally.counts
    counts[0] = counts.get(0, 0) + 2
    counts[40] = counts.get(40, 0) + 1
    tally.reset()
    assert tally.counts is counts, "reset keeps the dictionary the hot path holds"
    counts[5] = 1
    assert tally.count == 1 and tally.max_us == 5

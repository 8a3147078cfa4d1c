"""The garbage collector settled for a sim run, and put back after."""

import gc

import pytest

from emulator.sim.collector import YOUNG_THRESHOLD, settled_collector


def test_setup_is_frozen_and_young_collections_are_rarer_during_the_run() -> None:
    before = gc.get_threshold()
    with settled_collector():
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_put_back_when_the_run_fails() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError):
        with settled_collector(5000):
            assert gc.get_threshold()[0] == 5000
            raise RuntimeError("a rank failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0

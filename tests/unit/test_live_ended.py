"""Why and when a live run ended, in both units (emulator.run.live._ended)."""

from types import SimpleNamespace

from emulator.run.live import _ended


def test_scaled_run_reports_both_units():
    out = _ended("work done", 25.8652, SimpleNamespace(time_scale=20))
    assert out == {"reason": "work done", "at_s": 25.8652, "at_dc_s": 1.29326}


def test_unscaled_run_has_no_dc_twin():
    assert _ended("duration reached", 3.0, SimpleNamespace(time_scale=1)) == \
        {"reason": "duration reached", "at_s": 3.0}

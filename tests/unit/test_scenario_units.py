"""Sizes, durations and thresholds of scenario files: parse, format, convert."""

from __future__ import annotations

import pytest

from emulator.scenario.units import (
    Threshold,
    format_duration,
    format_size,
    parse_duration_ns,
    parse_size_bytes,
    parse_threshold,
)


@pytest.mark.parametrize("text, size_bytes", [
    ("4MB", 4_000_000), ("4MiB", 4 * 1024 * 1024), ("20KB", 20_000), ("20kB", 20_000),
    ("64KiB", 65_536), ("1GB", 10**9), ("2GiB", 2 * 1024**3), ("1500B", 1500), ("1.5KB", 1500),
    ("4 MB", 4_000_000), (1024, 1024), ("1024", 1024), (0, 0),
])
def test_sizes(text, size_bytes):
    assert parse_size_bytes(text) == size_bytes


@pytest.mark.parametrize("text, message", [
    ("4MiBs", "'4MiBs' is not a size"),
    ("4Mb", "'b' means bits and sizes are bytes (write 4MB)"),
    ("10kb", "(write 10KB)"),
    ("4Kib", "(write 4KiB)"),
    ("1.5B", "not a whole number of bytes"),
    ("-3", "is not a size"),
    (-3, "is not a size >= 0"),
    (True, "is not a size"),
    (2.5, "is not a size"),
    ("4 M B", "is not a size"),
])
def test_bad_sizes(text, message):
    with pytest.raises(ValueError, match=None) as caught:
        parse_size_bytes(text)
    assert message in str(caught.value)


@pytest.mark.parametrize("text, duration_ns", [
    ("10s", 10**10), ("1ms", 10**6), ("55us", 55_000), ("1.5us", 1500), ("7ns", 7),
    (0, 0), ("0", 0), ("0s", 0),
])
def test_durations(text, duration_ns):
    assert parse_duration_ns(text) == duration_ns


@pytest.mark.parametrize("text, message", [
    (10, "10 has no unit (write 10s, 10ms, 10us or 10ns)"),
    ("10", "'10' has no unit"),
    ("10sec", "'10sec' is not a duration"),
    ("-1s", "'-1s' is not a duration"),
    ("1.5ns", "not a whole number of ns"),
    (False, "is not a duration"),
])
def test_bad_durations(text, message):
    with pytest.raises(ValueError) as caught:
        parse_duration_ns(text)
    assert message in str(caught.value)


def test_thresholds_in_bytes_or_packets():
    assert parse_threshold("20KB") == Threshold(20_000, "bytes")
    assert parse_threshold(3000) == Threshold(3000, "bytes")
    assert parse_threshold("16pkts") == Threshold(16, "pkts")
    assert parse_threshold("1pkt") == Threshold(1, "pkts")
    for bad, message in (("2.5pkts", "whole number of packets"), ("x", "'x' is not a threshold"),
                         ("20 packets", "is not a threshold")):
        with pytest.raises(ValueError, match=message):
            parse_threshold(bad)


def test_threshold_conversion_rounds_bytes_up_to_whole_frames():
    frame = 1082  # 1024B MTU + 58 bytes of headers
    assert Threshold(20_000, "bytes").to_packets(frame) == 19  # 18.48 -> 19
    assert Threshold(80_000, "bytes").to_packets(frame) == 74  # 73.94 -> 74
    assert Threshold(1082 * 5, "bytes").to_packets(frame) == 5  # exact stays exact
    assert Threshold(1, "bytes").to_packets(frame) == 1
    assert Threshold(0, "bytes").to_packets(frame) == 0
    assert Threshold(16, "pkts").to_packets(frame) == 16
    assert Threshold(16, "pkts").to_bytes(frame) == 16 * 1082
    assert Threshold(20_000, "bytes").to_bytes(frame) == 20_000
    assert str(Threshold(20_000, "bytes")) == "20KB" and str(Threshold(3, "pkts")) == "3pkts"


@pytest.mark.parametrize("size_bytes, text", [
    (4_000_000, "4MB"), (65_536, "64KiB"), (1500, "1500B"), (0, "0B"), (10**9, "1GB"),
    (1024**2, "1MiB"), (1_048_577, "1048577B"), (256_000, "256KB"),
])
def test_format_size_is_whole_and_parses_back(size_bytes, text):
    assert format_size(size_bytes) == text
    assert parse_size_bytes(text) == size_bytes


def test_format_duration():
    assert [format_duration(ns) for ns in (0, 2 * 10**9, 1500, 55_000)] == [
        "0s", "2s", "1500ns", "55us"]

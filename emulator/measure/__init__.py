"""Measurements: counters, captures, metrics."""

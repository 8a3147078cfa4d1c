"""Errors of running a tutorials exercise."""

from __future__ import annotations


class ExerciseError(Exception):
    """A mistake in an exercise's files or choices (one line: the file, the
    key, what is allowed), or a switch that refused its runtime config."""

    exit_code = 2

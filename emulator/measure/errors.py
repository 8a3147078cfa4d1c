"""The error raised when measurements the user points at cannot be used
(a run directory without results, a report that cannot be written)."""

from __future__ import annotations


class MeasureError(ValueError):
    """One line naming the file or directory and what is wrong with it; the
    CLI prints it as is and exits with ``exit_code``."""

    exit_code = 2

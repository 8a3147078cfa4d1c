"""Errors the built-in switch raises; the CLI turns them into one line."""

from __future__ import annotations


class SwitchError(Exception):
    """Something the switch cannot do as asked."""


class UnknownPortError(SwitchError, KeyError):
    """A port number the switch does not have."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else "unknown port"


class PortConfigError(SwitchError, ValueError):
    """A port setting out of range or of the wrong type."""


class PipelineLoadError(SwitchError):
    """A device config that cannot be turned into a pipeline."""

"""The error raised for a scenario the user got wrong."""

from __future__ import annotations

from typing import Mapping, Sequence

# Line numbers of keys by key path (list indices as strings, as the YAML reader
# records them); () is never looked up.
KeyLines = Mapping[tuple[str, ...], int]
KeyPath = Sequence["str | int"]


class ScenarioError(ValueError):
    """A scenario description that cannot be used.

    The message is one line naming the file, the line (when known), the key
    and what is allowed; the CLI prints it as is and exits with ``exit_code``.
    """

    exit_code = 2


def key_text(path: KeyPath) -> str:
    """``('workload', 'flows', 0, 'size')`` -> ``workload.flows[0].size``."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text


class Where:
    """Where a scenario came from, to turn a key path into a one-line error.

    ``source`` is the file path (or ``<dict>``); ``lines`` maps key paths to
    YAML line numbers. A missing key takes its nearest enclosing key's line.
    """

    def __init__(self, source: str, lines: KeyLines | None = None) -> None:
        self.source = source
        self.lines: KeyLines = lines or {}

    def line(self, path: KeyPath) -> int | None:
        parts = tuple(str(part) for part in path)
        for depth in range(len(parts), 0, -1):
            found = self.lines.get(parts[:depth])
            if found is not None:
                return found
        return None

    def error(self, path: KeyPath, message: str) -> ScenarioError:
        """``SOURCE[:LINE]: [key 'a.b[0].c': ]MESSAGE``."""
        line = self.line(path)
        where = f"{self.source}:{line}" if line is not None else self.source
        key = f"key '{key_text(path)}': " if path else ""
        return ScenarioError(f"{where}: {key}{message}")

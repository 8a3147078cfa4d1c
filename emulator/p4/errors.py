"""Diagnostics of the P4 toolchain, printed the way compilers print them.

``FILE:LINE:COL: error: message``, then the source line and a caret under the
column. A :class:`CompileError` carries every diagnostic of one run.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class SourceLocation:
    """A position in a source file; ``line`` and ``col`` count from 1."""

    file: str
    line: int
    col: int
    source_line: str | None = None

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


@dataclass(frozen=True)
class Diagnostic:
    location: SourceLocation | None
    message: str
    severity: str = "error"

    def format(self) -> str:
        if self.location is None:
            return f"{self.severity}: {self.message}"
        text = f"{self.location}: {self.severity}: {self.message}"
        src = self.location.source_line
        if src is not None:
            src = src.rstrip("\n").expandtabs(1)
            text += f"\n{src}\n{' ' * max(self.location.col - 1, 0)}^"
        return text


class P4Error(Exception):
    """Base of every error the toolchain raises for a user's input."""

    exit_code = 1


@dataclass
class CompileError(P4Error):
    """One or more errors found in a P4 program."""

    diagnostics: list[Diagnostic] = field(default_factory=list)

    def __post_init__(self) -> None:
        super().__init__(self.__str__())

    def __str__(self) -> str:
        return "\n".join(d.format() for d in self.diagnostics)


class UnsupportedError(CompileError):
    """Valid P4 that the built-in target cannot run yet.

    Messages say "not supported by the built-in target" so the user knows the
    program is not wrong, only beyond this toolchain.
    """


class RuntimeConfigError(P4Error):
    """Bad runtime state: an unknown table, field, action or parameter, a
    value that does not fit its width. One line naming what is wrong."""

    exit_code = 2


class ExecutionError(P4Error):
    """A packet could not be processed (for example a malformed input)."""

"""The front end in one call: preprocess, parse and check a P4 program into
the typed IR (``compile_file``/``compile_text``)."""

from __future__ import annotations

import os
from typing import Iterable

from emulator.p4 import ir
from emulator.p4.check import check_program
from emulator.p4.parser import parse_program, parse_text


def compile_file(path: str | os.PathLike[str],
                 include_dirs: Iterable[str | os.PathLike[str]] = ()) -> ir.Program:
    """Check the program at ``path``; raises CompileError with every error."""
    return check_program(parse_program(path, include_dirs), str(path))


def compile_text(text: str, filename: str = "<string>",
                 include_dirs: Iterable[str | os.PathLike[str]] = ()) -> ir.Program:
    return check_program(parse_text(text, filename, include_dirs), filename)

"""Compiling an exercise's programs as its Makefile does, with ``aifabric p4
compile`` in place of ``p4c-bm2-ss``: every program ``NAME.p4`` becomes
``build/NAME.json`` (the device config, where the tutorials have BMv2's
JSON) and ``build/NAME.p4.p4info.txtpb``, the names the exercise's
``sN-runtime.json`` and ``topology.json`` refer to.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from emulator.exercise.spec import Exercise
from emulator.p4.device import make_device_config
from emulator.p4.p4info.from_ir import p4info_for
from emulator.p4.p4info.text import write_text

BUILD_DIR = "build"


@dataclass(frozen=True)
class Compiled:
    source: Path
    device_config: Path   # build/NAME.json
    p4info: Path          # build/NAME.p4.p4info.txtpb
    tables: int
    actions: int


@dataclass(frozen=True)
class Build:
    programs: tuple[Compiled, ...]
    default: Compiled     # what the switches start with (DEFAULT_JSON)


def output_paths(directory: Path, program: Path) -> tuple[Path, Path]:
    build = directory / BUILD_DIR
    return build / f"{program.stem}.json", build / f"{program.stem}.p4.p4info.txtpb"


def build_exercise(exercise: Exercise) -> Build:
    """Compile every program of ``exercise`` into its ``build/``; P4 errors
    come out as the front end reports them (file, line, what is wrong)."""
    compiled = []
    for source in exercise.programs:
        device_path, p4info_path = output_paths(exercise.directory, source)
        data, program = make_device_config(source)
        device_path.parent.mkdir(parents=True, exist_ok=True)
        device_path.write_bytes(data)
        write_text(p4info_for(program), p4info_path)
        compiled.append(Compiled(source, device_path, p4info_path, len(program.tables),
                                 len(program.actions)))
    default = next(c for c in compiled if c.source == exercise.default_program)
    return Build(tuple(compiled), default)

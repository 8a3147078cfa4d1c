"""The device configuration of the built-in target: what ``aifabric p4
compile`` writes and what a switch loads (the ``p4_device_config`` of a
P4Runtime ``SetForwardingPipelineConfig``).

It is JSON, self-contained: the preprocessed program text (includes
resolved), so a switch recompiles it with the same front end and needs no
files. ``{"format": "aifabric-p4-device/1", "program": "basic.p4",
"source": "..."}``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable

from emulator.p4 import ir
from emulator.p4.check import check_program
from emulator.p4.errors import P4Error
from emulator.p4.parser import DEFAULT_DEFINES, parse_program, parse_text
from emulator.p4.preprocessor import preprocess

FORMAT = "aifabric-p4-device/1"


class DeviceConfigError(P4Error):
    """A device configuration that is not ours or is damaged."""

    exit_code = 2


def make_device_config(path: str | os.PathLike[str],
                       include_dirs: Iterable[str | os.PathLike[str]] = ()) -> tuple[bytes, ir.Program]:
    """Compile ``path``; return the device configuration and the IR."""
    dirs = tuple(include_dirs)
    program = check_program(parse_program(path, dirs), str(path))
    source = preprocess(path, dirs, DEFAULT_DEFINES)
    config = {"format": FORMAT, "program": Path(path).name, "source": source.text}
    return json.dumps(config).encode(), program


def program_from_device_config(data: bytes) -> ir.Program:
    """The IR of a device configuration (recompiled from its source)."""
    try:
        config = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise DeviceConfigError("device config is not JSON; expected the output of "
                                "'aifabric p4 compile'") from None
    if not isinstance(config, dict) or config.get("format") != FORMAT:
        if isinstance(config, dict) and ("__meta__" in config or "pipelines" in config):
            raise DeviceConfigError("device config is a BMv2 JSON (p4c's output); the built-in "
                                    "target runs what 'aifabric p4 compile PROGRAM.p4' writes")
        raise DeviceConfigError(f"device config format is not {FORMAT!r}; "
                                "compile the program with 'aifabric p4 compile'")
    name = str(config.get("program", "program.p4"))
    return check_program(parse_text(str(config.get("source", "")), name), name)


def load_device_config(data: bytes, **pipeline_options: object):  # type: ignore[no-untyped-def]
    """A ready pipeline for a device configuration."""
    from emulator.p4.exec.pipeline import V1ModelPipeline

    return V1ModelPipeline(program_from_device_config(data), **pipeline_options)  # type: ignore[arg-type]


def build_pipeline(config: bytes, *, priority_queues: int = 8,
                   seed: int = 0):  # type: ignore[no-untyped-def]
    """The switch targets' pipeline loader (``loader(config, priority_queues=N,
    seed=S)``); ``seed`` seeds the program's random stream (``random()``)."""
    return load_device_config(config, priority_queues=priority_queues, seed=seed)

"""fabric.p4 compiled for a switch target: the device config the controller
pushes and the P4Info it encodes entries with. Our own front end for the
built-in and virtual-time targets, p4c-bm2-ss for BMv2 (where installed)."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from p4.config.v1 import p4info_pb2

from emulator.network import bmv2
from emulator.network.errors import NetworkError
from emulator.p4.device import make_device_config
from emulator.p4.p4info.from_ir import p4info_for

FABRIC_P4 = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"


class TargetUnavailable(NetworkError):
    """The requested switch target is not installed here (one line, no
    traceback: the CLI prints network errors as the user's)."""

    exit_code = 2


@dataclass
class CompiledFabric:
    device_config: bytes
    p4info: p4info_pb2.P4Info
    p4info_path: Path


def compile_fabric(target: str, workdir: Path) -> CompiledFabric:
    """fabric.p4 for ``target`` (``builtin``, ``sim`` or ``bmv2``), its P4Info
    also written as text into ``workdir``."""
    workdir.mkdir(parents=True, exist_ok=True)
    p4info_path = workdir / "fabric.p4info.txtpb"
    if target == "bmv2":
        missing = [tool for tool in (bmv2.COMPILER_BINARY, bmv2.SWITCH_BINARY, bmv2.CLI_BINARY)
                   if shutil.which(tool) is None]
        if missing:
            raise TargetUnavailable(f"target bmv2: {', '.join(missing)} not installed here "
                                    "(BMv2 and p4c come with the Vagrant VM)")
        bmv2.require_priority_queues(bmv2.require_tool(bmv2.SWITCH_BINARY))
        out = workdir / "fabric.json"
        config = bmv2.compile_program(str(FABRIC_P4), str(out), str(p4info_path))
        from emulator.p4.p4info.text import read_text
        return CompiledFabric(config, read_text(p4info_path), p4info_path)
    config, program = make_device_config(FABRIC_P4)
    p4info = p4info_for(program)
    from emulator.p4.p4info.text import write_text
    write_text(p4info, p4info_path)
    return CompiledFabric(config, p4info, p4info_path)

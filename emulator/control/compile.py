"""fabric.p4 compiled for a switch target: the device config the controller
pushes and the P4Info it encodes entries with. Our own front end for the
built-in and virtual-time targets, p4c-bm2-ss for BMv2 (where installed)."""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from p4.config.v1 import p4info_pb2

from emulator.p4.device import make_device_config
from emulator.p4.p4info.from_ir import p4info_for

FABRIC_P4 = Path(__file__).resolve().parents[2] / "p4src" / "fabric.p4"


class TargetUnavailable(Exception):
    """The requested switch target is not installed here (one line)."""

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
        p4c = shutil.which("p4c-bm2-ss")
        if p4c is None or shutil.which("simple_switch_grpc") is None:
            raise TargetUnavailable("target bmv2: p4c-bm2-ss and simple_switch_grpc are not "
                                    "installed here (they come with the Vagrant VM)")
        out = workdir / "fabric.json"
        subprocess.run([p4c, "--p4v", "16", "--p4runtime-files", str(p4info_path), "-o", str(out),
                        str(FABRIC_P4)], check=True, capture_output=True)
        from emulator.p4.p4info.text import read_text
        return CompiledFabric(out.read_bytes(), read_text(p4info_path), p4info_path)
    config, program = make_device_config(FABRIC_P4)
    p4info = p4info_for(program)
    from emulator.p4.p4info.text import write_text
    write_text(p4info, p4info_path)
    return CompiledFabric(config, p4info, p4info_path)

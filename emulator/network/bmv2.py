"""What the network layer needs of BMv2: its tools, the p4c command, and
port settings over Thrift.

BMv2 (``simple_switch_grpc``, ``simple_switch_CLI``, ``p4c-bm2-ss``) is
installed in the Vagrant VM only; :func:`require_tool` says so in one line
where it is missing.

Port settings: BMv2 has no link delay and no byte-based queues, and its
queue rate is in packets per second, per port, over Thrift only. After a
switch is up, each port gets ``set_queue_depth`` (the buffer in frames)
and ``set_queue_rate`` (the link rate in frames per second) through
``simple_switch_CLI``, both counted in frames of one size: full-size
Ethernet frames (1514 bytes) unless the network is given another
(``NetworkOptions.queue_frame_bytes``; a run passes its RoCE data frame,
MTU + 58 bytes, which carries nearly all its bytes). Smaller frames (ACKs,
CNPs) therefore leave faster than the link rate and larger ones slower. The queue thus builds inside BMv2,
where the P4 program sees it (``enq_qdepth``); no HTB is added on the
interfaces, since a kernel queue would hide it. Link delay is not realised.
``simple_switch_grpc`` opens its gRPC port before its Thrift server (and
registers the ``simple_switch`` Thrift service after that), so the switch
being "up" (gRPC answers) does not mean Thrift does: :func:`set_queues`
retries the CLI until it succeeds or :data:`THRIFT_WAIT_S` has passed.

With ``--priority-queues N`` both settings apply to each of a port's N
priority queues (BMv2's ``set_queue_rate RATE PORT`` sets every priority
queue of the port), not to the port as a whole: each queue holds the
buffer's worth of frames and each sends at up to the link rate, so a port
with k busy priorities sends at up to k times the link rate.

``--priority-queues`` is a target option of ``simple_switch_grpc`` since
BMv2 1.15.1 (commit adff022f). An older switch rejects the whole target
option list, ``--grpc-server-addr`` included, so every switch would bind
the default 0.0.0.0:9559: :func:`require_priority_queues` refuses such a
switch in one line before anything starts.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from typing import Sequence

from emulator.network.errors import NetworkError, SwitchStartError
from emulator.network.plan import PortPlan

SWITCH_BINARY = "simple_switch_grpc"
CLI_BINARY = "simple_switch_CLI"
COMPILER_BINARY = "p4c-bm2-ss"
FULL_FRAME_BYTES = 1514
CLI_TIMEOUT_S = 20.0
THRIFT_WAIT_S = 10.0
THRIFT_RETRY_S = 0.2
# What simple_switch_CLI prints for a command that failed (it still exits 0).
CLI_ERROR_MARKS = ("Error", "Invalid", "Traceback")


def require_tool(name: str) -> str:
    """The path of a BMv2/p4c tool, or a one-line error where it is absent."""
    found = shutil.which(name)
    if found is None:
        raise NetworkError(f"{name} is not installed here (BMv2 and p4c come with the Vagrant "
                           "VM: see the Vagrantfile)")
    return found


PRIORITY_QUEUES_OPTION = "--priority-queues"
FIRST_VERSION_WITH_PRIORITY_QUEUES = "1.15.1"


def has_priority_queues(help_text: str) -> bool:
    """Whether ``simple_switch_grpc --help`` lists the target option
    ``--priority-queues``."""
    return PRIORITY_QUEUES_OPTION in help_text


def require_priority_queues(binary: str) -> None:
    """A one-line error unless ``binary`` takes ``--priority-queues``."""
    try:
        done = subprocess.run([binary, "--help"], capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NetworkError(f"{binary} --help failed: {exc}") from exc
    if not has_priority_queues(done.stdout + done.stderr):
        raise NetworkError(f"{binary} has no {PRIORITY_QUEUES_OPTION} option; aifabric needs BMv2 "
                           f"{FIRST_VERSION_WITH_PRIORITY_QUEUES} or later (older switches ignore "
                           "every target option, --grpc-server-addr included)")


def compile_command(p4_path: str, out_json: str, p4info_path: str) -> list[str]:
    """``p4c-bm2-ss`` for a P4-16 v1model program: BMv2 JSON and P4Info."""
    return [COMPILER_BINARY, "--p4v", "16", "--p4runtime-files", p4info_path,
            "-o", out_json, p4_path]


def compile_program(p4_path: str, out_json: str, p4info_path: str) -> bytes:
    """Compile with p4c; returns the BMv2 JSON (the device config)."""
    args = compile_command(p4_path, out_json, p4info_path)
    args[0] = require_tool(COMPILER_BINARY)
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise NetworkError(f"p4c-bm2-ss failed on {p4_path}:\n{done.stderr.strip()}")
    with open(out_json, "rb") as handle:
        return handle.read()


def queue_commands(ports: Sequence[PortPlan], frame_bytes: int = FULL_FRAME_BYTES) -> list[str]:
    """``simple_switch_CLI`` commands giving each port its buffer (frames) and
    its rate (frames/s at ``frame_bytes``; 0 = unlimited is left alone)."""
    commands = []
    for port in ports:
        depth = max(1, port.buffer_bytes // frame_bytes)
        commands.append(f"set_queue_depth {depth} {port.port}")
        if port.rate_bps > 0:
            rate_pps = max(1, round(port.rate_bps / (8 * frame_bytes)))
            commands.append(f"set_queue_rate {rate_pps} {port.port}")
    return commands


def set_queues(switch: str, thrift_port: int, ports: Sequence[PortPlan],
               frame_bytes: int = FULL_FRAME_BYTES) -> None:
    """Apply :func:`queue_commands` to a running switch."""
    commands = queue_commands(ports, frame_bytes)
    if not commands:
        return
    cli = require_tool(CLI_BINARY)
    deadline = time.monotonic() + THRIFT_WAIT_S
    while True:
        # The commands only set values, so running them again is harmless.
        done = subprocess.run([cli, "--thrift-port", str(thrift_port)],
                              input="\n".join(commands) + "\n", capture_output=True, text=True,
                              timeout=CLI_TIMEOUT_S, check=False)
        if done.returncode == 0 or time.monotonic() >= deadline:
            break
        time.sleep(THRIFT_RETRY_S)
    if done.returncode != 0 or any(mark in done.stdout for mark in CLI_ERROR_MARKS):
        raise SwitchStartError(f"switch {switch}: setting queues over Thrift (port {thrift_port}) "
                               f"failed:\n{(done.stdout + done.stderr).strip()[-2000:]}")

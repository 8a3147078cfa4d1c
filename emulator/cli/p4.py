"""``aifabric p4``: compile P4 programs for the built-in target and push
packets through them.

    aifabric p4 compile PROGRAM.p4 [-o DEVICE_CONFIG] [--p4info P4INFO.txtpb] [-I DIR]
    aifabric p4 run PROGRAM.p4 [--entries RUNTIME.json] --packet PORT:HEX [...] [--json]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from emulator.p4.errors import P4Error


class P4UsageError(P4Error):
    """A bad command-line value (one line, exit code 2)."""

    exit_code = 2


def register(subparsers: argparse._SubParsersAction) -> None:
    p4 = subparsers.add_parser("p4", help="compile and run P4 programs on the built-in target",
                               description=__doc__.split("\n\n")[0])
    sub = p4.add_subparsers(dest="p4_command", metavar="SUBCOMMAND")
    p4.set_defaults(func=lambda args: (p4.print_help(), 2)[1])

    compile_p = sub.add_parser("compile", help="check a program, write its device config and P4Info")
    compile_p.add_argument("program", help="P4-16 source file (v1model)")
    compile_p.add_argument("-o", "--output", help="device config to write (default: PROGRAM.json)")
    compile_p.add_argument("--p4info", help="P4Info text protobuf to write (default: PROGRAM.p4info.txtpb)")
    compile_p.add_argument("-I", dest="include", action="append", default=[],
                           help="add an include directory")
    compile_p.set_defaults(func=_compile)

    run_p = sub.add_parser("run", help="run packets through a program and print what comes out")
    run_p.add_argument("program", help="P4-16 source file (v1model)")
    run_p.add_argument("--entries", help="runtime config in the p4lang tutorials' sN-runtime.json format")
    run_p.add_argument("--packet", action="append", default=[], metavar="PORT:HEX", required=True,
                       help="a packet entering on PORT, as hex bytes (repeatable; run in order)")
    run_p.add_argument("--seed", type=int, default=0, help="seed of random() and the random hash")
    run_p.add_argument("--priority-queues", type=int, default=1, metavar="N",
                       help="egress queues per port, as simple_switch's --priority-queues "
                            "(default 1, like simple_switch: a packet whose priority is N or "
                            "more is dropped)")
    run_p.add_argument("-I", dest="include", action="append", default=[],
                       help="add an include directory")
    run_p.add_argument("--json", action="store_true", help="print the result as JSON")
    run_p.set_defaults(func=_run)


def _compile(args: argparse.Namespace) -> int:
    from emulator.p4.device import make_device_config

    source = Path(args.program)
    data, program = make_device_config(source, args.include)
    out = Path(args.output) if args.output else source.with_suffix(".json")
    p4info_path = Path(args.p4info) if args.p4info else out.with_suffix(".p4info.txtpb")
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(data)
    from emulator.p4.p4info.from_ir import p4info_for
    from emulator.p4.p4info.text import write_text

    p4info_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(p4info_for(program), p4info_path)
    print(f"{source}: {len(program.tables)} tables, {len(program.actions)} actions; "
          f"wrote {out} and {p4info_path}")
    return 0


def _parse_packet(text: str) -> tuple[int, bytes]:
    port_text, sep, hex_text = text.partition(":")
    if not sep:
        raise P4UsageError(f"--packet {text!r}: expected PORT:HEX, e.g. 1:ffffffffffff0000...")
    try:
        port = int(port_text, 0)
    except ValueError:
        raise P4UsageError(f"--packet {text!r}: port {port_text!r} is not a number") from None
    if not 0 <= port < 512:
        raise P4UsageError(f"--packet {text!r}: port must be 0..511")
    cleaned = hex_text.replace(" ", "").replace(":", "")
    if cleaned.lower().startswith("0x"):
        cleaned = cleaned[2:]
    try:
        data = bytes.fromhex(cleaned)
    except ValueError:
        raise P4UsageError(f"--packet {text!r}: {hex_text[:20]!r}... is not hex bytes") from None
    return port, data


def _run(args: argparse.Namespace) -> int:
    from emulator.p4.exec.pipeline import V1ModelPipeline
    from emulator.p4.frontend import compile_file
    from emulator.p4.runtime_json import load_runtime_file

    packets = [_parse_packet(p) for p in args.packet]
    if not 1 <= args.priority_queues <= 8:
        raise P4UsageError("--priority-queues must be 1..8")
    pipeline = V1ModelPipeline(compile_file(args.program, args.include), seed=args.seed,
                               priority_queues=args.priority_queues, clock_us=_StepClock())
    if args.entries:
        load_runtime_file(pipeline, args.entries)
    outputs = []
    dropped = 0
    digests = []
    logs: list[str] = []
    for port, data in packets:
        result = pipeline.process(port, data)
        outputs.extend({"port": o.port, "hex": o.data.hex()} for o in result.outputs)
        dropped += result.dropped
        digests.extend({"name": name, "value": repr(value)} for name, value in result.digests)
        logs.extend(result.logs)
    if args.json:
        print(json.dumps({"outputs": outputs, "dropped": dropped, "digests": digests, "logs": logs}))
        return 0
    for line in logs:
        print(f"log: {line}")
    for out in outputs:
        print(f"port {out['port']}: {out['hex']}")
    print(f"{len(outputs)} out, {dropped} dropped")
    return 0


class _StepClock:
    """A deterministic clock for ``p4 run``: 1 µs per reading, so timestamps
    and meters give the same output on every run."""

    def __init__(self) -> None:
        self.now_us = 0.0

    def __call__(self) -> float:
        self.now_us += 1.0
        return self.now_us


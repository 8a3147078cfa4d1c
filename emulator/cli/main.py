"""Entry point of ``aifabric``: builds the argument parser from the command
registry and turns user errors raised below into one line and an exit code."""

from __future__ import annotations

import argparse
import importlib
import sys
from typing import Callable, Sequence

# Command group name -> module under emulator.cli that defines
# ``register(subparsers)``; the module adds its own sub-commands and sets
# ``func`` on the parsed namespace.
COMMANDS: dict[str, str] = {
    "topo": "emulator.cli.topo",
    "p4": "emulator.cli.p4",
    "up": "emulator.cli.up",
    "exercise": "emulator.cli.exercise",
    "scenario": "emulator.cli.scenario",
    "clean": "emulator.cli.clean",
    "run": "emulator.cli.run",
    "inspect": "emulator.cli.inspect",
    "shell": "emulator.cli.shell",
    "report": "emulator.cli.report",
    "view": "emulator.cli.view",
    "bench": "emulator.cli.bench",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="aifabric",
        description="Packet-level emulator of AI-cluster networks.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMANDS.values():
        module = importlib.import_module(module_name)
        module.register(subparsers)
    return parser


def _user_error_types() -> tuple[type[BaseException], ...]:
    """Exception types that mean "the user's input is wrong", with no traceback."""
    from emulator.cli.errors import user_error_types

    return user_error_types()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    func: Callable[[argparse.Namespace], int] | None = getattr(args, "func", None)
    if func is None:
        parser.print_help()
        return 2
    try:
        return func(args) or 0
    except _user_error_types() as exc:
        print(f"aifabric: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except KeyboardInterrupt:
        print("aifabric: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())

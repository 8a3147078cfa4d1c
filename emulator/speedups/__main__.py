"""``python -m emulator.speedups [build|status]``: build the simulator's
compiled modules for the sources as they are (what ``make setup`` runs), or
say whether this Python would load them."""

from __future__ import annotations

import sys

from emulator import speedups


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "status"
    if command == "build":
        from emulator.speedups.build import build
        from emulator.speedups.toolchain import Unavailable
        try:
            folder = build()
        except Unavailable as exc:
            print(f"speedups: not built: {exc} (the simulator runs as Python)", file=sys.stderr)
            return 1
        print(f"speedups: {len(speedups.GROUP)} modules built in {folder}")
        return 0
    if command == "status":
        for name in speedups.GROUP:
            __import__(name)
        print(f"speedups: {speedups.state()}")
        return 0
    print(f"speedups: unknown command {command!r} (allowed: build, status)", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

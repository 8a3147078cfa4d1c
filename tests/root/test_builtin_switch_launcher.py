"""Test-only launcher of the built-in switch (no tests here).

Runs ``aifabric-switch``'s main loop (:func:`run_switch`) with the basic
IPv4 program built as IR (10.0.P.0/24 → port P, priority from DSCP), since
the P4 front end cannot compile a program yet. Same arguments as
``aifabric-switch``; run from the repository root::

    python -m tests.root.test_builtin_switch_launcher -i 1@veth1 -i 2@veth2 ...
"""

from __future__ import annotations

import sys

from emulator.targets.builtin.cli import PROG, run_switch
from emulator.targets.builtin.errors import SwitchError
from tests.unit.test_builtin_support import basic_pipeline


def main(argv: list[str]) -> int:
    try:
        return run_switch(argv, pipeline=basic_pipeline())
    except SwitchError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

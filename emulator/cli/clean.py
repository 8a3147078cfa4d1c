"""``aifabric clean``: remove what crashed runs left behind.

Switch processes, namespaces, veth interfaces, Mininet shells and
temporary files of runs whose process is gone, found from their run
records and by their names (see :mod:`emulator.network.cleanup`). Live runs
are left alone. Prints what it removed; exits 0 when nothing is left, 1
when something could not be removed, 2 on a usage error.
"""

from __future__ import annotations

import argparse
import os
import sys

from emulator.network.errors import NetworkError
from emulator.network.record import DEFAULT_RECORD_DIR


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "clean", help="remove what crashed runs left behind",
        description="Remove switch processes, namespaces, interfaces and temporary files of "
                    "aifabric runs whose process is gone. Live runs are left alone; nothing "
                    "that is not aifabric's is touched (this is not 'mn -c').")
    parser.add_argument("-n", "--dry-run", action="store_true",
                        help="list what would be removed, remove nothing")
    parser.add_argument("--run", action="append", dest="runs", metavar="RUN_ID",
                        help="clean only this run (repeatable)")
    parser.add_argument("--record-dir", default=DEFAULT_RECORD_DIR,
                        help=f"where run records are (default {DEFAULT_RECORD_DIR})")
    parser.set_defaults(func=_clean)


def _clean(args: argparse.Namespace) -> int:
    if os.geteuid() != 0:
        print("aifabric clean: needs root (it removes namespaces and interfaces)", file=sys.stderr)
        return 2
    from emulator.network.cleanup import clean

    try:
        report = clean(args.record_dir, dry_run=args.dry_run, run_ids=args.runs)
    except NetworkError as exc:
        print(f"aifabric clean: {exc}", file=sys.stderr)
        return 1
    verb = "would remove" if report.dry_run else "removed"
    for item in report.removed:
        print(f"{verb} {item}")
    for run in report.live_runs:
        print(f"left alone live run {run}")
    for item in report.failed:
        print(f"aifabric clean: could not remove {item}", file=sys.stderr)
    if not report.removed and not report.failed:
        print("nothing to clean")
    return 0 if report.ok else 1

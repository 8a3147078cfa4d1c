"""``aifabric report DIR [DIR ...]``: put runs side by side in one file.

Reads the run directories ``aifabric run`` wrote (results.json, scenario.json,
the PNGs) and writes a comparison table, the collectives (when there are any)
and every run's plots side by side, kind by kind. HTML (the default) is one
self-contained file with the PNGs inlined; markdown references the PNGs by
relative path. Without ``-o`` the report is ``report.html`` (``report.md``)
in the current directory. A directory without results.json, unreadable JSON
or an ``-o`` in a directory that does not exist is one line and exit status
2, and nothing is written.
"""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    from emulator.measure.report import FORMATS

    p = subparsers.add_parser("report", help="compare runs side by side (HTML or markdown)",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("dirs", nargs="+", metavar="DIR", help="run directories (aifabric run --out)")
    p.add_argument("-o", "--out", metavar="FILE",
                   help="report file (default report.html, or report.md, here)")
    p.add_argument("--format", choices=FORMATS,
                   help="html (self-contained) or md; default: from FILE's suffix, else html")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from emulator.measure.report import write_report

    path, runs = write_report(args.dirs, args.out, args.format)
    print(f"report of {len(runs)} run{'s' if len(runs) != 1 else ''}: {path.resolve()}")
    return 0

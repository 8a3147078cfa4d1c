"""``aifabric inspect PCAP``: one line per captured frame, decoded.

Time (since the file's first frame), Ethernet source > destination, then
RoCEv2 (BTH opcode, dest QP, PSN, ack_req, IP ECN bits, FECN/BECN, AETH
syndrome/MSN, ICRC ok/BAD), CNPs marked as such, PFC (priorities and
quanta), anything else as Scapy's summary. ``--json`` prints one JSON object
per line instead.
"""

from __future__ import annotations

import argparse
import json
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from emulator.measure.inspect import ONLY_CHOICES

    p = subparsers.add_parser("inspect", help="decode a pcap, one line per frame",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("pcap", metavar="PCAP", help="capture file (pcap or pcapng)")
    p.add_argument("--only", choices=ONLY_CHOICES,
                   help="only RoCE data/ACKs, PFC frames, CNPs, or CE-marked IP frames")
    p.add_argument("--flow", nargs=2, metavar=("SRC_IP", "DST_IP"),
                   help="only IPv4 frames from SRC_IP to DST_IP")
    p.add_argument("--limit", type=int, metavar="N", help="stop after N frames shown")
    p.add_argument("--json", action="store_true", help="one JSON object per line")
    p.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    from emulator.measure.inspect import InspectError, format_line, inspect_pcap

    if args.limit is not None and args.limit < 0:
        print("aifabric: --limit must be >= 0", file=sys.stderr)
        return 2
    try:
        for rec in inspect_pcap(args.pcap, only=args.only,
                                flow=tuple(args.flow) if args.flow else None,
                                limit=args.limit):
            print(json.dumps(rec.to_dict()) if args.json else format_line(rec))
    except InspectError as exc:
        print(f"aifabric: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0

"""``aifabric shell [RUN_DIR]``: an interactive Python with Scapy and the
project's RoCEv2/PFC layers bound, and every pcap under RUN_DIR loaded.

The namespace has Scapy's names (``Ether``, ``IP``, ``rdpcap``...), the
project's layers (``BTH``, ``AETH``, ``RETH``, ``DETH``, ``ImmDt``, ``CNP``...),
``icrc_ok``, ``pfc_pause_quanta``, ``roce_parse``, ``decode`` (one-line
decoding, see :mod:`emulator.measure.inspect`) and ``captures``: pcap name
(its path under RUN_DIR, without ``.pcap``) -> Scapy PacketList.
"""

from __future__ import annotations

import argparse
import code
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("shell", help="interactive Python/Scapy with a run's captures",
                              description=__doc__.split("\n\n")[0])
    p.add_argument("run_dir", metavar="RUN_DIR", nargs="?", default=None,
                   help="a run's results directory (its pcaps are loaded)")
    p.set_defaults(func=_run)


def find_pcaps(run_dir: str | Path) -> dict[str, Path]:
    """Capture name -> file, for every ``*.pcap``/``*.pcapng`` under ``run_dir``."""
    root = Path(run_dir)
    found: dict[str, Path] = {}
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in (".pcap", ".pcapng"):
            found[str(path.relative_to(root).with_suffix(""))] = path
    return found


def build_namespace(run_dir: str | Path | None) -> tuple[dict[str, Any], str]:
    """The shell's globals and its banner. Raises ValueError for a missing
    directory; a pcap that does not load is reported in the banner."""
    import scapy.all as scapy_all
    from scapy.contrib.roce import AETH, BTH, CNPPadding
    from scapy.plist import PacketList
    from scapy.utils import rdpcap

    import emulator.traffic.layers  # noqa: F401  (binds UDP 4791 and the ETHs)
    from emulator.measure.inspect import decode_frame, format_line
    from emulator.traffic.layers.atomic import AtomicAckETH, AtomicETH
    from emulator.traffic.layers.deth import DETH
    from emulator.traffic.layers.icrc import icrc_ok
    from emulator.traffic.layers.immdt import ImmDt
    from emulator.traffic.layers.pfc import pfc_frame, pfc_pause_quanta
    from emulator.traffic.layers.reth import RETH
    from emulator.traffic.roce import parse as roce_parse

    ns: dict[str, Any] = {k: v for k, v in vars(scapy_all).items() if not k.startswith("_")}

    def decode(pkt: Any) -> str:
        """One line for a packet (Scapy or bytes), as ``aifabric inspect`` prints it."""
        return format_line(decode_frame(bytes(pkt), float(getattr(pkt, "time", 0.0))))

    ns.update(BTH=BTH, AETH=AETH, CNP=CNPPadding, RETH=RETH, DETH=DETH, ImmDt=ImmDt,
              AtomicETH=AtomicETH, AtomicAckETH=AtomicAckETH, icrc_ok=icrc_ok,
              pfc_frame=pfc_frame, pfc_pause_quanta=pfc_pause_quanta,
              roce_parse=roce_parse, decode=decode)
    captures: dict[str, PacketList] = {}
    lines = ["aifabric shell: Scapy with the RoCEv2/PFC layers bound "
             "(BTH, AETH, RETH, DETH, ImmDt, CNP; icrc_ok, pfc_pause_quanta, roce_parse, decode)"]
    if run_dir is not None:
        root = Path(run_dir)
        if not root.is_dir():
            raise ValueError(f"{run_dir}: not a directory")
        for name, path in find_pcaps(root).items():
            try:
                captures[name] = rdpcap(str(path))
            except Exception as exc:
                lines.append(f"  {name}: not loaded ({exc})")
                continue
            lines.append(f"  captures[{name!r}]: {len(captures[name])} packets")
        if not captures:
            lines.append(f"  no pcap under {root}")
    ns["captures"] = captures
    lines.append(f"captures: {len(captures)} loaded; e.g. decode(captures[name][0])")
    return ns, "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    try:
        ns, banner = build_namespace(args.run_dir)
    except ValueError as exc:
        print(f"aifabric: {exc}", file=sys.stderr)
        return 2
    # code.interact: works with or without a terminal (Scapy's interact
    # wants IPython or a tty and its own config to be useful).
    code.interact(banner=banner, local=ns, exitmsg="")
    return 0

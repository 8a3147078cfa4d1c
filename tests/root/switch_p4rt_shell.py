"""p4runtime-shell as a controller of a real ``aifabric-switch``, run as a
subprocess by ``test_switch_p4runtime.py`` (the shell keeps global state).

    python switch_p4rt_shell.py GRPC_ADDR P4INFO DEVICE_CONFIG

connects as primary (election id 0:1), pushes the program, inserts the
route of the tutorials' basic program (10.0.2.2/32 -> port 2, dst MAC
08:00:00:00:02:22), reads the table back and prints one JSON line; then
answers commands read from stdin, one JSON line each:

    counters   the indexed counter's cells of ports 1 and 2, and the
               direct counter of every entry of the table
    reconnect  teardown, then setup again without a config (the shell
               fetches the P4Info from the switch) and read the table
    quit       teardown and exit 0 (the test kills it instead, to see a
               controller vanish without closing its stream)

Any failure prints ``{"error": ...}`` and exits 1.
"""

from __future__ import annotations

import json
import sys
import traceback

import p4runtime_sh.shell as sh
from p4runtime_sh.global_options import global_options

TABLE = "MyIngress.ipv4_lpm"
ACTION = "MyIngress.ipv4_forward"
COUNTER = "MyIngress.rx_port_counter"
DIRECT = "MyIngress.lpm_counter"


def emit(obj: object) -> None:
    print(json.dumps(obj), flush=True)


def program(addr: str, p4info: str, device_config: str) -> dict:
    global_options.reset()
    sh.setup(device_id=0, grpc_addr=addr, election_id=(0, 1),
             config=sh.FwdPipeConfig(p4info, device_config), verbose=False)
    te = sh.TableEntry(TABLE)(action=ACTION)
    te.match["hdr.ipv4.dstAddr"] = "10.0.2.2/32"
    te.action["dstAddr"] = "08:00:00:00:02:22"
    te.action["port"] = "2"
    te.insert()
    duplicate = None
    try:
        te.insert()
    except Exception as exc:  # noqa: BLE001 - P4RuntimeWriteException
        duplicate = str(exc)
    return {"api": sh.APIVersion(), "entries": read_entries(), "duplicate_error": duplicate,
            "table_id": sh.context.get_obj_id(sh.P4Type.table, TABLE),
            "action_id": sh.context.get_obj_id(sh.P4Type.action, ACTION)}


def read_entries() -> list[dict]:
    entries = []
    for entry in sh.TableEntry(TABLE).read():
        msg = entry.msg()
        entries.append({
            "match": [{"field_id": m.field_id, "value": m.lpm.value.hex(),
                       "prefix_len": m.lpm.prefix_len} for m in msg.match],
            "action_id": msg.action.action.action_id,
            "params": {p.param_id: p.value.hex() for p in msg.action.action.params},
        })
    return entries


def reconnect(addr: str) -> dict:
    sh.teardown()
    global_options.reset()
    sh.setup(device_id=0, grpc_addr=addr, election_id=(0, 1), config=None, verbose=False)
    return {"entries": read_entries()}


def counters() -> dict:
    rx = {}
    for port in (1, 2):
        ce = sh.CounterEntry(COUNTER)
        ce.index = port
        (cell,) = list(ce.read())
        data = cell.msg().data
        rx[port] = [data.packet_count, data.byte_count]
    direct = []
    for cell in sh.DirectCounterEntry(DIRECT).read():
        msg = cell.msg()
        direct.append({"match": [m.lpm.value.hex() + "/" + str(m.lpm.prefix_len)
                                 for m in msg.table_entry.match],
                       "packets": msg.data.packet_count, "bytes": msg.data.byte_count})
    return {"rx": rx, "direct": direct}


def main(argv: list[str]) -> int:
    addr, p4info, device_config = argv
    try:
        emit(program(addr, p4info, device_config))
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "counters":
                emit(counters())
            elif cmd == "reconnect":
                emit(reconnect(addr))
            elif cmd == "quit":
                sh.teardown()
                emit({"bye": True})
                return 0
            else:
                emit({"error": f"unknown command {cmd!r}"})
        return 0
    except Exception as exc:  # noqa: BLE001 - reported to the test
        emit({"error": f"{type(exc).__name__}: {exc}", "trace": traceback.format_exc()})
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

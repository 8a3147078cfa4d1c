"""Small v1model programs for the conformance tests: a template that fills in
the blocks a test does not care about, and a switch wrapper that pushes hex
packets through the executor with a deterministic clock.

Expected outputs in the tests come from BMv2 (simple_switch) semantics: its
sources (``targets/simple_switch``, ``src/bm_sim``) and p4c's STF tests.
"""

from __future__ import annotations

from dataclasses import dataclass

from emulator.p4.errors import CompileError
from emulator.p4.exec.pipeline import CloneSession, V1ModelPipeline
from emulator.p4.frontend import compile_text

ETH = "header eth_t { bit<48> dst; bit<48> src; bit<16> type; }\n"

PRELUDE = "#include <core.p4>\n#include <v1model.p4>\n"

DEFAULT_PARSER = """
parser P(packet_in pkt, out headers hdr, inout metadata meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.eth); transition accept; }
}"""
DEFAULT_DEPARSER = "apply { pkt.emit(hdr); }"
EMPTY = "apply { }"


def v1switch(decls: str = "", *, headers: str = "struct headers { eth_t eth; }",
             meta: str = "struct metadata { }", parser: str = DEFAULT_PARSER,
             ingress: str = "apply { sm.egress_spec = 1; }", egress: str = EMPTY,
             deparser: str = DEFAULT_DEPARSER, verify: str = EMPTY, compute: str = EMPTY,
             eth: bool = True) -> str:
    """A whole program; ``ingress``/``egress``/… are control bodies (locals,
    actions, tables and the ``apply`` block)."""
    return (PRELUDE + (ETH if eth else "") + decls + "\n" + headers + "\n" + meta + "\n" + parser + f"""
control VC(inout headers hdr, inout metadata meta) {{ {verify} }}
control I(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
{ingress}
}}
control E(inout headers hdr, inout metadata meta, inout standard_metadata_t sm) {{
{egress}
}}
control CC(inout headers hdr, inout metadata meta) {{ {compute} }}
control D(packet_out pkt, in headers hdr) {{ {deparser} }}
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
""")


class StepClock:
    """1 µs per reading, as ``aifabric p4 run`` does."""

    def __init__(self, step_us: float = 1.0) -> None:
        self.now_us = 0.0
        self.step_us = step_us

    def __call__(self) -> float:
        self.now_us += self.step_us
        return self.now_us


@dataclass
class Switch:
    pipe: V1ModelPipeline

    @classmethod
    def build(cls, text: str, *, seed: int = 0, clock: StepClock | None = None,
              priority_queues: int = 8) -> "Switch":
        return cls(V1ModelPipeline(compile_text(text, "t.p4"), seed=seed,
                                   clock_us=clock or StepClock(), priority_queues=priority_queues))

    def send(self, port: int, data: bytes | str) -> list[tuple[int, str]]:
        """Outputs as (port, hex) in emission order."""
        if isinstance(data, str):
            data = bytes.fromhex(data.replace(" ", ""))
        return [(o.port, o.data.hex()) for o in self.pipe.process(port, data).outputs]

    def one(self, port: int, data: bytes | str) -> str:
        """The only packet out (any port), as hex."""
        out = self.send(port, data)
        assert len(out) == 1, out
        return out[0][1]

    def add(self, table: str, match: list, action: str, params: list[int] | tuple = (),
            priority: int = 0) -> None:
        t = self.pipe.table(table)
        t.insert(t.make_entry(action, list(params), t.canonical_key(match),
                              priority if t.needs_priority else 0))

    def default(self, table: str, action: str, params: list[int] | tuple = ()) -> None:
        t = self.pipe.table(table)
        t.set_default(t.make_entry(action, list(params), hit=False))

    def clone_session(self, session: int, replicas: list[tuple[int, int]]) -> None:
        self.pipe.set_clone_session(session, CloneSession(replicas))


def compile_errors(text: str) -> str:
    """The diagnostics of a program expected not to compile."""
    try:
        compile_text(text, "t.p4")
    except CompileError as exc:
        return str(exc)
    raise AssertionError("the program compiled")


def h(*parts: str) -> str:
    """Hex of space-separated parts, for readable expected packets."""
    return "".join(p.replace(" ", "") for p in parts).lower()


ETH_HDR = "000000000001" "000000000002"  # dst, src of the test frames


def crc16_arc(data: bytes) -> int:
    """CRC-16/ARC (BMv2's crc16: polynomial 0x8005 reflected, init 0), bit by
    bit from its definition, to check the executor's hash externs against."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc

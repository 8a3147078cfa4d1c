"""Bad input never crashes the toolchain: mutated valid programs either
compile or raise :class:`CompileError` (never another exception), and what
compiles runs random frames; random and truncated frames through real
programs raise nothing (BMv2 never fails a packet: a short one is a parser
error, not a crash). Deterministic seeds, bounded sizes."""

import random
import re
from pathlib import Path

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from emulator.p4.errors import CompileError, P4Error
from emulator.p4.exec.pipeline import V1ModelPipeline
from emulator.p4.frontend import compile_file, compile_text
from emulator.p4.runtime_json import apply_runtime_config
from tests.unit.p4.conformance_kit import StepClock

HERE = Path(__file__).parent
PROGRAMS = sorted((HERE / "programs").glob("*.p4")) + sorted((HERE / "conformance").glob("*.p4"))
TOKEN = re.compile(r'[A-Za-z_]\w*|\d+[ws]\d+|0x[0-9a-fA-F]+|\d+|&&&|\.\.|<<|>>|[{}()\[\];,.<>=+\-*/&|^!~?:@]')
WORDS = ("bit", "int", "header", "struct", "apply", "table", "action", "key", "exact", "lpm", "if",
         "else", "return", "exit", "transition", "select", "state", "default", "const", "in", "out",
         "inout", "_", "true", "false", "bool", "varbit", "error", "switch", "{", "}", "(", ")", ";",
         ",", "<", ">", "=", "[", "]", ".", "++", "&&&", "..", "<<", "|+|", ":", "?", "8w255", "0",
         "1", "9", "32", "4096", "-1", "hdr", "meta", "standard_metadata")


def mutate(text: str, rng: random.Random) -> str:
    """One to three token-level edits: delete, replace, swap, duplicate, or
    swap a number or a name for another of the program's."""
    for _ in range(rng.randint(1, 3)):
        spans = [(m.start(), m.end()) for m in TOKEN.finditer(text) if m.start() > 60]
        a, b = rng.choice(spans)
        word = text[a:b]
        op = rng.randrange(6)
        if op == 0:
            text = text[:a] + text[b:]
        elif op == 1:
            text = text[:a] + rng.choice(WORDS) + text[b:]
        elif op == 2:
            c, d = rng.choice(spans)
            if c >= b:
                text = text[:a] + text[c:d] + text[b:c] + word + text[d:]
        elif op == 3:
            text = text[:a] + word + " " + text[a:]
        elif word.isdigit():
            text = text[:a] + str(rng.choice((0, 1, 7, 8, 9, 31, 32, 33, 255, 256, 2049, 10**9))) + text[b:]
        elif re.fullmatch(r"[A-Za-z_]\w*", word):
            names = [text[c:d] for c, d in spans if re.fullmatch(r"[A-Za-z_]\w*", text[c:d])]
            text = text[:a] + rng.choice(names) + text[b:]
    return text


def random_frames(rng: random.Random, count: int) -> list[bytes]:
    return [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 90))) for _ in range(count)]


@pytest.mark.parametrize("seed", range(6))
def test_mutated_programs_compile_or_fail_with_compile_error(seed):
    rng = random.Random(1000 + seed)
    sources = [p.read_text() for p in PROGRAMS]
    outcomes = {"rejected": 0, "ran": 0}
    for _ in range(20):
        text = mutate(rng.choice(sources), rng)
        try:
            program = compile_text(text, "mutant.p4")
        except CompileError as exc:
            assert str(exc)                          # diagnostics, not a traceback
            outcomes["rejected"] += 1
            continue
        try:
            pipe = V1ModelPipeline(program, seed=seed, clock_us=StepClock())
        except P4Error:
            continue
        for frame in random_frames(rng, 3):
            try:
                pipe.process(rng.randrange(8), frame)
            except P4Error:
                pass
        outcomes["ran"] += 1
    assert outcomes["rejected"] > 0


def _basic_runtime(table: str, action: str, params: dict) -> dict:
    return {"table_entries": [{"table": table, "match": {"hdr.ipv4.dstAddr": ["10.0.0.0", 8]},
                               "action_name": action, "action_params": params}]}


RUNTIMES = {
    "basic_forwarding.p4": _basic_runtime("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward",
                                          {"dstAddr": "08:00:00:00:02:22", "port": 2}),
    "mri.p4": _basic_runtime("MyIngress.ipv4_lpm", "MyIngress.ipv4_forward",
                             {"dstAddr": "08:00:00:00:02:22", "port": 2}),
    "ecmp_hash.p4": {"table_entries": [
        {"table": "MyIngress.ecmp_group", "match": {"hdr.ipv4.dstAddr": ["10.0.0.0", 8]},
         "action_name": "MyIngress.set_ecmp_select", "action_params": {"ecmp_base": 0, "ecmp_count": 2}}]},
}


@pytest.mark.parametrize("name", ["basic_forwarding.p4", "basic_tunnel.p4", "mri.p4", "source_routing.p4",
                                  "calc.p4", "firewall.p4", "qos.p4", "multicast.p4", "ecmp_hash.p4"])
def test_random_and_truncated_frames_never_raise(name):
    path = HERE / ("conformance" if name == "ecmp_hash.p4" else "programs") / name
    pipe = V1ModelPipeline(compile_file(path), clock_us=StepClock())
    if name in RUNTIMES:
        apply_runtime_config(pipe, RUNTIMES[name])
    pipe.set_multicast_group(1, [(1, 1), (2, 1)])
    rng = random.Random(name)
    valid = bytes(Ether(dst="00:00:00:00:01:01") / IP(dst="10.0.2.2", ihl=6, options=[b"\x9f\x04\x00\x00"])
                  / TCP(flags="S") / b"payload")
    frames = [valid[:n] for n in range(len(valid) + 1)] + random_frames(rng, 40)
    frames += [bytes(Ether() / IP(dst="10.1.1.1") / UDP(dport=4791) / b"x")[:n] for n in range(14, 45, 3)]
    for frame in frames:
        result = pipe.process(rng.randrange(512), frame)
        for out in result.outputs:
            assert 0 <= out.port < 512 and isinstance(out.data, bytes)

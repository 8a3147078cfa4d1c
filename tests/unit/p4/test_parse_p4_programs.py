"""Whole tutorial-style v1model programs parse, fast, and damaged copies of
them fail with diagnostics only."""

from __future__ import annotations

import dataclasses
import random
import time
from pathlib import Path

import pytest

from emulator.p4 import ast
from emulator.p4.errors import CompileError
from emulator.p4.parser import _lark, parse_program, parse_text

PROGRAMS = Path(__file__).parent / "programs"
OURS = sorted(p.name for p in PROGRAMS.glob("*.p4"))


def own_decls(program: ast.Program, path: Path) -> list[ast.Node]:
    return [d for d in program.declarations if Path(d.loc.file).name == path.name]


def assert_pure_tree(node: object) -> None:
    """Only AST nodes, tuples and plain values: nothing of Lark left over."""
    if isinstance(node, ast.Node):
        assert isinstance(node.loc.line, int) and node.loc.line >= 1, node
        for field in dataclasses.fields(node):
            if field.name != "loc":
                assert_pure_tree(getattr(node, field.name))
    elif isinstance(node, tuple):
        for item in node:
            assert_pure_tree(item)
    else:
        assert node is None or type(node) in (str, int, bool), repr(node)


@pytest.mark.parametrize("name", OURS)
def test_program_parses(name):
    path = PROGRAMS / name
    program = parse_program(path)
    assert_pure_tree(program)
    decls = own_decls(program, path)
    assert decls, "the program's own declarations carry its file name"
    mains = [d for d in decls if isinstance(d, ast.Instantiation) and d.name == "main"]
    assert len(mains) == 1 and isinstance(mains[0].type, ast.TypeName)
    assert mains[0].type.name == "V1Switch" and len(mains[0].args) == 6


def test_the_v1model_declarations_come_first():
    program = parse_program(PROGRAMS / "basic_forwarding.p4")
    names = [getattr(d, "name", None) for d in program.declarations]
    for name in ("packet_in", "NoAction", "standard_metadata_t", "V1Switch", "mark_to_drop", "hash"):
        assert name in names
    std = next(d for d in program.declarations if getattr(d, "name", "") == "standard_metadata_t")
    widths = {f.name: f.type.width.value for f in std.fields if isinstance(f.type, ast.BitsType)}
    assert widths["ingress_port"] == 9 and widths["enq_qdepth"] == 19 and widths["deq_qdepth"] == 19
    assert widths["ingress_global_timestamp"] == 48 and widths["enq_timestamp"] == 32
    assert widths["priority"] == 3 and widths["mcast_grp"] == 16
    assert isinstance(std.fields[[f.name for f in std.fields].index("parser_error")].type, ast.ErrorType)
    assert std.annotations[1].string_value == "standard_metadata"


def test_basic_forwarding_tree():
    path = PROGRAMS / "basic_forwarding.p4"
    decls = {getattr(d, "name", None): d for d in own_decls(parse_program(path), path)}
    ingress = decls["MyIngress"]
    table = next(x for x in ingress.locals if isinstance(x, ast.TableDecl))
    assert table.name == "ipv4_lpm" and [k.match_kind for k in table.key] == ["lpm"]
    assert [a.name for a in table.actions] == ["ipv4_forward", "drop", "NoAction"]
    assert table.default_action.name == "drop" and table.default_action.args == ()
    parser = decls["MyParser"]
    assert [s.name for s in parser.states] == ["start", "parse_ethernet", "parse_ipv4"]
    select = parser.states[1].transition
    assert [c.state for c in select.cases] == ["parse_ipv4", "accept"]
    assert (select.loc.line, select.loc.col) == (51, 20)


def test_mri_uses_header_stacks_and_errors():
    path = PROGRAMS / "mri.p4"
    decls = own_decls(parse_program(path), path)
    headers = next(d for d in decls if getattr(d, "name", "") == "headers")
    stack = headers.fields[-1].type
    assert isinstance(stack, ast.HeaderStackType) and stack.size.value == 9  # MAX_HOPS, a #define
    assert any(isinstance(d, ast.ErrorDecl) for d in decls)


def test_v1model_2020_uses_generic_counters_and_registers():
    path = PROGRAMS / "v1model_2020.p4"
    program = parse_program(path)
    register = next(d for d in program.declarations if getattr(d, "name", "") == "register")
    assert [p.name for p in register.type_params] == ["T", "I"]
    ingress = next(d for d in own_decls(program, path) if getattr(d, "name", "") == "I")
    seen = next(x for x in ingress.locals if getattr(x, "name", "") == "seen")
    assert len(seen.type.args) == 2


def test_parse_time_of_a_400_line_program():
    _lark()  # the grammar is built once per process (about 0.4 s), not per parse
    path = PROGRAMS / "fabric_leaf.p4"
    assert len(path.read_text().splitlines()) >= 400
    elapsed = []
    for _ in range(3):  # best of three: the machine may be busy
        start = time.perf_counter()
        parse_program(path)
        elapsed.append(time.perf_counter() - start)
    assert min(elapsed) < 0.5, f"parsing took {min(elapsed):.3f} s"


@pytest.mark.parametrize("name", ["basic_forwarding.p4", "qos.p4", "fabric_leaf.p4"])
def test_damaged_programs_fail_with_diagnostics_only(name):
    text = (PROGRAMS / name).read_text()
    words = text.split(" ")
    rng = random.Random(name)
    for _ in range(25):
        damaged = list(words)
        for _ in range(rng.randint(1, 4)):
            k = rng.randrange(len(damaged))
            if rng.random() < 0.5:
                del damaged[k]
            else:
                damaged.insert(k, rng.choice(["{", "}", "(", ";", "<", ">", "@x(", "if", "0x", "table"]))
        try:
            parse_text(" ".join(damaged), name)
        except CompileError as exc:
            assert exc.diagnostics and all(d.location for d in exc.diagnostics)

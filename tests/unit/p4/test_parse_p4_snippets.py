"""Parsing P4-16 snippets into the syntax tree: declarations, tables,
parsers, statements and expressions."""

from __future__ import annotations

import pytest

from emulator.p4 import ast
from emulator.p4.parser import parse_text

PRELUDE = "#include <core.p4>\n#include <v1model.p4>\n"


def decls(src: str, with_prelude: bool = False) -> tuple[ast.Node, ...]:
    program = parse_text((PRELUDE if with_prelude else "") + src, "snippet.p4")
    own = [d for d in program.declarations if d.loc.file == "snippet.p4"]
    return tuple(own)


def one(src: str, with_prelude: bool = False) -> ast.Node:
    (decl,) = decls(src, with_prelude)
    return decl


def expr(text: str, prelude: str = "") -> ast.Expression:
    """The initializer of ``const bool x = <text>;``, after ``prelude``."""
    decl = decls(prelude + f"const bool __x = {text};")[-1]
    assert isinstance(decl, ast.ConstantDecl)
    return decl.value


def stmts(body: str, prelude: str = "") -> tuple[ast.Node, ...]:
    src = prelude + "control C(inout bit<8> x, inout bit<8> y) { apply {\n" + body + "\n} }"
    control = decls(src)[-1]
    assert isinstance(control, ast.ControlDecl)
    return control.body.statements


def d(node: object) -> str:
    return ast.dump(node)


# ---------------------------------------------------------------- types and declarations


def test_typedef_const_and_literal_forms():
    program = decls("typedef bit<9> port_t;\ntype bit<32> id_t;\nconst port_t P = 9w0x1_F;\n"
                    "const int<8> N = -8s5;\nconst bit<4> B = 0b1010;\nconst bit<8> O = 0o17;\n"
                    "const int D = 0d99;\nconst bool T = true;\n")
    typedef, newtype, p, n, b, o, dec, t = program
    assert d(typedef) == "TypedefDecl(name='port_t', type=BitsType(width=IntLiteral(value=9, text='9')))"
    assert isinstance(newtype, ast.NewTypeDecl) and newtype.name == "id_t"
    assert d(p.value) == "IntLiteral(value=31, width=9, text='9w0x1_F')"
    assert d(n.type) == "BitsType(width=IntLiteral(value=8, text='8'), signed=True)"
    assert d(n.value) == "UnaryExpr(op='-', operand=IntLiteral(value=5, width=8, signed=True, text='8s5'))"
    assert (b.value.value, o.value.value, dec.value.value) == (10, 15, 99)
    assert isinstance(dec.type, ast.IntType) and t.value.value is True


def test_headers_structs_unions_stacks_and_generic_structs():
    h, u, s, g = decls("""
header h_t { bit<8> a; @name("bee") varbit<32> b; }
header_union u_t { h_t x; h_t y; }
struct s_t { h_t[4] stack; tuple<bit<8>, bool> t; bit f; error e; }
struct pair_t<T> { T first; T second; }
""")
    assert isinstance(h, ast.HeaderTypeDecl) and [f.name for f in h.fields] == ["a", "b"]
    assert h.fields[1].annotations[0].string_value == "bee"
    assert d(h.fields[1].type) == "VarbitType(max_width=IntLiteral(value=32, text='32'))"
    assert isinstance(u, ast.HeaderUnionDecl)
    assert d(s.fields[0].type) == ("HeaderStackType(element=TypeName(name='h_t'), "
                                   "size=IntLiteral(value=4, text='4'))")
    assert d(s.fields[1].type) == "TupleType(elements=[BitsType(width=IntLiteral(value=8, text='8')), BoolType()])"
    assert d(s.fields[2].type) == "BitsType(width=IntLiteral(value=1, text='1'))"
    assert isinstance(s.fields[3].type, ast.ErrorType)
    assert [p.name for p in g.type_params] == ["T"] and d(g.fields[0].type) == "TypeName(name='T')"


def test_enums_errors_and_match_kinds():
    e, se, err, mk = decls("enum Color { RED, GREEN, }\nenum bit<8> Proto { TCP = 6, UDP = 0x11 }\n"
                           "error { Oops, Again }\nmatch_kind { fuzzy }\n")
    assert [m.name for m in e.members] == ["RED", "GREEN"] and e.underlying is None
    assert d(se.underlying) == "BitsType(width=IntLiteral(value=8, text='8'))"
    assert [(m.name, m.value.value) for m in se.members] == [("TCP", 6), ("UDP", 17)]
    assert [m.name for m in err.members] == ["Oops", "Again"]
    assert [m.name for m in mk.members] == ["fuzzy"]


def test_externs_with_generic_methods_constructors_and_abstract_methods():
    ext, fn = decls("""
extern Checker<T> {
    Checker(bit<32> size);
    T get<K>(in K key);
    abstract bit<16> combine(in T a, in T b);
    @noSideEffects void reset();
}
extern R pick<R>(in bool c, in R a, in R b);
""")
    assert isinstance(ext, ast.ExternDecl) and [p.name for p in ext.type_params] == ["T"]
    ctor, get, combine, reset = ext.methods
    assert ctor.is_constructor and ctor.params[0].name == "size"
    assert d(get.return_type) == "TypeName(name='T')" and [p.name for p in get.type_params] == ["K"]
    assert d(get.params[0]) == "Param(name='key', type=TypeName(name='K'), direction='in')"
    assert combine.is_abstract and reset.annotations[0].name == "noSideEffects"
    assert isinstance(fn, ast.ExternFunctionDecl) and d(fn.return_type) == "TypeName(name='R')"


def test_functions_actions_and_parameters():
    fn, act = decls("bit<8> twice(in bit<8> v) { return v + v; }\n"
                    "@name(\"go\") action go(inout bit<8> x, bit<8> y, @optional in bool z = true) { x = y; }\n")
    assert isinstance(fn, ast.FunctionDecl) and isinstance(fn.body.statements[0], ast.ReturnStmt)
    assert isinstance(act, ast.ActionDecl) and act.annotations[0].string_value == "go"
    assert [(p.name, p.direction) for p in act.params] == [("x", "inout"), ("y", ""), ("z", "in")]
    assert act.params[2].annotations[0].name == "optional"
    assert d(act.params[2].default) == "BoolLiteral(value=True)"


def test_package_parser_and_control_type_declarations_and_instantiation():
    program = decls("""
parser P<H>(packet_in b, out H h);
control C<H>(inout H h);
package Pkg<H>(P<H> p, C<H> c);
parser MyP(packet_in b, out bit<8> h) { state start { transition accept; } }
control MyC(inout bit<8> h)(bit<8> init) { apply { } }
Pkg(MyP(), MyC(8w1)) main;
""", with_prelude=True)
    pt, ct, pkg, myp, myc, main = program
    assert isinstance(pt, ast.ParserTypeDecl) and isinstance(ct, ast.ControlTypeDecl)
    assert d(pkg.params[0].type) == "SpecializedType(base=TypeName(name='P'), args=[TypeName(name='H')])"
    assert isinstance(myp, ast.ParserDecl) and myp.states[0].name == "start"
    assert [p.name for p in myc.ctor_params] == ["init"]
    assert isinstance(main, ast.Instantiation) and main.name == "main"
    assert d(main.args[1].value) == ("ConstructorCallExpr(type=TypeName(name='MyC'), "
                                     "args=[Argument(value=IntLiteral(value=1, width=8, text='8w1'))])")


def test_instantiations_of_generic_externs_close_nested_angle_brackets():
    control = one("""
control C(inout bit<32> x) {
    register<bit<32>>(16) r1;
    register<bit<32>, bit<8>>(16) r2;
    register<tuple<bit<8>, bit<16>>>(4) r3;
    counter(32w64, CounterType.packets) c;
    apply { }
}""", with_prelude=True)
    r1, r2, r3, c = control.locals
    assert d(r1.type) == ("SpecializedType(base=TypeName(name='register'), "
                          "args=[BitsType(width=IntLiteral(value=32, text='32'))])")
    assert len(r2.type.args) == 2
    assert isinstance(r3.type.args[0], ast.TupleType)
    assert d(c.args[1].value) == "MemberExpr(base=TypeRefExpr(type=TypeName(name='CounterType')), member='packets')"


def test_annotations_raw_bodies_and_helpers():
    decl = one('@name("ingress.t") @id(0x01000005) @field_list(1, 2) @hidden @weird(a (b) [c] {) '
               '@structured["x", 1] @pragma my_pragma 1 2\nconst bit<8> k = 1;')
    names = [a.name for a in decl.annotations]
    assert names == ["name", "id", "field_list", "hidden", "weird", "structured", "my_pragma"]
    name, ident, fields, hidden, weird, structured, pragma = decl.annotations
    assert name.string_value == "ingress.t" and name.integer_values is None
    assert ident.integer_values == (0x01000005,)
    assert fields.integer_values == (1, 2)
    assert hidden.body == () and hidden.integer_values == ()
    assert [t.text for t in weird.body] == ["a", "(", "b", ")", "[", "c", "]", "{"]
    assert structured.structured and [t.kind for t in structured.body] == ["string", "symbol", "integer"]
    assert [t.text for t in pragma.body] == ["1", "2"]


# ---------------------------------------------------------------- parsers


def test_parser_locals_states_and_select_keysets():
    parser = one("""
parser P(packet_in pkt, out bit<16> h) {
    value_set<bit<16>>(4) pvs;
    bit<8> tmp = 0;
    const bit<8> K = 3;
    state start {
        pkt.extract(h);
        transition select(h, tmp) {
            (0x0800, 1)            : accept;
            (0x0800 &&& 0xff00, _) : next;
            (1 .. 5, default)      : next;
            (pvs, K)               : next;
            default                : reject;
        }
    }
    @name("n") state next { transition accept; }
    state last { }
}""", with_prelude=True)
    assert [type(x).__name__ for x in parser.locals] == ["ValueSetDecl", "VariableDecl", "ConstantDecl"]
    start, nxt, last = parser.states
    select = start.transition
    assert isinstance(select, ast.SelectExpr) and len(select.keys) == 2
    keysets = [[type(k).__name__ for k in case.keysets] for case in select.cases]
    assert keysets == [["IntLiteral", "IntLiteral"], ["MaskExpr", "DefaultExpr"], ["RangeExpr", "DefaultExpr"],
                       ["PathExpr", "PathExpr"], ["DefaultExpr"]]
    assert [c.state for c in select.cases] == ["accept", "next", "next", "next", "reject"]
    assert d(nxt.transition) == "PathExpr(name='accept')" and nxt.annotations[0].name == "name"
    assert last.transition is None


def test_parser_statements_lookahead_verify_and_stack_next():
    parser = decls("""
header h_t { bit<8> v; }
struct hs { h_t[3] s; }
error { Bad }
parser P(packet_in pkt, out hs h) {
    state start {
        pkt.extract(h.s.next);
        verify(h.s.last.v != 0, error.Bad);
        bit<8> peek = pkt.lookahead<bit<8>>();
        if (peek == 1) { pkt.advance(8); }
        transition select(pkt.lookahead<h_t>().v) { 0: accept; default: start; }
    }
}""", with_prelude=True)[-1]
    extract, verify, peek, cond = parser.states[0].statements
    assert d(extract.call.args[0].value) == ("MemberExpr(base=MemberExpr(base=PathExpr(name='h'), member='s'), "
                                             "member='next')")
    assert d(verify.call.args[1].value) == "MemberExpr(base=TypeRefExpr(type=ErrorType()), member='Bad')"
    assert d(peek.init.type_args[0]) == "BitsType(width=IntLiteral(value=8, text='8'))"
    assert isinstance(cond, ast.IfStmt)
    key = parser.states[0].transition.keys[0]
    assert d(key.base.type_args[0]) == "TypeName(name='h_t')"


# ---------------------------------------------------------------- controls and tables


TABLE_PRELUDE = """
header h_t { bit<48> dst; bit<16> etype; }
struct m_t { bit<32> x; }
control C(inout h_t h, inout m_t m, inout standard_metadata_t sm) {
    action a(bit<9> port) { sm.egress_spec = port; }
    action b() { mark_to_drop(sm); }
    direct_counter(CounterType.packets) dc;
"""


def table(body: str) -> ast.TableDecl:
    control = decls(TABLE_PRELUDE + body + "\n apply { } }", with_prelude=True)[-1]
    return [x for x in control.locals if isinstance(x, ast.TableDecl)][0]


def test_table_key_actions_default_and_plain_properties():
    t = table("""
    @name("C.t") table t {
        key = { h.dst : exact @name("dst"); h.etype : ternary; m.x[7:0] : lpm; }
        actions = { a; @defaultonly b; NoAction; }
        default_action = a(1);
        size = 1024;
        counters = dc;
        implementation = action_selector(HashAlgorithm.crc16, 32w1024, 32w14);
        support_timeout = true;
    }""")
    assert t.annotations[0].string_value == "C.t"
    assert [(k.match_kind, [a.string_value for a in k.annotations]) for k in t.key] == [
        ("exact", ["dst"]), ("ternary", []), ("lpm", [])]
    assert isinstance(t.key[2].expr, ast.SliceExpr)
    assert [(r.name, r.args, [a.name for a in r.annotations]) for r in t.actions] == [
        ("a", None, []), ("b", None, ["defaultonly"]), ("NoAction", None, [])]
    assert t.default_action.name == "a" and d(t.default_action.args[0].value) == "IntLiteral(value=1, text='1')"
    assert d(t.get_property("size").value) == "IntLiteral(value=1024, text='1024')"
    assert d(t.get_property("counters").value) == "PathExpr(name='dc')"
    impl = t.get_property("implementation").value
    assert isinstance(impl, ast.ConstructorCallExpr) and d(impl.type) == "TypeName(name='action_selector')"
    assert t.get_property("support_timeout").value.value is True


def test_const_default_action_without_arguments_and_non_action_default():
    t = table("table t { key = { h.dst : exact; } actions = { b; } const default_action = b; }")
    prop = t.get_property("default_action")
    assert isinstance(prop, ast.DefaultActionProperty) and prop.is_const and prop.action.args is None
    odd = table("table t { actions = { b; } default_action = 1 + 2; }").get_property("default_action")
    assert isinstance(odd, ast.ExpressionProperty)


def test_const_entries_with_masks_ranges_dontcares_and_priorities():
    t = table("""
    table t {
        key = { h.dst : exact; h.etype : ternary; }
        actions = { a; b; }
        const entries = {
            (48w1, 0x800 &&& 0xffff) : a(2);
            priority = 10 : (_, _) : b();
            priority = (5 + 5) : (2, 1 .. 3) : a(3) @hidden;
            const 0x0a : b();
        }
    }""")
    prop = t.get_property("entries")
    assert isinstance(prop, ast.EntriesProperty) and prop.is_const
    e1, e2, e3, e4 = t.entries
    assert [type(k).__name__ for k in e1.keysets] == ["IntLiteral", "MaskExpr"]
    assert e1.action.name == "a" and e1.priority is None
    assert [type(k).__name__ for k in e2.keysets] == ["DefaultExpr", "DefaultExpr"]
    assert d(e2.priority) == "IntLiteral(value=10, text='10')" and e2.action.args == ()
    assert isinstance(e3.priority, ast.BinaryExpr) and isinstance(e3.keysets[1], ast.RangeExpr)
    assert e3.annotations[0].name == "hidden"
    assert e4.is_const and len(e4.keysets) == 1


def test_control_locals_and_constructor_parameters():
    control = decls("""
control C(inout bit<8> x)(bit<8> init) {
    bit<8> tmp = init;
    const bit<8> K = 2;
    action a() { x = K; }
    table t { actions = { a; } }
    apply { t.apply(); }
}""", with_prelude=True)[-1]
    assert [type(x).__name__ for x in control.locals] == ["VariableDecl", "ConstantDecl", "ActionDecl", "TableDecl"]
    assert [p.name for p in control.ctor_params] == ["init"]


# ---------------------------------------------------------------- statements


def test_assignment_calls_and_compound_assignments():
    s = stmts("x = 1; y[3:0] = 4w2; f(x, y); g<bit<8>>(x); x += 1; x >>= 2; (x) = y;",
              prelude="extern void f(in bit<8> a, in bit<8> b);\nextern void g<T>(in T a);\n")
    assert [type(x).__name__ for x in s] == ["AssignmentStmt", "AssignmentStmt", "MethodCallStmt",
                                             "MethodCallStmt", "AssignmentStmt", "AssignmentStmt",
                                             "AssignmentStmt"]
    assert isinstance(s[1].target, ast.SliceExpr)
    assert d(s[3].call.type_args[0]) == "BitsType(width=IntLiteral(value=8, text='8'))"
    assert (s[4].op, s[5].op, s[6].op) == ("+=", ">>=", "=")


def test_if_else_chains_blocks_exit_return_and_empty():
    s = stmts("if (x == 1) { exit; } else if (x == 2) return; else { ; }\n@atomic { x = 2; }\n;")
    cond, block, empty = s
    assert isinstance(cond.then, ast.BlockStmt) and isinstance(cond.then.statements[0], ast.ExitStmt)
    assert isinstance(cond.else_, ast.IfStmt) and isinstance(cond.else_.then, ast.ReturnStmt)
    assert isinstance(cond.else_.else_.statements[0], ast.EmptyStmt)
    assert block.annotations[0].name == "atomic"
    assert isinstance(empty, ast.EmptyStmt)


def test_dangling_else_binds_to_the_nearest_if():
    (outer,) = stmts("if (x == 1) if (y == 1) x = 2; else x = 3;")
    assert outer.else_ is None and outer.then.else_ is not None


def test_switch_on_action_run_with_fallthrough_and_default():
    (sw,) = stmts("""
switch (t.apply().action_run) {
    a:
    b: { x = 1; }
    default: { }
}""")
    assert d(sw.expr) == ("MemberExpr(base=CallExpr(callee=MemberExpr(base=PathExpr(name='t'), member='apply'), "
                          "args=[]), member='action_run')")
    assert [(d(c.label), c.body is None) for c in sw.cases] == [
        ("PathExpr(name='a')", True), ("PathExpr(name='b')", False), ("DefaultExpr()", False)]


def test_switch_on_values_and_enum_members():
    (sw,) = stmts("switch (x) { 1: { } E.A: { } default: { } }", prelude="enum E { A }\n")
    assert [type(c.label).__name__ for c in sw.cases] == ["IntLiteral", "MemberExpr", "DefaultExpr"]


def test_local_declarations_in_blocks():
    s = stmts("bit<8> a; bit<8> b = 2; const bit<8> c = 3; h_t h; h_t[2] hs; reg<bit<8>>(1) r;",
              prelude="header h_t { bit<8> f; }\nextern reg<T> { reg(bit<8> size); }\n")
    assert [type(x).__name__ for x in s] == ["VariableDecl", "VariableDecl", "ConstantDecl", "VariableDecl",
                                             "VariableDecl", "Instantiation"]


# ---------------------------------------------------------------- expressions


@pytest.mark.parametrize("text, shape", [
    ("1 + 2 * 3", "(1 + (2 * 3))"),
    ("1 - 2 - 3", "((1 - 2) - 3)"),
    ("1 << 2 + 3", "(1 << (2 + 3))"),
    ("1 >> 2 >> 3", "((1 >> 2) >> 3)"),
    ("1 & 2 == 2", "((1 & 2) == 2)"),
    ("1 | 2 < 3 & 4", "((1 | 2) < (3 & 4))"),
    ("1 ^ 2 | 3 & 4", "((1 ^ 2) | (3 & 4))"),
    ("a < b && c > d || !e", "(((a < b) && (c > d)) || (!e))"),
    ("a == b != c", "((a == b) != c)"),
    ("a <= b >= c", "((a <= b) >= c)"),
    ("a ++ b + c", "((a ++ b) + c)"),
    ("a |+| b |-| c", "((a |+| b) |-| c)"),
    ("a % b / c * d", "(((a % b) / c) * d)"),
    ("-a * ~b", "((-a) * (~b))"),
    ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
    ("a || b ? c : d", "((a || b) ? c : d)"),
    ("(a + b) * c", "((a + b) * c)"),
    ("a[3:0] ++ b[1]", "(a[3:0] ++ b[1])"),
])
def test_operator_precedence_and_associativity(text, shape):
    names = "".join(f"const bit<8> {n} = 1;\n" for n in "abcde")
    assert render(expr(text, names)) == shape


def render(e: ast.Node) -> str:
    if isinstance(e, ast.BinaryExpr):
        return f"({render(e.left)} {e.op} {render(e.right)})"
    if isinstance(e, ast.UnaryExpr):
        return f"({e.op}{render(e.operand)})"
    if isinstance(e, ast.TernaryExpr):
        return f"({render(e.cond)} ? {render(e.if_true)} : {render(e.if_false)})"
    if isinstance(e, ast.SliceExpr):
        return f"{render(e.base)}[{render(e.hi)}:{render(e.lo)}]"
    if isinstance(e, ast.IndexExpr):
        return f"{render(e.base)}[{render(e.index)}]"
    if isinstance(e, ast.PathExpr):
        return e.name
    if isinstance(e, ast.IntLiteral):
        return e.text
    return d(e)


def test_casts_lists_struct_initialisers_and_members():
    prelude = "typedef bit<8> b8;\nenum E { A }\nstruct s_t { bit<8> f; bit<8> g; }\nconst bit<8> v = 1;\n"
    assert d(expr("(bit<16>) v", prelude)) == ("CastExpr(type=BitsType(width=IntLiteral(value=16, text='16')), "
                                               "expr=PathExpr(name='v'))")
    assert d(expr("(b8) -1", prelude)) == ("CastExpr(type=TypeName(name='b8'), "
                                           "expr=UnaryExpr(op='-', operand=IntLiteral(value=1, text='1')))")
    assert d(expr("(v) - 1", prelude)) == "BinaryExpr(op='-', left=PathExpr(name='v'), right=IntLiteral(value=1, text='1'))"
    assert d(expr("{v, 2}", prelude)) == "ListExpr(elements=[PathExpr(name='v'), IntLiteral(value=2, text='2')])"
    assert d(expr("{}", prelude)) == "ListExpr(elements=[])"
    assert d(expr("{ f = 1, g = v, }", prelude)) == ("StructExpr(fields=[NamedExpr(name='f', value=IntLiteral("
                                                     "value=1, text='1')), NamedExpr(name='g', value=PathExpr(name='v'))])")
    assert d(expr("E.A", prelude)) == "MemberExpr(base=TypeRefExpr(type=TypeName(name='E')), member='A')"
    assert d(expr("error.NoError", prelude)) == "MemberExpr(base=TypeRefExpr(type=ErrorType()), member='NoError')"
    assert d(expr('"text"', prelude)) == "StringLiteral(value='text')"
    assert d(expr("this", prelude)) == "ThisExpr()"


def test_calls_with_named_dontcare_and_type_arguments():
    e = expr("f<bit<8>>(a = 1, b = _)(_, 2)", "const bit<8> f = 1;\n")
    assert isinstance(e, ast.CallExpr) and e.args[0].value.__class__ is ast.DontCareExpr
    inner = e.callee
    assert d(inner.type_args[0]) == "BitsType(width=IntLiteral(value=8, text='8'))"
    assert [(a.name, type(a.value).__name__) for a in inner.args] == [("a", "IntLiteral"), ("b", "DontCareExpr")]


def test_keywords_usable_as_names():
    s = stmts("sm.priority = 1; h.type = 2; h.key = 3; t.apply(); sm.apply = sm.state;")
    assert [x.target.member for x in s if isinstance(x, ast.AssignmentStmt)] == ["priority", "type", "key", "apply"]


def test_bit_widths_from_constants_and_expressions():
    (w, b, c) = decls("const int W = 4;\nconst bit<W> b = 1;\nconst bit<(W * 2)> c = 2;\n")
    assert d(b.type.width) == "PathExpr(name='W')"
    assert isinstance(c.type.width, ast.BinaryExpr)


def test_locations_point_at_names_operators_and_statements():
    program = parse_text("const bit<8> a = 1;\nconst bit<8> bb = a +\n   2;\n", "loc.p4")
    first, second = program.declarations
    assert (second.loc.line, second.loc.col) == (2, 14)
    assert (second.value.loc.line, second.value.loc.col) == (2, 21)
    assert (second.value.right.loc.line, second.value.right.loc.col) == (3, 4)
    assert second.loc.source_line == "const bit<8> bb = a +"


def test_walk_children_and_identity_semantics():
    program = parse_text("const bit<8> a = 1 + 2;\nconst bit<8> b = 1 + 2;\n")
    a, b = program.declarations
    assert a.value is not b.value and a.value != b.value and d(a.value) == d(b.value)
    facts = {a.value: "first", b.value: "second"}
    assert facts[a.value] == "first"
    kinds = [type(n).__name__ for n in ast.walk(a)]
    assert kinds == ["ConstantDecl", "BitsType", "IntLiteral", "BinaryExpr", "IntLiteral", "IntLiteral"]

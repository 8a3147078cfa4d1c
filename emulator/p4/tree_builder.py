"""The syntax tree builder: one Lark transformer method per grammar rule
(``grammar/p4.lark``) making the :mod:`emulator.p4.ast` node it stands for.
Used by :mod:`emulator.p4.parser`."""

from __future__ import annotations

from lark import Token, Transformer

from emulator.p4 import ast
from emulator.p4.errors import SourceLocation
from emulator.p4.lexer import P4Token


class _BuildError(Exception):
    """A construct the grammar accepts but that is not valid P4 (or not supported)."""

    def __init__(self, loc: SourceLocation, message: str) -> None:
        super().__init__(message)
        self.loc = loc
        self.message = message


# --------------------------------------------------------------------------
# Tree building: one method per grammar rule or alias. Children are the
# rule's symbols in order, tokens included; an absent [optional] is None.


class _Proto:
    """A function prototype, before it becomes a method, extern or function."""

    __slots__ = ("return_type", "name", "type_params", "params")

    def __init__(self, return_type: ast.Type, name: P4Token, type_params: tuple[ast.TypeParam, ...],
                 params: tuple[ast.Param, ...]) -> None:
        self.return_type, self.name, self.type_params, self.params = return_type, name, type_params, params


class _KeysetTuple(tuple):
    """The keysets of ``(a, b)`` in a select case or table entry."""


def _anns(value: object) -> tuple[ast.Annotation, ...]:
    return value if isinstance(value, tuple) else ()


def _start(node: ast.Node) -> SourceLocation:
    """Where an expression starts (a member expression's own loc is its member)."""
    while isinstance(node, (ast.MemberExpr, ast.IndexExpr, ast.SliceExpr, ast.PlusSliceExpr)):
        node = node.base
    if isinstance(node, ast.CallExpr):
        return _start(node.callee)
    return node.loc


def _tparams(value: object) -> tuple[ast.TypeParam, ...]:
    return value if isinstance(value, tuple) else ()


def _only(children: list, cls: type) -> tuple:
    return tuple(c for c in children if isinstance(c, cls))


def _keysets(keyset: object) -> tuple[ast.Expression, ...]:
    return tuple(keyset) if isinstance(keyset, _KeysetTuple) else (keyset,)  # type: ignore[arg-type]

class _Builder(Transformer):
    # -- program and names

    def start(self, c):
        decls = tuple(d for d in c if d is not None)
        return ast.Program(decls, loc=decls[0].loc if decls else SourceLocation("<empty>", 1, 1))

    def empty_decl(self, c):
        return None

    def path_expr(self, c):
        return ast.PathExpr(c[0].value, loc=c[0].loc)

    def annotations(self, c):
        return tuple(tok.payload for tok in c)

    # -- types

    def type_name(self, c):
        return ast.TypeName(c[0].value, loc=c[0].loc)

    def specialized_type(self, c):
        return ast.SpecializedType(c[0], c[2], loc=c[0].loc)

    def header_stack_type(self, c):
        return ast.HeaderStackType(c[0], c[2], loc=c[0].loc)

    def tuple_type(self, c):
        return ast.TupleType(c[2], loc=c[0].loc)

    def type_args(self, c):
        return _only(c, ast.Type)

    def void_type(self, c):
        return ast.VoidType(loc=c[0].loc)

    def dontcare_type(self, c):
        return ast.DontCareType(loc=c[0].loc)

    def bool_type(self, c):
        return ast.BoolType(loc=c[0].loc)

    def error_type(self, c):
        return ast.ErrorType(loc=c[0].loc)

    def string_type(self, c):
        return ast.StringType(loc=c[0].loc)

    def match_kind_type(self, c):
        return ast.MatchKindType(loc=c[0].loc)

    def int_type(self, c):
        return ast.IntType(loc=c[0].loc)

    def bit1_type(self, c):
        return ast.BitsType(ast.IntLiteral(1, text="1", loc=c[0].loc), loc=c[0].loc)

    def bit_type(self, c):
        return ast.BitsType(c[2], False, loc=c[0].loc)

    def signed_type(self, c):
        return ast.BitsType(c[2], True, loc=c[0].loc)

    def varbit_type(self, c):
        return ast.VarbitType(c[2], loc=c[0].loc)

    def type_params(self, c):
        return tuple(ast.TypeParam(t.value, loc=t.loc) for t in c[1:-1] if t.type != "COMMA")

    # -- declarations

    def constant_decl(self, c):
        return ast.ConstantDecl(c[3].value, c[2], c[5], _anns(c[0]), loc=c[3].loc)

    def variable_decl(self, c):
        return ast.VariableDecl(c[2].value, c[1], c[4], _anns(c[0]), loc=c[2].loc)

    def typedef_decl(self, c):
        return ast.TypedefDecl(c[3].value, c[2], _anns(c[0]), loc=c[3].loc)

    def newtype_decl(self, c):
        return ast.NewTypeDecl(c[3].value, c[2], _anns(c[0]), loc=c[3].loc)

    def _struct_like(self, cls, c):
        return cls(c[2].value, _only(c[5:-1], ast.StructField), _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def header_decl(self, c):
        return self._struct_like(ast.HeaderTypeDecl, c)

    def header_union_decl(self, c):
        return self._struct_like(ast.HeaderUnionDecl, c)

    def struct_decl(self, c):
        return self._struct_like(ast.StructTypeDecl, c)

    def struct_field(self, c):
        return ast.StructField(c[2].value, c[1], _anns(c[0]), loc=c[2].loc)

    def enum_decl(self, c):
        members = tuple(ast.EnumMember(t.value, loc=t.loc) for t in c[4:-1]
                        if t is not None and t.type != "COMMA")
        return ast.EnumDecl(c[2].value, members, None, _anns(c[0]), loc=c[2].loc)

    def ser_enum_decl(self, c):
        return ast.EnumDecl(c[3].value, _only(c[5:-1], ast.EnumMember), c[2], _anns(c[0]), loc=c[3].loc)

    def enum_value(self, c):
        return ast.EnumMember(c[0].value, c[2], loc=c[0].loc)

    def error_decl(self, c):
        ids = tuple(ast.DeclaredId(t.value, loc=t.loc) for t in c[2:-1] if t is not None and t.type != "COMMA")
        return ast.ErrorDecl(ids, loc=c[0].loc)

    def match_kind_decl(self, c):
        ids = tuple(ast.DeclaredId(t.value, loc=t.loc) for t in c[2:-1] if t is not None and t.type != "COMMA")
        return ast.MatchKindDecl(ids, loc=c[0].loc)

    def extern_decl(self, c):
        return ast.ExternDecl(c[2].value, _only(c[5:-1], ast.MethodDecl), _tparams(c[3]), _anns(c[0]),
                              loc=c[2].loc)

    def extern_function_decl(self, c):
        p = c[2]
        return ast.ExternFunctionDecl(p.name.value, p.return_type, p.params, p.type_params, _anns(c[0]),
                                      loc=p.name.loc)

    def extern_forward_decl(self, c):
        return None  # as p4c: a forward declaration declares nothing

    def function_proto(self, c):
        return _Proto(c[0], c[1], _tparams(c[2]), c[4])

    def method_decl(self, c):
        p = c[1]
        return ast.MethodDecl(p.name.value, p.return_type, p.params, p.type_params, False, _anns(c[0]),
                              loc=p.name.loc)

    def abstract_method_decl(self, c):
        p = c[2]
        return ast.MethodDecl(p.name.value, p.return_type, p.params, p.type_params, True, _anns(c[0]),
                              loc=p.name.loc)

    def constructor_decl(self, c):
        return ast.MethodDecl(c[1].value, None, c[3], (), False, _anns(c[0]), loc=c[1].loc)

    def function_decl(self, c):
        p = c[1]
        return ast.FunctionDecl(p.name.value, p.return_type, p.params, c[2], p.type_params, _anns(c[0]),
                                loc=p.name.loc)

    def params(self, c):
        return _only(c, ast.Param)

    def param(self, c):
        direction = c[1].value if c[1] is not None else ""
        return ast.Param(c[3].value, c[2], direction, c[5], _anns(c[0]), loc=c[3].loc)

    def action_decl(self, c):
        return ast.ActionDecl(c[2].value, c[4], c[6], _anns(c[0]), loc=c[2].loc)

    def instantiation(self, c):
        return ast.Instantiation(c[5].value, c[1], c[3], _anns(c[0]), c[6], loc=c[5].loc)

    def obj_initializer(self, c):
        return tuple(d for d in c[2:-1] if isinstance(d, ast.Declaration))

    def package_type_decl(self, c):
        return ast.PackageTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    # -- parsers

    def parser_type_decl(self, c):
        return ast.ParserTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def parser_decl(self, c):
        body = c[11:-1]
        states = _only(body, ast.ParserState)
        local_decls = tuple(d for d in body if isinstance(d, ast.Declaration) and not isinstance(d, ast.ParserState))
        ctor = c[8] if c[8] is not None else ()
        return ast.ParserDecl(c[2].value, c[5], local_decls, states, ctor, _tparams(c[3]), _anns(c[0]),
                              loc=c[2].loc)

    def value_set_decl(self, c):
        return ast.ValueSetDecl(c[8].value, c[3], c[6], _anns(c[0]), loc=c[8].loc)

    def parser_state(self, c):
        stmts = tuple(s for s in c[4:-2] if isinstance(s, ast.Node))
        return ast.ParserState(c[2].value, stmts, c[-2], _anns(c[0]), loc=c[2].loc)

    def transition_to(self, c):
        return ast.PathExpr(c[1].value, loc=c[1].loc)

    def transition(self, c):
        return c[1]

    def select_expr(self, c):
        return ast.SelectExpr(c[2], _only(c[5:-1], ast.SelectCase), loc=c[0].loc)

    def select_case(self, c):
        keysets = _keysets(c[0])
        return ast.SelectCase(keysets, c[2].value, loc=_start(keysets[0]) if keysets else c[1].loc)

    def expr_list(self, c):
        return _only(c, ast.Expression)

    def tuple_keyset(self, c):
        return _KeysetTuple(x for x in c[1:-1] if isinstance(x, ast.Expression))

    def mask_keyset(self, c):
        return ast.MaskExpr(c[0], c[2], loc=c[1].loc)

    def range_keyset(self, c):
        return ast.RangeExpr(c[0], c[2], loc=c[1].loc)

    def default_keyset(self, c):
        return ast.DefaultExpr(loc=c[0].loc)

    # -- controls and tables

    def control_type_decl(self, c):
        return ast.ControlTypeDecl(c[2].value, c[5], _tparams(c[3]), _anns(c[0]), loc=c[2].loc)

    def control_decl(self, c):
        local_decls = _only(c[11:-3], ast.Declaration)
        ctor = c[8] if c[8] is not None else ()
        return ast.ControlDecl(c[2].value, c[5], local_decls, c[-2], ctor, _tparams(c[3]), _anns(c[0]),
                               loc=c[2].loc)

    def table_decl(self, c):
        return ast.TableDecl(c[2].value, _only(c[4:-1], ast.TableProperty), _anns(c[0]), loc=c[2].loc)

    def key_property(self, c):
        return ast.KeyProperty("key", elements=_only(c[3:-1], ast.KeyElement), loc=c[0].loc)

    def actions_property(self, c):
        return ast.ActionsProperty("actions", actions=_only(c[3:-1], ast.ActionRef), loc=c[0].loc)

    def entries_property(self, c):
        return ast.EntriesProperty("entries", c[1] is not None, _anns(c[0]), entries=_only(c[5:-1], ast.Entry),
                                   loc=c[2].loc)

    def expr_property(self, c):
        name, value, is_const, anns = c[2].value, c[4], c[1] is not None, _anns(c[0])
        if name == "default_action":
            ref = _as_action_ref(value)
            if ref is not None:
                return ast.DefaultActionProperty(name, is_const, anns, action=ref, loc=c[2].loc)
        return ast.ExpressionProperty(name, is_const, anns, value=value, loc=c[2].loc)

    def key_element(self, c):
        return ast.KeyElement(c[0], c[2].value, _anns(c[3]), loc=_start(c[0]))

    def action_item(self, c):
        name, args = c[1]
        return ast.ActionRef(name.value, args, _anns(c[0]), loc=name.loc)

    def action_ref(self, c):
        return c[0], c[2]

    def entry(self, c):
        name, args = c[4]
        action = ast.ActionRef(name.value, args, loc=name.loc)
        keysets = _keysets(c[2])
        loc = _start(keysets[0]) if keysets else name.loc
        return ast.Entry(keysets, action, c[1], c[0] is not None, _anns(c[5]), loc=loc)

    def entry_priority(self, c):
        if len(c) == 4:
            return self.int_literal([c[2]])
        return c[3]

    # -- statements

    def assign_stmt(self, c):
        return ast.AssignmentStmt(c[0], c[2], c[1].value, loc=_start(c[0]))

    def call_stmt(self, c):
        call = ast.CallExpr(c[0], c[2], loc=_start(c[0]))
        return ast.MethodCallStmt(call, loc=call.loc)

    def generic_call_stmt(self, c):
        call = ast.CallExpr(c[0], c[5], c[2], loc=_start(c[0]))
        return ast.MethodCallStmt(call, loc=call.loc)

    def direct_apply_stmt(self, c):
        # ``C.apply(...)`` of a control or parser type (P4-16 §15.1, direct invocation).
        callee = ast.MemberExpr(ast.PathExpr(c[0].name, loc=c[0].loc), c[2].value, loc=c[2].loc)
        call = ast.CallExpr(callee, c[4], loc=c[0].loc)
        return ast.MethodCallStmt(call, loc=call.loc)

    def if_stmt(self, c):
        return ast.IfStmt(c[2], c[4], c[6], loc=c[0].loc)

    def empty_stmt(self, c):
        return ast.EmptyStmt(loc=c[0].loc)

    def block(self, c):
        return ast.BlockStmt(tuple(s for s in c[2:-1] if isinstance(s, ast.Node)), _anns(c[0]), loc=c[1].loc)

    def return_stmt(self, c):
        return ast.ReturnStmt(c[1], loc=c[0].loc)

    def exit_stmt(self, c):
        return ast.ExitStmt(loc=c[0].loc)

    def switch_stmt(self, c):
        return ast.SwitchStmt(c[2], _only(c[5:-1], ast.SwitchCase), loc=c[0].loc)

    def switch_case(self, c):
        return ast.SwitchCase(c[0], c[2], loc=_start(c[0]))

    # -- expressions

    def this_expr(self, c):
        return ast.ThisExpr(loc=c[0].loc)

    def member_expr(self, c):
        return ast.MemberExpr(c[0], c[2].value, loc=c[2].loc)

    def index_expr(self, c):
        return ast.IndexExpr(c[0], c[2], loc=c[1].loc)

    def slice_expr(self, c):
        return ast.SliceExpr(c[0], c[2], c[4], loc=c[1].loc)

    def plus_slice_expr(self, c):
        return ast.PlusSliceExpr(c[0], c[2], c[4], loc=c[1].loc)

    def paren_expr(self, c):
        return c[1]

    def ternary(self, c):
        return ast.TernaryExpr(c[0], c[2], c[4], loc=c[1].loc)

    def binary(self, c):
        return ast.BinaryExpr(c[1].value, c[0], c[2], loc=c[1].loc)

    def shr(self, c):
        return ast.BinaryExpr(">>", c[0], c[3], loc=c[1].loc)

    def unary(self, c):
        return ast.UnaryExpr(c[0].value, c[1], loc=c[0].loc)

    def cast(self, c):
        return ast.CastExpr(c[1], c[3], loc=c[0].loc)

    def call_expr(self, c):
        return ast.CallExpr(c[0], c[2], loc=_start(c[0]))

    def generic_call_expr(self, c):
        return ast.CallExpr(c[0], c[5], c[2], loc=_start(c[0]))

    def list_expr(self, c):
        return ast.ListExpr(_only(c[1:-1], ast.Expression), loc=c[0].loc)

    def struct_expr(self, c):
        return ast.StructExpr(_only(c[1:-1], ast.NamedExpr), loc=c[0].loc)

    def kv_pair(self, c):
        return ast.NamedExpr(c[0].value, c[2], loc=c[0].loc)

    def type_member(self, c):
        return ast.MemberExpr(ast.TypeRefExpr(c[0], loc=c[0].loc), c[2].value, loc=c[2].loc)

    def error_member(self, c):
        err = ast.ErrorType(loc=c[0].loc)
        return ast.MemberExpr(ast.TypeRefExpr(err, loc=c[0].loc), c[2].value, loc=c[2].loc)

    def constructor_call(self, c):
        return ast.ConstructorCallExpr(c[0], c[2], loc=c[0].loc)

    def int_literal(self, c):
        tok = c[0]
        parsed = ast.parse_integer_text(tok.value)
        if parsed is None:
            raise _BuildError(tok.loc, f"invalid integer literal '{tok.value}'")
        value, width, signed = parsed
        if width is not None and width == 0 and value != 0:
            raise _BuildError(tok.loc, f"integer literal '{tok.value}' has width 0")
        return ast.IntLiteral(value, width, signed, tok.value, loc=tok.loc)

    def bool_literal(self, c):
        return ast.BoolLiteral(c[0].type == "TRUE", loc=c[0].loc)

    def string_literal(self, c):
        return ast.StringLiteral(c[0].value[1:-1], loc=c[0].loc)

    def args(self, c):
        return _only(c, ast.Argument)

    def positional_arg(self, c):
        return ast.Argument(c[0], loc=_start(c[0]))

    def named_arg(self, c):
        value = c[2]
        if isinstance(value, Token):
            value = ast.DontCareExpr(loc=value.loc)
        return ast.Argument(value, c[0].value, loc=c[0].loc)

    def dontcare_arg(self, c):
        return ast.Argument(ast.DontCareExpr(loc=c[0].loc), loc=c[0].loc)


def _as_action_ref(value: ast.Expression) -> ast.ActionRef | None:
    if isinstance(value, ast.PathExpr):
        return ast.ActionRef(value.name, None, loc=value.loc)
    if isinstance(value, ast.CallExpr) and isinstance(value.callee, ast.PathExpr) and not value.type_args:
        return ast.ActionRef(value.callee.name, value.args, loc=value.callee.loc)
    return None

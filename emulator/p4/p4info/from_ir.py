"""The front end's IR -> :class:`~.model.P4InfoModel` (and P4Info).

:func:`p4info_model` applies the rules of :mod:`.model` (its docstring is
the rulebook) to a checked :class:`emulator.p4.ir.Program`; :func:`p4info_for`
also runs :func:`~.build.build_p4info`.  Everything is derived from the IR:

* **Blocks** are visited in ``main``'s argument order (global extern
  instances first).  A control's instantiated sub-controls are inlined as
  p4c's ``Inline`` pass does: a sub-control's tables, actions and extern
  instances are placed after the caller's own (at the position of the
  instance declaration when the IR gives it as ``instance_loc``), and its
  apply block is walked where ``SubApply`` calls it.  Sub-blocks never
  applied are dropped with everything in them (p4c removes unused control
  instances).
* **Tables** never applied (no ``TableApply``/``TableApplyResult`` in the
  inlined apply blocks, or in the keys of applied tables) are dropped, and
  so are the extern instances built in their properties.  Code under
  ``if (true)``/``if (false)`` is walked as p4c leaves it after constant
  folding (the dead branch is gone).
* **Actions** of a control: the *global* actions first, in the order the
  remaining tables reference them (actions list, the ``NoAction`` that
  CreateBuiltins appends, default action, entries), then the apply block
  (direct calls); then the control's own actions in declaration order,
  keeping those referenced by a remaining table or called directly from an
  apply block.  Action-to-action calls are inlined by p4c before actions
  are localized, so they reference nothing.  An action referenced by no
  remaining table (only called directly) is listed without parameters: p4c
  ``RemoveActionParameters`` binds them all at the call.
* **Default action**: the IR fills ``NoAction()`` in when a table has no
  ``default_action``.  A non-const ``NoAction()`` default gives the same
  P4Info whether written or not when ``NoAction`` is in the actions list,
  and cannot have been written when it is not (the checker requires the
  default to be listed); so such a default is passed as ``None`` (the
  builder applies CreateBuiltins) exactly when ``NoAction`` is not listed.
* **Digests and extern functions** are found as p4c's serializer does:
  per control, in each listed action's body (action calls inlined), then
  in the apply block (sub-controls and functions inlined); parsers are not
  searched.
* **Names** are the IR's control-plane names (the checker applies
  ``@name`` and the block prefixes).  Types are named by their
  control-plane name (``@name`` of the declaration, if any).
* **Annotations** are rendered as p4c's ``ToP4`` prints them: the
  annotations p4c parses (``@noWarn``, ``@controller_header``, ...)
  as expressions joined by ``", "``, the others token by token
  (``Annotation.tokens``).  Structured annotations (``@x[...]``) are
  evaluated (literals, unary/binary operators and parentheses).

Limits (the IR does not carry the information): ``type`` declarations are
resolved to their underlying type by the checker, so match fields and
parameters never get a ``type_name`` and ``@p4runtime_translation`` is not
seen; a declared sub-control instance without ``instance_loc`` is placed
after all the caller's own declarations; a top-level extern instance is
recognised as one not owned by any block whose name has no ``.``.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Optional, Sequence

from emulator.p4 import ir
from emulator.p4 import types as T
from emulator.p4.ast import parse_integer_text

from . import model as m
from .build import build_p4info
from .ids import P4InfoError

__all__ = ["p4info_model", "p4info_for", "render_annotation", "convert_annotations"]

# --------------------------------------------------------------------------
# Annotations

#: Annotations whose body p4c parses as expressions before P4Info is built
#: (frontends/p4/parseAnnotations.cpp, control-plane/p4RuntimeAnnotations.h).
_PARSED_EXPRESSIONS = frozenset({
    "name", "deprecated", "noWarn", "length", "match", "synchronous", "field_list",
    "command_line", "controller_header", "id", "brief", "description", "max_group_size",
    "selector_size_semantics", "max_member_weight", "p4runtime_translation",
})
#: Annotations p4c parses as ``key=value`` lists.
_PARSED_KV = frozenset({"pkginfo", "platform_property"})

_OPEN = {"(": ")", "[": "]", "{": "}"}


def _tokens(a: T.Annotation) -> tuple[str, ...]:
    """The body tokens of ``a`` (string literals in double quotes)."""
    if a.tokens:
        return a.tokens
    if a.args:  # an annotation built without the parser (tests, irkit)
        out: list[str] = []
        for i, v in enumerate(a.args):
            if i:
                out.append(",")
            out.append('"%s"' % v if isinstance(v, str) else str(v))
        return tuple(out)
    return tuple(a.raw.split()) if a.raw else ()


def _split_commas(tokens: Sequence[str]) -> list[list[str]]:
    """Top-level comma-separated groups of ``tokens``."""
    groups: list[list[str]] = [[]]
    depth = 0
    for tok in tokens:
        if tok in _OPEN:
            depth += 1
        elif tok in (")", "]", "}"):
            depth -= 1
        if tok == "," and depth == 0:
            groups.append([])
        else:
            groups[-1].append(tok)
    if groups == [[]]:
        return []
    return groups


def _is_word(tok: str) -> bool:
    return bool(tok) and (tok[0].isalnum() or tok[0] in "_$")


def _print_expr(tokens: Sequence[str]) -> str:
    """An expression's tokens spaced as p4c's ToP4 prints the expression."""
    out = ""
    prev: Optional[str] = None
    prev2: Optional[str] = None
    for tok in tokens:
        glue = (
            prev is None
            or tok in (")", "]", ".", ",")
            or prev in ("(", "[", ".")
            or (tok in ("(", "[") and prev is not None and (_is_word(prev) or prev in (")", "]")))
            or (prev in ("-", "!", "~") and (prev2 is None or not (
                _is_word(prev2) or prev2 in (")", "]") or prev2.startswith('"'))))
        )
        out += tok if glue else " " + tok
        prev2, prev = prev, tok
    return out


def render_annotation(a: T.Annotation) -> m.Annotation:
    """The unstructured annotation ``a`` as p4c prints it in P4Info."""
    tokens = _tokens(a)
    if not tokens:
        return m.Annotation(a.name)
    if a.name in _PARSED_EXPRESSIONS:
        return m.Annotation.from_exprs(a.name, [_print_expr(g) for g in _split_commas(tokens)])
    if a.name in _PARSED_KV:
        parts = []
        for g in _split_commas(tokens):
            if len(g) >= 2 and g[1] == "=":
                parts.append("%s=%s" % (g[0], _print_expr(g[2:])))
            else:
                parts.append(_print_expr(g))
        return m.Annotation(a.name, "@%s(%s)" % (a.name, ", ".join(parts)))
    return m.Annotation.from_tokens(a.name, tokens)


# ---- structured annotations: compile-time values of token expressions


class _ExprParser:
    """Evaluates a structured annotation expression (literals and operators,
    as p4c's constant folding does before serializing them)."""

    _BINARY = [
        ("||",), ("&&",), ("==", "!="), ("<", "<=", ">", ">="), ("|",), ("^",), ("&",),
        ("<<", ">>"), ("+", "-", "++"), ("*", "/", "%"),
    ]

    def __init__(self, tokens: Sequence[str], where: str) -> None:
        self.toks = list(tokens)
        self.i = 0
        self.where = where

    def fail(self, what: str) -> P4InfoError:
        return P4InfoError(f"{self.where}: {what}: structured annotation expression "
                           "should be a literal")

    def peek(self) -> Optional[str]:
        return self.toks[self.i] if self.i < len(self.toks) else None

    def take(self) -> str:
        tok = self.peek()
        if tok is None:
            raise self.fail("unexpected end")
        self.i += 1
        return tok

    def parse(self) -> m.StructuredValue:
        value = self.binary(0)
        if self.peek() is not None:
            raise self.fail(f"unexpected {self.peek()!r}")
        return value

    def binary(self, level: int) -> m.StructuredValue:
        if level == len(self._BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek() in self._BINARY[level]:
            op = self.take()
            right = self.binary(level + 1)
            left = self.apply(op, left, right)
        return left

    def apply(self, op: str, a: m.StructuredValue, b: m.StructuredValue) -> m.StructuredValue:
        if op in ("==", "!="):
            return (a == b) == (op == "==")
        if op in ("&&", "||"):
            if not isinstance(a, bool) or not isinstance(b, bool):
                raise self.fail(op)
            return (a and b) if op == "&&" else (a or b)
        if op == "++" and isinstance(a, str) and isinstance(b, str):
            return a + b
        if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, int) \
                or not isinstance(b, int):
            raise self.fail(op)
        if op in ("/", "%") and b == 0:
            raise self.fail("division by zero")
        return {
            "<": lambda: a < b, "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b,
            "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
            "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
            "*": lambda: a * b, "/": lambda: a // b, "%": lambda: a % b,
        }[op]()

    def unary(self) -> m.StructuredValue:
        tok = self.take()
        if tok == "(":
            value = self.binary(0)
            if self.take() != ")":
                raise self.fail("missing ')'")
            return value
        if tok in ("-", "!", "~"):
            value = self.unary()
            if tok == "!" and isinstance(value, bool):
                return not value
            if tok != "!" and isinstance(value, int) and not isinstance(value, bool):
                return -value if tok == "-" else ~value
            raise self.fail(tok)
        if tok.startswith('"') and tok.endswith('"') and len(tok) >= 2:
            return tok[1:-1]
        if tok in ("true", "false"):
            return tok == "true"
        parsed = parse_integer_text(tok)
        if parsed is not None:
            return parsed[0]
        raise self.fail(repr(tok))


def _structured(a: T.Annotation, where: str) -> m.StructuredAnnotation:
    groups = _split_commas(_tokens(a))
    if groups and all(len(g) >= 2 and _is_word(g[0]) and g[1] == "=" for g in groups):
        pairs = tuple((g[0], _ExprParser(g[2:], where).parse()) for g in groups)
        return m.StructuredAnnotation(a.name, kv_pairs=pairs)
    values = tuple(_ExprParser(g, where).parse() for g in groups)
    return m.StructuredAnnotation(a.name, expressions=values)


def _string_arg(a: T.Annotation) -> Optional[str]:
    if a.args and isinstance(a.args[0], str):
        return a.args[0]
    toks = _tokens(a)
    if len(toks) == 1 and toks[0].startswith('"') and toks[0].endswith('"'):
        return toks[0][1:-1]
    return None


def _int_arg(a: T.Annotation, where: str) -> int:
    if a.args and isinstance(a.args[0], int) and not isinstance(a.args[0], bool):
        return a.args[0]
    toks = _tokens(a)
    if len(toks) == 1:
        parsed = parse_integer_text(toks[0])
        if parsed is not None:
            return parsed[0]
    raise P4InfoError(f"{where}: @{a.name} needs an integer argument")


def convert_annotations(annotations: Iterable[T.Annotation], where: str = "") -> dict:
    """``annotations`` as the keyword arguments of :class:`~.model.Annotated`:
    ``annotations``, ``structured_annotations``, ``brief`` and
    ``description``."""
    plain: list[m.Annotation] = []
    structured: list[m.StructuredAnnotation] = []
    brief = description = None
    for a in annotations:
        if a.structured:
            structured.append(_structured(a, where))
            continue
        if a.name == "brief":
            brief = _string_arg(a)
        elif a.name == "description":
            description = _string_arg(a)
        plain.append(render_annotation(a))
    return dict(annotations=plain, structured_annotations=structured, brief=brief,
                description=description)


def _find(annotations: Iterable[T.Annotation], name: str) -> Optional[T.Annotation]:
    for a in annotations:
        if a.name == name and not a.structured:
            return a
    return None


def _id(annotations: Iterable[T.Annotation], where: str) -> Optional[int]:
    a = _find(annotations, "id")
    return None if a is None else _int_arg(a, where)


def _hidden(annotations: Iterable[T.Annotation]) -> bool:
    return _find(annotations, "hidden") is not None


def _cp_name(name: str, annotations: Iterable[T.Annotation]) -> str:
    """p4c ``controlPlaneName``: the ``@name`` string (one leading dot
    dropped) or the identifier."""
    a = _find(annotations, "name")
    given = None if a is None else _string_arg(a)
    if given is None:
        return name
    return given[1:] if given.startswith(".") else given


# --------------------------------------------------------------------------
# Walking IR code

_IR_NODES = (ir.Expr, ir.Stmt, ir.SwitchCase, ir.SelectCase, ir.Select)


def _children(node: object) -> Iterator[object]:
    for f in dataclasses.fields(node):  # type: ignore[arg-type]
        if f.name in ("loc", "type"):
            continue
        yield from _nodes(getattr(node, f.name))


def _nodes(value: object) -> Iterator[object]:
    if isinstance(value, _IR_NODES):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _nodes(item)


class _Walk:
    """What a piece of code does, with sub-controls and functions inlined
    (and action calls too when ``inline_actions``)."""

    def __init__(self, inline_actions: bool) -> None:
        self.inline_actions = inline_actions
        self.tables: list[ir.Table] = []
        self.action_refs: list[ir.Action] = []  # calls and switch labels, in order
        self.extern_calls: list[ir.ExternCall] = []
        self.sub_blocks: list[ir.Control | ir.Parser] = []
        self._active: list[object] = []

    def code(self, nodes: Iterable[object]) -> "_Walk":
        for node in nodes:
            self.node(node)
        return self

    def block(self, block: ir.Control | ir.Parser) -> "_Walk":
        """A control's or parser's code (variable initialisers included)."""
        if block in self._active:
            return self
        self._active.append(block)
        self.code(block.locals)
        if isinstance(block, ir.Control):
            self.node(block.body)
        else:
            for state in block.states.values():
                self.code(state.stmts)
                if isinstance(state.transition, ir.Select):
                    self.node(state.transition)
        self._active.pop()
        return self

    def node(self, node: object) -> None:
        if isinstance(node, ir.If) and isinstance(node.cond, ir.Const) \
                and isinstance(node.cond.value, bool):
            # p4c folds `if (true)`/`if (false)` away with the dead branch.
            branch = node.then if node.cond.value else node.otherwise
            if branch is not None:
                self.node(branch)
            return
        if isinstance(node, (ir.TableApply, ir.TableApplyResult)):
            self.tables.append(node.table)
            if node.table not in self._active:
                # A key may apply another table (p4c moves it before the apply).
                self._active.append(node.table)
                self.code(k.expr for k in node.table.keys)
                self._active.pop()
        elif isinstance(node, ir.ActionCall):
            self.action_refs.append(node.action)
            if self.inline_actions and node.action not in self._active:
                self._active.append(node.action)
                self.node(node.action.body)
                self._active.pop()
        elif isinstance(node, ir.SubApply):
            self.sub_blocks.append(node.block)
            self.block(node.block)
        elif isinstance(node, ir.FunctionCall):
            if node.function not in self._active:
                self._active.append(node.function)
                self.node(node.function.body)
                self._active.pop()
        elif isinstance(node, ir.ExternCall):
            self.extern_calls.append(node)
        elif isinstance(node, ir.SwitchCase):
            self.action_refs.extend(x for x in node.labels if isinstance(x, ir.Action))
        for child in _children(node):
            self.node(child)


def _in(obj: object, seq: Iterable[object]) -> bool:
    return any(obj is x for x in seq)


def _unique(items: Iterable) -> list:
    out: list = []
    seen: set[int] = set()
    for x in items:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def _pos(loc) -> Optional[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return None if loc is None else (loc.file, loc.line, loc.col)


# --------------------------------------------------------------------------
# Flattening blocks (p4c Inline)


@dataclasses.dataclass
class _Flat:
    """A block with its applied sub-blocks inlined."""

    actions: list[ir.Action]
    tables: list[ir.Table]
    instances: list[ir.Instance]
    value_sets: list[ir.ValueSet]
    body: _Walk


def _splice(own: list, sub: list, at) -> list:  # type: ignore[no-untyped-def]
    """Insert ``sub`` into ``own`` (declaration order) at source position ``at``."""
    if at is None:
        return own + sub
    for i, x in enumerate(own):
        p = _pos(getattr(x, "loc", None))
        if p is not None and p[0] == at[0] and p[1:] > at[1:]:
            return own[:i] + sub + own[i:]
    return own + sub


def _flatten(block: ir.Control | ir.Parser) -> _Flat:
    body = _Walk(inline_actions=False).block(block)
    actions = list(block.actions) if isinstance(block, ir.Control) else []
    tables = list(block.tables) if isinstance(block, ir.Control) else []
    instances = list(block.instances)
    value_sets = list(block.value_sets) if isinstance(block, ir.Parser) else []
    applied = _unique(body.sub_blocks)
    for sub in block.sub_blocks:
        if not _in(sub, applied):
            continue  # never applied: p4c removes the instance
        inner = _flatten(sub)
        at = _pos(getattr(sub, "instance_loc", None))
        actions = _splice(actions, inner.actions, at)
        tables = _splice(tables, inner.tables, at)
        instances = _splice(instances, inner.instances, at)
        value_sets = value_sets + inner.value_sets
    return _Flat(actions, tables, instances, value_sets, body)


# --------------------------------------------------------------------------
# The converter


class _Converter:
    def __init__(self, program: ir.Program) -> None:
        self.program = program
        self.model = m.P4InfoModel()
        self.digest_names: dict[tuple[int, int], str] = {}

    # ---- types --------------------------------------------------------------
    def type_name(self, t: T.Type) -> str:
        return _cp_name(t.name, getattr(t, "annotations", ()))  # type: ignore[union-attr]

    def spec(self, t: T.Type, where: str) -> m.TypeSpec:
        if isinstance(t, T.BitsType):
            return m.Bits(t.width, t.signed)
        if isinstance(t, T.VarbitType):
            return m.Varbit(t.max_width)
        if isinstance(t, T.BoolType):
            return m.Bool()
        if isinstance(t, T.ErrorType):
            return m.ErrorRef()
        if isinstance(t, T.TupleType):
            return m.TupleOf(tuple(self.spec(e, where) for e in t.elements))
        if isinstance(t, T.StructType):
            return m.StructRef(self.type_name(t))
        if isinstance(t, T.HeaderType):
            return m.HeaderRef(self.type_name(t))
        if isinstance(t, T.HeaderUnionType):
            return m.HeaderUnionRef(self.type_name(t))
        if isinstance(t, T.EnumType):
            return m.SerEnumRef(t.name) if t.underlying is not None else m.EnumRef(t.name)
        if isinstance(t, T.StackType):
            if isinstance(t.element, T.HeaderUnionType):
                return m.HeaderUnionStack(self.type_name(t.element), t.size)
            return m.HeaderStack(self.type_name(t.element), t.size)
        raise P4InfoError(f"{where}: unexpected type {t}")

    def named_types(self) -> list[m.NamedType]:
        out: list[m.NamedType] = [m.ErrorDef(list(self.program.errors))]
        seen: set[tuple[str, str]] = set()
        for t in _unique(self.program.types.values()):
            try:
                self._named(t, out, seen)
            except P4InfoError:
                continue  # not describable; an error only if P4Info refers to it
        return out

    def _named(self, t: T.Type, out: list, seen: set) -> None:  # type: ignore[type-arg]
        if isinstance(t, T.StackType):
            t = t.element
        if not isinstance(t, (T.StructType, T.HeaderType, T.HeaderUnionType, T.EnumType)):
            return
        key = (type(t).__name__ + ("ser" if isinstance(t, T.EnumType) and t.underlying else ""),
               t.name)
        if key in seen:
            return
        seen.add(key)
        where = f"type {t.name}"
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                out.append(m.SerEnumDef(t.name, t.underlying.width, list(zip(t.members, t.values))))
            else:
                out.append(m.EnumDef(t.name, list(t.members)))
            return
        name = self.type_name(t)
        if isinstance(t, T.HeaderType):
            members = [(n, self._bitstring(ft, where)) for n, ft, _f in self._flat_fields(t)]
            out.append(m.HeaderDef(name, members))  # type: ignore[arg-type]
        elif isinstance(t, T.HeaderUnionType):
            out.append(m.HeaderUnionDef(name, [
                (_cp_name(f.name, f.annotations), self.type_name(f.type)) for f in t.fields]))
        else:
            out.append(m.StructDef(name, [
                (_cp_name(f.name, f.annotations), self.spec(f.type, where)) for f in t.fields]))
        for f in t.fields:
            self._named(f.type, out, seen)

    def _flat_fields(self, t: T.HeaderType | T.StructType, prefix: str = ""
                     ) -> Iterator[tuple[str, T.Type, T.Field]]:
        """p4c FlattenHeader: nested struct fields as ``s.f``, depth first."""
        for f in t.fields:
            name = prefix + _cp_name(f.name, f.annotations)
            if isinstance(f.type, T.StructType):
                yield from self._flat_fields(f.type, name + ".")
            else:
                yield name, f.type, f  # type: ignore[misc]

    @staticmethod
    def _bitstring(t: T.Type, where: str) -> m.Bits | m.Varbit:
        if isinstance(t, T.VarbitType):
            return m.Varbit(t.max_width)
        try:
            width = T.field_width(t)
        except TypeError:
            raise P4InfoError(f"{where}: header field of type {t}") from None
        signed = isinstance(t, T.BitsType) and t.signed
        return m.Bits(width, signed)

    def _width_and_type(self, t: T.Type, where: str) -> tuple[int, Optional[m.TypeSpec]]:
        """p4c getTypeWidth, and the named type a field of type ``t`` refers to."""
        if isinstance(t, T.BitsType):
            return t.width, None
        if isinstance(t, T.BoolType):
            return 1, m.Bool()
        if isinstance(t, T.EnumType):
            if t.underlying is not None:
                return t.underlying.width, m.SerEnumRef(t.name)
            return 0, m.EnumRef(t.name)
        if isinstance(t, T.ErrorType):
            return 0, m.ErrorRef()  # p4c treats error as a string
        raise P4InfoError(f"{where}: type {t} cannot be exposed to the control plane")

    # ---- program ------------------------------------------------------------
    def run(self) -> m.P4InfoModel:
        p = self.program
        self.model.types = self.named_types()
        owned: set[int] = set()
        for block in self._all_blocks(p.package.blocks):
            owned.update(id(i) for i in block.instances)
        for inst in p.instances:
            if id(inst) not in owned and "." not in inst.name:
                self.extern(inst, in_place=False)
        for block in p.package.blocks:
            if isinstance(block, ir.Control):
                self.control(block)
            else:
                self.parser(block)
        self.controller_headers()
        self.model.pkg_info = self.pkg_info(p.package.annotations)
        return self.model

    def _all_blocks(self, blocks: Iterable[ir.Control | ir.Parser]
                    ) -> Iterator[ir.Control | ir.Parser]:
        for b in blocks:
            yield b
            yield from self._all_blocks(b.sub_blocks)

    # ---- controls -----------------------------------------------------------
    def control(self, block: ir.Control) -> None:
        flat = _flatten(block)
        applied = flat.body.tables
        tables = [t for t in flat.tables if _in(t, applied)]
        own = flat.actions

        # References in p4c LocalizeAllActions order: remaining tables, then
        # the apply block (action bodies reference nothing once inlined).
        refs: list[ir.Action] = []
        for t in tables:
            refs.extend(r.action for r in t.actions)
            refs.append(t.default_action.action)
            refs.extend(e.action.action for e in t.entries)
        table_refs = list(refs)
        refs.extend(flat.body.action_refs)
        globals_ = [a for a in _unique(refs) if not _in(a, own)]
        actions = globals_ + [a for a in own if _in(a, refs)]

        for t in tables:
            self.model.tables.append(self.table(t))
        for a in actions:
            # p4c RemoveActionParameters: an action invoked directly (its
            # copy for that call, listed after a table's copy) has no params.
            self.model.actions.append(self.action(a, params=_in(a, table_refs)))

        # Extern instances: those built in a removed table's property go too.
        in_place: dict[int, ir.Table] = {}
        for t in flat.tables:
            for inst in (t.implementation, t.direct_counter, t.direct_meter):
                if inst is not None and self._built_in_place(inst, t):
                    in_place[id(inst)] = t
        for inst in flat.instances:
            owner = in_place.get(id(inst))
            if owner is not None and not _in(owner, tables):
                continue
            self.extern(inst, in_place=owner is not None)

        # Digests and extern functions: actions first, then the apply block.
        for a in actions:
            self.calls(_Walk(inline_actions=True).code([a.body]).extern_calls, block)
        self.calls(flat.body.extern_calls, block)

    @staticmethod
    def _built_in_place(inst: ir.Instance, table: ir.Table) -> bool:
        """An extern constructed in a table property (check/tables.py
        ``_attached``) has its ``@name`` as both names and sits after the
        table's start; a declared one precedes the table that uses it. One
        without ``@name`` (empty local name) cannot be named in P4Info."""
        if inst.local_name == "":
            raise P4InfoError(
                f"{inst.loc or table.name}: table {table.name}: the {inst.type.name} built in a "
                "table property has no @name annotation, which P4Runtime needs "
                "(p4c refuses to write P4Info for it too)")
        if inst.name != inst.local_name:
            return False
        a, b = _pos(inst.loc), _pos(table.loc)
        if a is None or b is None:
            return True
        return a[0] == b[0] and a[1:] > b[1:]

    def calls(self, calls: Sequence[ir.ExternCall], block: ir.Control) -> None:
        for call in calls:
            if call.target is not None:
                continue
            self.model.calls_extern_functions = True
            if call.method != "digest":
                continue
            if call.type_args:
                t = call.type_args[0]
            elif len(call.args) == 2:
                t = call.args[1].type
            else:
                raise P4InfoError(f"{call.loc}: digest() without a data argument")
            if isinstance(t, (T.StructType, T.HeaderType, T.HeaderUnionType)):
                name = self.type_name(t)
            else:
                key = (id(block), id(call))
                if key not in self.digest_names:
                    self.digest_names[key] = "digest_%d" % len(self.digest_names)
                name = self.digest_names[key]
            self.model.digests.append(m.Digest(name=name, type_spec=self.spec(t, name)))

    def table(self, t: ir.Table) -> m.Table:
        where = f"table {t.name}"
        keys = []
        for k in t.keys:
            width, ktype = self._width_and_type(k.expr.type, f"{where} key {k.name}")
            if isinstance(ktype, m.Bool):
                ktype = None
            keys.append(m.MatchField(name=k.name, bitwidth=width, match_kind=k.match_kind,
                                     id=_id(k.annotations, where), type=ktype,
                                     **convert_annotations(k.annotations, where)))
        refs = [m.ActionRef(name=r.action.name, **convert_annotations(r.annotations, where))
                for r in t.actions]
        d = t.default_action
        default: Optional[m.DefaultAction]
        if (d.action.name == "NoAction" and not d.args and not t.default_action_const
                and not any(r.action is d.action for r in t.actions)):
            default = None  # CreateBuiltins
        else:
            default = m.DefaultAction(d.action.name, [int(c.value) for c in d.args],  # type: ignore[call-overload]
                                      const=t.default_action_const)
        timeout = t.other_properties.get("support_timeout")
        return m.Table(
            name=t.name, key=keys, actions=refs, default_action=default, size=t.size,
            implementation=t.implementation.name if t.implementation else None,
            direct_counter=t.direct_counter.name if t.direct_counter else None,
            direct_meter=t.direct_meter.name if t.direct_meter else None,
            is_const_table=t.entries_const, has_initial_entries=len(t.entries) > 0,
            support_timeout=isinstance(timeout, ir.Const) and timeout.value is True,
            id=_id(t.annotations, where), hidden=_hidden(t.annotations),
            **convert_annotations(t.annotations, where))

    def action(self, a: ir.Action, params: bool = True) -> m.Action:
        """``a``; ``params=False`` for an action only called directly."""
        where = f"action {a.name}"
        listed = []
        for p in a.params if params else ():
            if p.direction:
                continue  # bound by the caller, removed by the front end
            width, ptype = self._width_and_type(p.type, f"{where} parameter {p.name}")
            if isinstance(ptype, m.ErrorRef):
                raise P4InfoError(f"{where}: parameter {p.name} has a type which is not "
                                  "bit<>, int<>, bool, type or serializable enum")
            listed.append(m.Param(name=_cp_name(p.name, p.annotations), bitwidth=width,
                                  id=_id(p.annotations, where), type=ptype,
                                  **convert_annotations(p.annotations, where)))
        return m.Action(name=a.name, params=listed, id=_id(a.annotations, where),
                        hidden=_hidden(a.annotations), **convert_annotations(a.annotations, where))

    # ---- extern instances ---------------------------------------------------
    @staticmethod
    def _enum_member(c: ir.Expr) -> str:
        if isinstance(c, ir.Const) and isinstance(c.type, T.EnumType) \
                and isinstance(c.value, int):
            return c.type.members[c.value] if c.type.underlying is None \
                else c.type.members[c.type.values.index(c.value)]
        raise P4InfoError(f"expected an enum constant, got {c}")

    @staticmethod
    def _int(c: ir.Expr, where: str) -> int:
        if isinstance(c, ir.Const) and isinstance(c.value, int) and not isinstance(c.value, bool):
            return c.value
        raise P4InfoError(f"{where}: expected an integer constant")

    def extern(self, inst: ir.Instance, in_place: bool) -> None:
        kind = inst.type.name
        args = inst.ctor_args
        name = inst.name
        where = f"{kind} {name}"
        ann = convert_annotations(inst.annotations, where)
        pid = None if in_place else _id(inst.annotations, where)
        if kind == "counter":
            self.model.counters.append(m.Counter(
                name=name, unit=self._enum_member(args[1]), size=self._int(args[0], where),
                id=pid, **ann))
        elif kind == "direct_counter":
            self.model.direct_counters.append(m.DirectCounter(
                name=name, unit=self._enum_member(args[0]), in_place=in_place, id=pid, **ann))
        elif kind == "meter":
            self.model.meters.append(m.Meter(
                name=name, unit=self._enum_member(args[1]), size=self._int(args[0], where),
                id=pid, **ann))
        elif kind == "direct_meter":
            self.model.direct_meters.append(m.DirectMeter(
                name=name, unit=self._enum_member(args[0]), in_place=in_place, id=pid, **ann))
        elif kind == "register":
            if not inst.type.type_args:
                raise P4InfoError(f"{where}: no element type")
            self.model.registers.append(m.Register(
                name=name, type_spec=self.spec(inst.type.type_args[0], where),
                size=self._int(args[0], where), id=pid, **ann))
        elif kind in ("action_profile", "action_selector"):
            selector = kind == "action_selector"
            size = self._int(args[1] if selector else args[0], where)
            mgs = _find(inst.annotations, "max_group_size")
            sss = _find(inst.annotations, "selector_size_semantics")
            mmw = _find(inst.annotations, "max_member_weight")
            self.model.action_profiles.append(m.ActionProfile(
                name=name, size=size, with_selector=selector,
                max_group_size=None if mgs is None else _int_arg(mgs, where),
                selector_size_semantics=None if sss is None else _string_arg(sss),
                max_member_weight=None if mmw is None else _int_arg(mmw, where),
                in_place=in_place, id=pid, **ann))
        else:
            self.model.has_other_extern_instances = True

    # ---- parsers ------------------------------------------------------------
    def parser(self, block: ir.Parser) -> None:
        flat = _flatten(block)
        for vs in flat.value_sets:
            self.model.value_sets.append(self.value_set(vs))
        for inst in flat.instances:
            self.extern(inst, in_place=False)

    def value_set(self, vs: ir.ValueSet) -> m.ValueSet:
        where = f"value_set {vs.name}"
        t = vs.element_type
        element: int | list[m.ValueSetField] | m.SerEnumDef
        if isinstance(t, T.BitsType):
            element = t.width
        elif isinstance(t, T.EnumType) and t.underlying is not None:
            element = m.SerEnumDef(t.name, t.underlying.width, list(zip(t.members, t.values)))
        elif isinstance(t, T.StructType):
            element = []
            for f in t.fields:
                width, _ = self._width_and_type(f.type, f"{where} field {f.name}")
                match = _find(f.annotations, "match")
                kind = "exact"
                if match is not None:
                    toks = _tokens(match)
                    if len(toks) != 1:
                        raise P4InfoError(f"{where}: @match needs one match kind")
                    kind = toks[0]
                element.append(m.ValueSetField(
                    name=_cp_name(f.name, f.annotations), bitwidth=width, match_kind=kind,
                    id=_id(f.annotations, where), **convert_annotations(f.annotations, where)))
        else:
            raise P4InfoError(f"{where}: element type {t} is not supported by P4Runtime")
        return m.ValueSet(name=vs.name, size=vs.size, element=element,
                          id=_id(vs.annotations, where),
                          **convert_annotations(vs.annotations, where))

    # ---- controller headers and package -------------------------------------
    def controller_headers(self) -> None:
        for t in _unique(self.program.types.values()):
            if not isinstance(t, T.HeaderType):
                continue
            ch = _find(t.annotations, "controller_header")
            if ch is None:
                continue
            where = f"header {t.name}"
            controller_name = _string_arg(ch)
            if controller_name is None:
                raise P4InfoError(f"{where}: @controller_header needs a string")
            fields = []
            for name, ftype, f in self._flat_fields(t):
                width, ref = self._width_and_type(ftype, f"{where} field {name}")
                fields.append(m.PacketMetadata(
                    name=name, bitwidth=width, id=_id(f.annotations, where),
                    type=None if isinstance(ref, m.Bool) else ref,
                    hidden=_hidden(f.annotations),
                    **{k: v for k, v in convert_annotations(f.annotations, where).items()
                       if k in ("annotations", "structured_annotations")}))
            self.model.controller_headers.append(m.ControllerHeader(
                name=self.type_name(t), controller_name=controller_name, fields=fields,
                id=_id(t.annotations, where), hidden=_hidden(t.annotations),
                **convert_annotations(t.annotations, where)))

    def pkg_info(self, annotations: Sequence[T.Annotation]) -> m.PkgInfo:
        pkg = m.PkgInfo(**convert_annotations(annotations, "main"))
        for a in annotations:
            if a.structured or a.name not in _PARSED_KV:
                continue
            for group in _split_commas(_tokens(a)):
                if len(group) != 3 or group[1] != "=":
                    raise P4InfoError(f"main: @{a.name} needs key=value pairs")
                key, value = group[0], group[2]
                if a.name == "pkginfo":
                    if not (value.startswith('"') and value.endswith('"')):
                        raise P4InfoError(
                            f"Value for '{key}' key in @pkginfo annotation is not a string")
                    if key in ("name", "version", "organization", "contact", "url", "arch"):
                        setattr(pkg, key, value[1:-1])
                else:
                    parsed = parse_integer_text(value)
                    if parsed is None:
                        raise P4InfoError(f"Value for '{key}' key in @platform_property "
                                          "annotation is not an integer")
                    pkg.platform_properties[key] = parsed[0]
        return pkg


def p4info_model(program: ir.Program) -> m.P4InfoModel:
    """The P4Info model of a checked program (rules in :mod:`.model`)."""
    return _Converter(program).run()


def p4info_for(program: ir.Program, *, initial_default_action: bool = True):  # type: ignore[no-untyped-def]
    """The ``p4.config.v1.P4Info`` p4c generates for ``program``."""
    return build_p4info(p4info_model(program), initial_default_action=initial_default_action)


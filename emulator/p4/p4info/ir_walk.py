"""What a block of the front end's IR does, as p4c's front end leaves it.

:class:`CodeWalk` collects the tables applied, the actions referenced, the
extern calls and the sub-blocks applied by a piece of code, with
sub-controls and functions inlined (and action calls too if asked), and
``if (true)``/``if (false)`` folded as p4c's constant folding does.
:func:`flatten` inlines a block's applied sub-blocks as p4c's ``Inline``
pass does.  :func:`is_in`, :func:`unique` and :func:`source_pos` are the
identity and position helpers the converter (:mod:`.from_ir`) shares.
"""

from __future__ import annotations

import dataclasses
from typing import Iterable, Iterator, Optional

from emulator.p4 import ir

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


class CodeWalk:
    """What a piece of code does, with sub-controls and functions inlined
    (and action calls too when ``inline_actions``)."""

    def __init__(self, inline_actions: bool) -> None:
        self.inline_actions = inline_actions
        self.tables: list[ir.Table] = []
        self.action_refs: list[ir.Action] = []  # calls and switch labels, in order
        self.extern_calls: list[ir.ExternCall] = []
        self.sub_blocks: list[ir.Control | ir.Parser] = []
        self._active: list[object] = []

    def code(self, nodes: Iterable[object]) -> "CodeWalk":
        for node in nodes:
            self.node(node)
        return self

    def block(self, block: ir.Control | ir.Parser) -> "CodeWalk":
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


def is_in(obj: object, seq: Iterable[object]) -> bool:
    return any(obj is x for x in seq)


def unique(items: Iterable) -> list:
    out: list = []
    seen: set[int] = set()
    for x in items:
        if id(x) not in seen:
            seen.add(id(x))
            out.append(x)
    return out


def source_pos(loc) -> Optional[tuple[str, int, int]]:  # type: ignore[no-untyped-def]
    return None if loc is None else (loc.file, loc.line, loc.col)


# --------------------------------------------------------------------------
# Flattening blocks (p4c Inline)


@dataclasses.dataclass
class Flat:
    """A block with its applied sub-blocks inlined."""

    actions: list[ir.Action]
    tables: list[ir.Table]
    instances: list[ir.Instance]
    value_sets: list[ir.ValueSet]
    body: CodeWalk


def _splice(own: list, sub: list, at) -> list:  # type: ignore[no-untyped-def]
    """Insert ``sub`` into ``own`` (declaration order) at source position ``at``."""
    if at is None:
        return own + sub
    for i, x in enumerate(own):
        p = source_pos(getattr(x, "loc", None))
        if p is not None and p[0] == at[0] and p[1:] > at[1:]:
            return own[:i] + sub + own[i:]
    return own + sub


def flatten(block: ir.Control | ir.Parser) -> Flat:
    body = CodeWalk(inline_actions=False).block(block)
    actions = list(block.actions) if isinstance(block, ir.Control) else []
    tables = list(block.tables) if isinstance(block, ir.Control) else []
    instances = list(block.instances)
    value_sets = list(block.value_sets) if isinstance(block, ir.Parser) else []
    applied = unique(body.sub_blocks)
    for sub in block.sub_blocks:
        if not is_in(sub, applied):
            continue  # never applied: p4c removes the instance
        inner = flatten(sub)
        at = source_pos(getattr(sub, "instance_loc", None))
        actions = _splice(actions, inner.actions, at)
        tables = _splice(tables, inner.tables, at)
        instances = _splice(instances, inner.instances, at)
        value_sets = value_sets + inner.value_sets
    return Flat(actions, tables, instances, value_sets, body)

"""The per-flow cache of ingress decisions: which fields a program's
ingress can touch (the cache that replays its effects is
:mod:`.decision_cache`).

Ingress (the control, its tables, actions, functions and sub-controls) is
a function of the header, metadata and standard-metadata fields it reads,
of the control-plane state and of the externs it calls. :func:`touched`
collects, from the IR, every field ingress may read or write, by
(aggregate type name, field name): aliasing follows types, so a field of a
header passed to an action as ``hdr`` or reached as ``hdr.ipv4`` is the
same (type, field). A whole-aggregate use (an assignment of a header, a
``setValid``, an ``out`` argument, an extern given a struct) touches every
field of the type.

:class:`.decision_cache.DecisionCache` keys a packet by the values of those fields before
ingress and keeps their values after it (a write is replayed as the value
it left, which depends only on the key), with the counter cells ingress
bumped and the change of the packet-length register. A pass is cached
only when the generated code did not mark it (``ctx.nocache``: registers,
meters, random, digests, clones, resubmit, recirculate, truncate, logs,
idle-timeout stamps, reads of per-packet standard metadata such as
timestamps and packet length); those fields stay out of the key because
every read of them marks the pass. The control plane empties the cache
on every change (:meth:`.decision_cache.DecisionCache.forget`).
"""

from __future__ import annotations

from emulator.p4 import ir
from emulator.p4.exec.layout import py_ident
from emulator.p4.types import (
    HeaderType, HeaderUnionType, StackType, StructType, Type, VarbitType,
)

ALL = "*"  # a whole aggregate type touched
STANDARD_METADATA = "standard_metadata_t"
# Standard-metadata fields that change per packet (set by the pipeline or
# the traffic manager): never in a key; generated code marks a pass that
# reads one (see :func:`is_volatile`).
VOLATILE_SM = frozenset({
    "packet_length", "ingress_global_timestamp", "egress_global_timestamp",
    "enq_timestamp", "enq_qdepth", "deq_timedelta", "deq_qdepth",
})
# v1model extern calls ("method" or "extern type.method") whose effects are
# functions of the fields they are given (or, for counters, replayed). An
# ingress pass that calls any other is marked by the generated code and
# never cached, so what such a call reads or writes stays out of the key.
V1MODEL_CACHEABLE = frozenset({
    "verify", "mark_to_drop", "hash", "assert", "assume", "update_checksum",
    "counter.count", "direct_counter.count", "packet_in.extract", "packet_in.lookahead",
    "packet_in.advance", "packet_in.length", "packet_out.emit",
})


def extern_key(call: ir.ExternCall) -> str:
    """``call`` as :data:`V1MODEL_CACHEABLE` names it."""
    if call.target is None:
        return call.method
    return f"{getattr(call.target.type, 'name', '')}.{call.method}"


def is_volatile(base_type: Type, name: str) -> bool:
    """Whether ``base.name`` is per-packet standard metadata."""
    return isinstance(base_type, StructType) and base_type.name == STANDARD_METADATA \
        and name in VOLATILE_SM


class Uncacheable(Exception):
    """Ingress touches something the cache cannot key (stacks, unions,
    varbits): the program runs without the cache."""


_AGG = (HeaderType, StructType, HeaderUnionType)


class _Walker:
    """Collects (type name, field) pairs over the IR reachable from a control."""

    def __init__(self) -> None:
        self.touched: set[tuple[str, str]] = set()
        self._seen: set[int] = set()

    def whole(self, t: object) -> None:
        if isinstance(t, (StackType, HeaderUnionType)):
            raise Uncacheable(f"ingress uses {t} as a whole")
        if isinstance(t, (HeaderType, StructType)):
            if (t.name, ALL) in self.touched:
                return
            self.touched.add((t.name, ALL))
            for f in t.fields:
                self.whole(f.type)

    def node(self, n: object, alias: bool = False) -> None:
        """Visit ``n``; ``alias``: an aggregate here is only a path (the
        base of a member, an in/inout argument), not a use of all of it."""
        if isinstance(n, (list, tuple)):
            for x in n:
                self.node(x, alias)
            return
        if isinstance(n, dict):
            for x in n.values():
                self.node(x)
            return
        if type(n).__module__ != ir.__name__:
            return
        if isinstance(n, ir.Expr):
            self._expr(n, alias)
            return
        if id(n) in self._seen:
            return
        self._seen.add(id(n))
        if isinstance(n, ir.HeaderMethod):
            self.whole(n.base.type)
            self.node(n.base, alias=True)
        elif isinstance(n, ir.ActionCall):
            self._call(n.args, n.action.params)
            self.node(n.action)
        elif isinstance(n, ir.SubApply):
            self._call(n.args, n.block.params)
            self.node(n.block)
        else:
            self._fields(n)

    def _fields(self, n: object) -> None:
        for name in getattr(n, "__dataclass_fields__", ()):
            if name in ("loc", "annotations", "type"):
                continue
            self.node(getattr(n, name))

    def _call(self, args: tuple, params: tuple) -> None:
        for a, p in zip(args, params):
            if p.direction == "out":
                self.whole(a.type)
            self.node(a, alias=True)

    def _expr(self, e: ir.Expr, alias: bool) -> None:
        t = e.type
        if isinstance(e, ir.Member) and isinstance(e.base.type, _AGG):
            self.touched.add((e.base.type.name, e.name))  # type: ignore[union-attr]
            if isinstance(t, VarbitType):
                raise Uncacheable("ingress uses a varbit field")
            if isinstance(e.base.type, HeaderUnionType):
                raise Uncacheable("ingress uses a header union")
            self.node(e.base, alias=True)
            if isinstance(t, _AGG + (StackType,)) and not alias:
                self.whole(t)
            return
        if isinstance(e, ir.IsValid):
            self.node(e.base, alias=True)
            return
        if isinstance(e, (ir.StackElement, ir.StackNext, ir.StackLast, ir.StackLastIndex,
                          ir.StackNextIndex)):
            raise Uncacheable("ingress uses a header stack")
        if isinstance(e, ir.LocalRef):
            if isinstance(t, _AGG + (StackType,)) and not alias:
                self.whole(t)
            return
        if isinstance(e, ir.FunctionCall):
            self._call(e.args, e.function.params)
            self.node(e.function)
            return
        if isinstance(e, ir.ExternCall):
            if e.target is None and e.method == "mark_to_drop":
                # writes egress_spec and mcast_grp only (externs.mark_to_drop)
                self.touched.update({(STANDARD_METADATA, "egress_spec"),
                                     (STANDARD_METADATA, "mcast_grp")})
                self.node(e.args, alias=True)
                return
            if extern_key(e) not in V1MODEL_CACHEABLE:
                return  # it runs only on a pass that is never cached
            if isinstance(e.target, ir.Expr):
                self.node(e.target)
            for a in e.args:
                self.node(a)
            return
        if isinstance(e, ir.TableApplyResult):
            self.node(e.table)
            return
        self._fields(e)


def touched(control: ir.Control) -> set[tuple[str, str]]:
    """(type name, field name) of every field ``control`` may read or write
    (``(name, ALL)``: every field of the type). Raises :class:`Uncacheable`."""
    w = _Walker()
    w.node(control)
    return w.touched


def _key_fields(roles: dict[str, Type], fields: set[tuple[str, str]]
                ) -> list[tuple[str, str, str]]:
    """(path, owning type's name, field name) of every touched field and of
    every header's validity (field ``_v``), per-packet standard metadata
    left out, in a fixed order."""
    out: list[tuple[str, str, str]] = []

    def walk(t: Type, prefix: str) -> None:
        if isinstance(t, HeaderType):
            out.append((prefix + "._v", t.name, "_v"))
        if isinstance(t, (HeaderType, StructType)):
            for f in t.fields:
                ft, path = f.type, f"{prefix}.{py_ident(f.name)}"
                hit = (t.name, f.name) in fields or (t.name, ALL) in fields
                if isinstance(ft, (HeaderType, StructType)):
                    walk(ft, path)
                elif isinstance(ft, (StackType, HeaderUnionType)):
                    if hit:
                        raise Uncacheable(f"ingress uses {path}")
                elif hit and not is_volatile(t, f.name):
                    if isinstance(ft, VarbitType):
                        raise Uncacheable(f"ingress uses the varbit {path}")
                    out.append((path, t.name, f.name))

    for role, t in roles.items():
        walk(t, role)
    return out


def key_paths(roles: dict[str, Type], fields: set[tuple[str, str]]) -> list[str]:
    """Attribute paths on a packet frame (``hdr.ipv4.ttl``) of every touched
    field and of every header's validity, per-packet standard metadata left
    out, in a fixed order."""
    return [path for path, _, _ in _key_fields(roles, fields)]


# Standard-metadata fields the pipeline sets before ingress runs (besides
# the volatile ones, never in a key).
SET_BEFORE_INGRESS = frozenset({"ingress_port", "instance_type", "parser_error",
                                "checksum_error"})


def varying_paths(roles: dict[str, Type], fields: set[tuple[str, str]],
                  before: set[tuple[str, str]]) -> list[str]:
    """Of :func:`key_paths`, those whose values may differ between packets
    received from a port when ingress starts: fields the parser or checksum
    verification may touch (``before``, as :func:`touched` gives them), the
    validity of any header type they touch, and the standard metadata the
    pipeline sets first. Every other field then holds its fresh value
    (zero, invalid) for every such packet, so it need not be in a key."""
    touched_types = {t for t, _ in before}
    return [path for path, t, f in _key_fields(roles, fields)
            if (t in touched_types if f == "_v"
                else (t, f) in before or (t, ALL) in before
                or (t == STANDARD_METADATA and f in SET_BEFORE_INGRESS))]

"""The per-flow cache of ingress decisions: which fields a program's
ingress can touch, and the cache that replays its effects.

Ingress (the control, its tables, actions, functions and sub-controls) is
a function of the header, metadata and standard-metadata fields it reads,
of the control-plane state and of the externs it calls. :func:`touched`
collects, from the IR, every field ingress may read or write, by
(aggregate type name, field name): aliasing follows types, so a field of a
header passed to an action as ``hdr`` or reached as ``hdr.ipv4`` is the
same (type, field). A whole-aggregate use (an assignment of a header, a
``setValid``, an ``out`` argument, an extern given a struct) touches every
field of the type.

:class:`DecisionCache` keys a packet by the values of those fields before
ingress and keeps their values after it (a write is replayed as the value
it left, which depends only on the key), with the counter cells ingress
bumped and the change of the packet-length register. A pass is cached
only when the generated code did not mark it (``ctx.nocache``: registers,
meters, random, digests, clones, resubmit, recirculate, truncate, logs,
idle-timeout stamps, reads of per-packet standard metadata such as
timestamps and packet length); those fields stay out of the key because
every read of them marks the pass. The control plane empties the cache
on every change (:meth:`DecisionCache.forget`).
"""

from __future__ import annotations

from typing import Callable

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
MAX_ENTRIES = 1 << 16  # per switch; starts over when full
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


def _compile(source: str) -> dict[str, object]:
    ns: dict[str, object] = {}
    exec(compile(source, "<p4 decision cache>", "exec"), ns)  # noqa: S102 - our own code
    return ns


def _hoisted(paths: list[str]) -> tuple[list[str], list[str]]:
    """Lines binding every prefix two or more ``paths`` share to a local
    (``h1 = F.hdr``, ``h2 = h1.ipv4``), and each path's expression on them:
    one attribute load per path instead of one per dot."""
    uses: dict[str, int] = {}
    for p in paths:
        parts = p.split(".")
        for i in range(1, len(parts)):
            prefix = ".".join(parts[:i])
            uses[prefix] = uses.get(prefix, 0) + 1
    names: dict[str, str] = {}
    lines: list[str] = []

    def expr(path: str) -> str:
        parts = path.split(".")
        for i in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:i])
            if prefix in names:
                return ".".join([names[prefix]] + parts[i:])
        return "F." + path
    for prefix in sorted(uses, key=lambda q: q.count(".")):
        if uses[prefix] >= 2:
            code = expr(prefix)
            names[prefix] = f"h{len(names)}"
            lines.append(f"    {names[prefix]} = {code}")
    return lines, [expr(p) for p in paths]


def reader(paths: list[str]) -> Callable[[object], tuple]:
    """Generated ``read(F) -> tuple`` of ``paths``."""
    lines, exprs = _hoisted(paths)
    body = "\n".join(lines + [f"    return ({''.join(e + ', ' for e in exprs)})"])
    return _compile(f"def read(F):\n{body}\n")["read"]  # type: ignore[return-value]


def writer(paths: list[str]) -> Callable[[object, tuple], None]:
    """Generated ``write(F, values)`` of ``paths``."""
    if not paths:
        return _compile("def write(F, v):\n    pass\n")["write"]  # type: ignore[return-value]
    lines, exprs = _hoisted(paths)
    body = "\n".join(lines + [f"    ({''.join(e + ', ' for e in exprs)}) = v"])
    return _compile(f"def write(F, v):\n{body}\n")["write"]  # type: ignore[return-value]


class DecisionCache:
    """Ingress decisions by the touched fields' values. An entry holds what
    to replay: a writer of the fields ingress changed and their values
    (a field whose value it kept needs no write: its value before ingress
    is part of the key), the counter bumps and the change of the
    packet-length register."""

    __slots__ = ("read", "read_key", "entries", "paths", "key_paths", "hits", "misses",
                 "_writers", "_make_writer")

    def __init__(self, paths: list[str], key_paths: list[str] | None = None,
                 compiled: tuple[Callable, Callable, Callable] | None = None) -> None:  # type: ignore[type-arg]
        """``paths``: every field ingress may touch; ``key_paths`` (default
        all): those that can differ between the packets keyed (see
        :func:`varying_paths`), what :attr:`read_key` reads. ``compiled``:
        the compiled executor's readers of ``paths`` and ``key_paths`` and
        its writer class (``Writer(indices)(F, values)``), instead of
        generated Python."""
        self.paths = paths
        self.key_paths = paths if key_paths is None else key_paths
        self._make_writer: Callable[[tuple[int, ...]], Callable[[object, tuple], None]] | None = None
        if compiled is not None:
            # (its key reader may give bytes, not a tuple: see .cython_module)
            self.read, self.read_key, self._make_writer = compiled
        else:
            self.read = reader(paths)
            self.read_key = self.read if self.key_paths == paths else reader(self.key_paths)
        self.entries: dict[tuple | bytes, tuple[Callable[[object, tuple], None], tuple, tuple, int]] = {}
        self.hits = 0
        self.misses = 0
        # writers by the indices of the fields they write (a few patterns:
        # forwarded, dropped ...)
        self._writers: dict[tuple[int, ...], Callable[[object, tuple], None]] = {}

    def forget(self) -> None:
        """Empty the cache (the control plane changed something)."""
        self.entries.clear()

    def store(self, key: tuple | bytes, before: tuple, after: tuple, bumps: tuple,
              length_delta: int) -> None:
        """Keep what ingress did to a packet of ``key`` (:attr:`read_key`'s),
        given every field before and after it (:attr:`read`'s). A writer
        with a ``pack`` method (the compiled one) keeps the values in the
        form it writes from; its call takes that form or a tuple."""
        changed = tuple(i for i, (a, b) in enumerate(zip(before, after))
                        if a != b or type(a) is not type(b))
        write = self._writers.get(changed)
        if write is None:
            write = self._writers[changed] = (
                writer([self.paths[i] for i in changed]) if self._make_writer is None
                else self._make_writer(changed))
        entries = self.entries
        if len(entries) >= MAX_ENTRIES:
            entries.clear()
        values = tuple(after[i] for i in changed)
        pack = getattr(write, "pack", None)  # (a compiled writer keeps them in its own form)
        entries[key] = (write, values if pack is None else pack(values), bumps, length_delta)


def replay_bumps(bumps: tuple, nbytes: int) -> None:
    """Count a cached pass's counters again: (packets, bytes, index) of an
    indexed counter, or a table entry's direct counter."""
    for b in bumps:
        if b.__class__ is tuple:
            packets, byte_cells, i = b
            packets[i] += 1
            byte_cells[i] += nbytes
        else:
            b.packets += 1
            b.bytes += nbytes

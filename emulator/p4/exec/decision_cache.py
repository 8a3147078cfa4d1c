"""The cache of ingress decisions a switch keeps per flow (see
:mod:`.decisions`, which finds the fields it keys on): :class:`DecisionCache`,
the readers and writers of those fields generated as Python
(:func:`reader`, :func:`writer`) where the compiled module has none of its
own, and :func:`replay_bumps`, a cached pass's counters counted again.

A module of its own because it is per-packet code: the speedups group
builds it (``decision_cache.pxd``), so the compiled driver reads an entry,
its hit and miss counts in C.
"""

from __future__ import annotations

from typing import Callable

MAX_ENTRIES = 1 << 16  # per switch; starts over when full


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

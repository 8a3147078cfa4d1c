"""P4Runtime ids and aliases, assigned the way p4c assigns them.

Everything here reproduces p4c's ``control-plane/p4RuntimeSymbolTable.cpp``
(``P4RuntimeSymbolTable``, ``P4SymbolSuffixSet``, ``externalId``) and the
``FieldIdAllocator`` of ``control-plane/p4RuntimeSerializer.cpp``.

Top-level objects (tables, actions, externs, ...)
--------------------------------------------------
* ``id = (prefix << 24) | (jenkins_one_at_a_time(name) & 0xffffff)`` where
  ``name`` is the object's control-plane name exactly as it appears in the
  P4Info preamble (fully qualified, leading ``.`` already stripped, e.g.
  ``MyIngress.ipv4_lpm``, ``NoAction``).  Exception: controller headers hash
  the *header type* name (``packet_in_header_t``), not the
  ``@controller_header("packet_in")`` string that P4Info shows as the name.
* The hash is Bob Jenkins' one-at-a-time hash over the UTF-8 bytes, 32-bit
  arithmetic.
* ``@id(N)``: ``N`` is an unsigned 32-bit value.  If its top 8 bits are 0 the
  kind prefix is OR-ed in (``@id(5)`` on an action gives ``0x01000005``); if
  they are non-zero they must equal the kind prefix (else p4c errors "@id has
  the wrong 8-bit prefix").  The same id on two objects is an error.  Ids from
  ``@id`` are reserved before any hash is computed.
* Ids are computed kind by kind in increasing prefix order (ACTION 0x01,
  TABLE 0x02, VALUE_SET 0x03, CONTROLLER_HEADER 0x04, ACTION_PROFILE 0x11,
  COUNTER 0x12, DIRECT_COUNTER 0x13, METER 0x14, DIRECT_METER 0x15,
  REGISTER 0x16, DIGEST 0x17); within a kind the names without ``@id`` are
  processed in byte-wise (``strcmp``) order.
* Collisions: linear probing on the 32-bit hash *value* (``hash += 1``,
  then re-mask to 24 bits), so the prefix never changes; the probe skips any
  id already taken (by ``@id`` of any kind or by an earlier name).  There is
  no special case for low bits equal to 0 (the id can never be 0 because the
  prefix is non-zero).
* The same name added twice for one kind is one symbol (first ``@id`` wins).

Aliases
-------
The alias of an object is the shortest suffix of its dot-separated name that
is unique among *all* symbols of the program's symbol table (all kinds
together, including objects P4Info does not list: ``@hidden`` tables and
actions, direct counters/meters attached to no table, controller header type
names, digest type names).  ``a.b.c`` with another symbol ``x.b.c`` gets
``a.b.c``; with only ``x.c`` it gets ``b.c``.

Field ids (match fields, action params, packet metadata, value set fields)
-------------------------------------------------------------------------
``FieldIdAllocator``: first every ``@id`` is reserved (0 and duplicates are
errors); then a counter starts at 1 and for each element in declaration
order: if the element has an ``@id``, the counter is incremented and the
element keeps its ``@id``; otherwise the counter is advanced past reserved
ids and its value is given to the element (and reserved).  Elements that are
later skipped (``selector`` keys, ``@hidden`` header fields) still take
their id.
"""

from __future__ import annotations

from emulator.p4.errors import P4Error

from dataclasses import dataclass, field
from enum import IntEnum
from typing import Iterable, Optional, Sequence


class P4Ids(IntEnum):
    """The 8-bit id prefixes of ``p4.config.v1.P4Ids.Prefix``."""

    UNSPECIFIED = 0x00
    ACTION = 0x01
    TABLE = 0x02
    VALUE_SET = 0x03
    CONTROLLER_HEADER = 0x04
    PSA_EXTERNS_START = 0x10
    ACTION_PROFILE = 0x11
    COUNTER = 0x12
    DIRECT_COUNTER = 0x13
    METER = 0x14
    DIRECT_METER = 0x15
    REGISTER = 0x16
    DIGEST = 0x17
    OTHER_EXTERNS_START = 0x80
    MAX = 0xFF


_MASK32 = 0xFFFFFFFF


class P4InfoError(P4Error, ValueError):
    """A program that p4c would reject while generating P4Info."""


def jenkins_one_at_a_time(key: str | bytes) -> int:
    """Bob Jenkins' one-at-a-time hash (32 bits), as p4c computes it."""
    data = key.encode("utf-8") if isinstance(key, str) else bytes(key)
    h = 0
    for byte in data:
        h = (h + byte) & _MASK32
        h = (h + (h << 10)) & _MASK32
        h ^= h >> 6
    h = (h + (h << 3)) & _MASK32
    h ^= h >> 11
    h = (h + (h << 15)) & _MASK32
    return h


def hashed_id(prefix: int, name: str) -> int:
    """The id p4c gives ``name`` of kind ``prefix`` when nothing collides."""
    return ((int(prefix) & 0xFF) << 24) | (jenkins_one_at_a_time(name) & 0xFFFFFF)


def apply_id_annotation(prefix: int, value: int, what: str = "object") -> int:
    """The full id for ``@id(value)`` on an object of kind ``prefix``."""
    if value < 0 or value > _MASK32:
        raise P4InfoError(f"{what}: @id should be an unsigned integer")
    type_prefix = (int(prefix) & 0xFF) << 24
    top = value & 0xFF000000
    if top != 0 and top != type_prefix:
        raise P4InfoError(f"{what}: @id has the wrong 8-bit prefix")
    return value | type_prefix


def _sort_key(name: str) -> bytes:
    return name.encode("utf-8")


class SuffixSet:
    """p4c's ``P4SymbolSuffixSet``: shortest unique dot-suffix of a symbol."""

    def __init__(self) -> None:
        self._symbols: set[str] = set()
        # node: [instances, edges]
        self._root: list = [0, {}]

    def add(self, symbol: str) -> None:
        if not symbol:
            raise P4InfoError("empty symbol name")
        if symbol in self._symbols:
            return
        self._symbols.add(symbol)
        node = self._root
        for comp in reversed(symbol.split(".")):
            edges = node[1]
            nxt = edges.get(comp)
            if nxt is None:
                nxt = [0, {}]
                edges[comp] = nxt
            node = nxt
            node[0] += 1

    def alias(self, symbol: str) -> str:
        comps = symbol.split(".")
        needed = 0
        node = self._root
        for comp in reversed(comps):
            nxt = node[1].get(comp)
            if nxt is None:
                raise P4InfoError(f"symbol is not in suffix set: {symbol}")
            node = nxt
            needed += 1
            if node[0] < 2:
                break
        return ".".join(comps[len(comps) - needed:])


@dataclass
class SymbolTable:
    """Collects (kind, name, @id) and assigns ids as p4c does.

    Use :meth:`add` for every control-plane symbol (see the module docstring
    for which), then :meth:`compute`, then :meth:`id` / :meth:`alias`.
    """

    _tables: dict[int, dict[str, Optional[int]]] = field(default_factory=dict)
    _assigned: set[int] = field(default_factory=set)
    _suffixes: SuffixSet = field(default_factory=SuffixSet)
    _computed: bool = False

    def add(self, kind: int, name: str, id_annotation: Optional[int] = None) -> None:
        if self._computed:
            raise RuntimeError("symbols added after ids were computed")
        table = self._tables.setdefault(int(kind), {})
        if name in table:
            return  # a duplicate; p4c accepts it silently
        if id_annotation is None:
            table[name] = None
        else:
            full = apply_id_annotation(kind, id_annotation, name)
            if full in self._assigned:
                raise P4InfoError(f"@id {full} is assigned to multiple declarations")
            self._assigned.add(full)
            table[name] = full
        self._suffixes.add(name)

    def has(self, kind: int, name: str) -> bool:
        return name in self._tables.get(int(kind), {})

    def compute(self) -> "SymbolTable":
        for kind in sorted(self._tables):
            table = self._tables[kind]
            for name in sorted((n for n, v in table.items() if v is None), key=_sort_key):
                source = jenkins_one_at_a_time(name)
                value = source
                while True:
                    candidate = ((kind & 0xFF) << 24) | (value & 0xFFFFFF)
                    if candidate not in self._assigned:
                        break
                    value = (value + 1) & _MASK32
                    if value == source:
                        raise P4InfoError(f"No available id to represent {name} in P4Runtime")
                self._assigned.add(candidate)
                table[name] = candidate
        self._computed = True
        return self

    def id(self, kind: int, name: str) -> int:
        if not self._computed:
            raise RuntimeError("ids not computed yet")
        try:
            value = self._tables[int(kind)][name]
        except KeyError:
            raise P4InfoError(
                f"looking up symbol '{name}' of kind {P4Ids(kind).name} "
                "without adding it to the table"
            ) from None
        assert value is not None
        return value

    def alias(self, name: str) -> str:
        return self._suffixes.alias(name)

    def names(self, kind: int) -> list[str]:
        return list(self._tables.get(int(kind), {}))


def allocate_field_ids(id_annotations: Sequence[Optional[int]], what: str = "field") -> list[int]:
    """p4c's ``FieldIdAllocator`` over elements in declaration order.

    ``id_annotations[i]`` is the ``@id`` of element ``i`` or None.
    Returns the id of every element.
    """
    assigned: set[int] = set()
    result: list[Optional[int]] = [None] * len(id_annotations)
    for i, user in enumerate(id_annotations):
        if user is None:
            continue
        if user == 0:
            raise P4InfoError(f"{what}: 0 is not a valid @id value")
        if user in assigned:
            raise P4InfoError(f"{what}: @id {user} is used multiple times")
        result[i] = user
        assigned.add(user)
    index = 1
    for i, user in enumerate(id_annotations):
        if user is not None:
            index += 1
            continue
        while index in assigned:
            index += 1
        result[i] = index
        assigned.add(index)
    return [int(r) for r in result]  # type: ignore[arg-type]


def shortest_unique_suffixes(names: Iterable[str]) -> dict[str, str]:
    """Alias of each of ``names`` computed against the set of all ``names``."""
    s = SuffixSet()
    names = list(names)
    for n in names:
        s.add(n)
    return {n: s.alias(n) for n in names}

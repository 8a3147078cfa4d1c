"""Match-action table state and lookup, action profiles and selectors.

Match values per key kind, as the control plane gives them:

- ``exact``: an int;
- ``lpm``: ``(value, prefix_len)``;
- ``ternary``: ``(value, mask)``;
- ``range``: ``(low, high)`` inclusive;
- ``optional``: an int, or ``None`` for "don't care".

Lookups: all-exact tables use one dict; exact + one lpm use one dict per
prefix length (longest first); anything with ternary, range or optional keys
scans entries by priority (highest number wins, as in P4Runtime).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from emulator.p4.errors import RuntimeConfigError
from emulator.p4.exec.externs import MeterCell, pack_bits

# Keys remembered per scanned table before the memo starts over.
MEMO_ENTRIES = 4096
# Selector hashes remembered per action profile before that memo starts over.
SELECTOR_HASHES = 1 << 16

ActionFn = Callable[..., object]


@dataclass(frozen=True)
class KeySpec:
    name: str
    match_kind: str
    width: int


@dataclass(frozen=True)
class ActionSpec:
    """An action a table may run: ``aid`` is what ``action_run`` compares,
    ``param_widths`` the widths of its action data (name, width)."""

    name: str
    aid: int
    params: tuple[tuple[str, int], ...]
    scope: str = "table_and_default"  # or "table_only", "default_only"


class Entry:
    """A table entry, a default entry or an action-profile member.

    ``hit`` is False for default entries. ``fn``/``args`` run the action;
    ``member``/``group`` point into the table's action profile instead when
    the table has one."""

    __slots__ = ("key", "priority", "action", "args", "fn", "aid", "hit", "packets",
                 "bytes", "meter", "member", "group", "idle_timeout_ns", "last_hit_us",
                 "metadata")

    def __init__(self, action: ActionSpec | None, args: tuple[int, ...], fn: ActionFn | None,
                 hit: bool, key: tuple = (), priority: int = 0) -> None:
        self.key = key
        self.priority = priority
        self.action = action
        self.args = args
        self.fn = fn
        self.aid = action.aid if action is not None else -1
        self.hit = hit
        self.packets = 0
        self.bytes = 0
        self.meter: MeterCell | None = None
        self.member: int | None = None
        self.group: int | None = None
        self.idle_timeout_ns = 0
        self.last_hit_us = 0.0  # the pipeline clock at the last hit (tables with idle timeout)
        self.metadata = b""


class ActionProfile:
    """``action_profile(size)`` or ``action_selector(algo, size, width)``.

    Members are entries without keys; groups are lists of member ids. A group
    picks ``members[hash % len(members)]`` in member-insertion order, as
    BMv2 orders members by handle."""

    def __init__(self, name: str, size: int, hash_fn: Callable[[bytes], int] | None,
                 output_width: int = 0) -> None:
        self.name = name
        self.size = size
        self.hash_fn = hash_fn
        self.output_width = output_width
        self.members: dict[int, Entry] = {}
        self.groups: dict[int, list[int]] = {}
        self.group_weights: dict[int, dict[int, int]] = {}
        self.group_max_size: dict[int, int] = {}
        # Hash by selector fields (a pure function of them): every packet of
        # a flow has the same fields. Bounded: starts over when full.
        self._hashes: dict[tuple[tuple[int, int], ...], int] = {}
        # Called on every change (the pipeline forgets its cached decisions).
        self.changed: Callable[[], None] = _nothing

    @property
    def with_selector(self) -> bool:
        return self.hash_fn is not None

    def add_member(self, member_id: int, entry: Entry) -> None:
        if member_id in self.members:
            raise RuntimeConfigError(f"{self.name}: member {member_id} already exists")
        if len(self.members) >= self.size:
            raise RuntimeConfigError(f"{self.name}: profile is full ({self.size} members)")
        self.members[member_id] = entry
        self.changed()

    def set_group(self, group_id: int, member_ids: Sequence[int],
                  weights: Sequence[int] | None = None) -> None:
        """Create or replace a group; a member of weight w appears w times."""
        for m in member_ids:
            if m not in self.members:
                raise RuntimeConfigError(f"{self.name}: group {group_id} names unknown member {m}")
        # BMv2 picks the n-th member of a group in member-handle order, i.e. the
        # order members were created; PI makes a weight-w member w handles,
        # the w-1 extra ones created after the others (in member id order).
        created = {m: i for i, m in enumerate(self.members)}
        weight = {m: (weights[i] if weights else 1) for i, m in enumerate(member_ids)}
        expanded = sorted(weight, key=created.__getitem__)
        for m in sorted(weight):
            expanded.extend([m] * (weight[m] - 1))
        self.groups[group_id] = expanded
        self.changed()

    def select(self, group_id: int, selector_parts: Sequence[tuple[int, int]]) -> Entry | None:
        members = self.groups.get(group_id)
        if not members or self.hash_fn is None:
            return None
        # BMv2 takes the hash as an unsigned int (32 bits) whatever the
        # selector's declared output width, then ``hash % group size``.
        hashes = self._hashes
        value = hashes.get(selector_parts)  # type: ignore[call-overload]
        if value is None:
            if len(hashes) >= SELECTOR_HASHES:
                hashes.clear()
            value = hashes[selector_parts] = (  # type: ignore[index]
                self.hash_fn(pack_bits(selector_parts)) & 0xFFFFFFFF)
        return self.members[members[value % len(members)]]


class Table:
    """One table's entries and default action, and its lookup."""

    def __init__(self, name: str, keys: Sequence[KeySpec], actions: Sequence[ActionSpec],
                 size: int, default: Entry, default_const: bool = False,
                 profile: ActionProfile | None = None, direct_counter: bool = False,
                 direct_meter_kind: str | None = None, const_entries: bool = False,
                 idle_timeout: bool = False) -> None:
        self.name = name
        self.keys = tuple(k for k in keys if k.match_kind != "selector")
        self.selector_keys = tuple(k for k in keys if k.match_kind == "selector")
        self.actions = {a.name: a for a in actions}
        self.size = size
        self.default = default
        self.initial_default = default
        self.default_const = default_const
        self.const_entries = const_entries
        self.idle_timeout = idle_timeout  # support_timeout: hits stamp last_hit_us
        self.profile = profile
        self.direct_counter = direct_counter
        self.direct_meter_kind = direct_meter_kind
        self.fns: dict[int, ActionFn] = {}
        # aid → this table's own function for an action whose directional
        # parameters its actions list binds (``actions = { a(hdr.x); }``).
        self.overrides: dict[int, ActionFn] = {}
        kinds = [k.match_kind for k in self.keys]
        self._exact = all(k == "exact" for k in kinds)
        self._lpm_index = kinds.index("lpm") if kinds.count("lpm") == 1 and all(
            k in ("exact", "lpm") for k in kinds) else -1
        self._entries: dict[tuple, Entry] = {}
        self._by_prefix: dict[int, dict[tuple, Entry]] = {}
        self._prefixes: list[int] = []
        self._lpm_levels: list[tuple[int, dict[tuple, Entry]]] = []
        self._scan: list[Entry] = []
        # Scanned (ternary, range, optional) lookups by key: the same few keys
        # (port, priority, DSCP) come back packet after packet. Emptied by
        # every change of the entries or the default.
        self._memo: dict[tuple, Entry] = {}
        self.needs_priority = not self._exact and self._lpm_index < 0
        # For generated code, which holds these dicts (they are changed in
        # place, never replaced): the entries of an all-exact table by key,
        # and the memo of a scanned one.
        self.exact_entries = self._entries if self._exact else None
        self.scan_memo = self._memo if self.needs_priority else None
        # Called on every change of the entries or the default (the
        # pipeline forgets its cached decisions).
        self.changed: Callable[[], None] = _nothing

    # ---- control-plane side ---------------------------------------------------
    def bind(self, fns: dict[int, ActionFn]) -> None:
        """Give the table the compiled action functions (aid → function)."""
        self.fns = {**fns, **self.overrides}
        for e in self.all_entries():
            self._bind_entry(e)
        self._bind_entry(self.default)
        if self.profile is not None:
            for m in self.profile.members.values():
                self._bind_entry(m)

    def _bind_entry(self, e: Entry) -> None:
        if e.action is not None:
            e.fn = self.fns.get(e.action.aid)

    def action(self, name: str) -> ActionSpec:
        spec = self.actions.get(name)
        if spec is None:
            raise RuntimeConfigError(
                f"table {self.name}: unknown action {name!r}; allowed: {', '.join(sorted(self.actions))}")
        return spec

    def make_entry(self, action_name: str, params: Sequence[int], key: tuple = (),
                   priority: int = 0, hit: bool = True) -> Entry:
        spec = self.action(action_name)
        if len(params) != len(spec.params):
            raise RuntimeConfigError(
                f"table {self.name}: action {action_name} takes {len(spec.params)} parameters "
                f"({', '.join(n for n, _ in spec.params) or 'none'}), got {len(params)}")
        for (pname, width), value in zip(spec.params, params):
            if not 0 <= value < (1 << width):
                raise RuntimeConfigError(
                    f"table {self.name}: action {action_name} parameter {pname}: "
                    f"{value} does not fit in {width} bits")
        entry = Entry(spec, tuple(params), self.fns.get(spec.aid), hit, key, priority)
        return entry

    def canonical_key(self, match: Sequence[object]) -> tuple:
        """Check a match against the key specs and normalise it (masked
        values, ``None`` for wildcards)."""
        if len(match) != len(self.keys):
            raise RuntimeConfigError(
                f"table {self.name}: expected {len(self.keys)} match fields "
                f"({', '.join(k.name for k in self.keys)}), got {len(match)}")
        out = []
        for spec, value in zip(self.keys, match):
            out.append(_canonical(self.name, spec, value))
        return tuple(out)

    def insert(self, entry: Entry, replace: bool = False) -> None:
        key = entry.key
        store_key = (key, entry.priority) if self.needs_priority else key
        if store_key in self._entries and not replace:
            raise RuntimeConfigError(f"table {self.name}: an entry with this match already exists")
        if store_key not in self._entries and len(self._entries) >= self.size:
            raise RuntimeConfigError(f"table {self.name}: table is full ({self.size} entries)")
        self._entries[store_key] = entry
        self._rebuild()

    def make_indirect_entry(self, key: tuple, priority: int = 0, *, member: int | None = None,
                            group: int | None = None) -> Entry:
        """An entry of a table with an action profile: it points to a
        member or (with a selector) a group instead of holding an action."""
        if self.profile is None:
            raise RuntimeConfigError(f"table {self.name} has no action profile")
        if (member is None) == (group is None):
            raise RuntimeConfigError(f"table {self.name}: an entry points to a member or a group")
        if group is not None and not self.profile.with_selector:
            raise RuntimeConfigError(f"table {self.name}: groups need an action selector")
        entry = Entry(None, (), None, True, key, priority)
        entry.member, entry.group = member, group
        return entry

    def make_member(self, action_name: str, params: Sequence[int]) -> Entry:
        """An action-profile member for this table's profile."""
        return self.make_entry(action_name, params)

    def find(self, key: tuple, priority: int = 0) -> Entry | None:
        return self._entries.get((key, priority) if self.needs_priority else key)

    def delete(self, key: tuple, priority: int = 0) -> Entry:
        store_key = (key, priority) if self.needs_priority else key
        entry = self._entries.pop(store_key, None)
        if entry is None:
            raise RuntimeConfigError(f"table {self.name}: no entry with this match")
        self._rebuild()
        return entry

    def clear(self) -> None:
        self._entries.clear()
        self._rebuild()

    def all_entries(self) -> list[Entry]:
        return list(self._entries.values())

    def set_default(self, entry: Entry) -> None:
        entry.hit = False
        self.default = entry
        self._memo.clear()
        self.changed()

    def _rebuild(self) -> None:
        self._memo.clear()
        self.changed()
        if self._exact:
            return
        if self._lpm_index >= 0:
            i = self._lpm_index
            by_prefix: dict[int, dict[tuple, Entry]] = {}
            for key, e in self._entries.items():
                plen = key[i][1]
                masked = key[:i] + (key[i][0],) + key[i + 1:]
                by_prefix.setdefault(plen, {})[masked] = e
            self._by_prefix = by_prefix
            self._prefixes = sorted(by_prefix, reverse=True)
            width = self.keys[i].width
            # Longest prefix first: (mask of the prefix, entries by masked key).
            self._lpm_levels = [(((1 << plen) - 1) << (width - plen), by_prefix[plen])
                                for plen in self._prefixes]
            return
        # Highest priority first; ties keep insertion order.
        self._scan = sorted(self._entries.values(), key=lambda e: -e.priority)

    # ---- data-plane side -------------------------------------------------------
    def lookup(self, key: tuple) -> Entry:
        if self._exact:
            return self._entries.get(key, self.default)
        if self._lpm_index >= 0:
            i = self._lpm_index
            value = key[i]
            if len(key) == 1:
                for mask, entries in self._lpm_levels:
                    e = entries.get((value & mask,))
                    if e is not None:
                        return e
                return self.default
            head, tail = key[:i], key[i + 1:]
            for mask, entries in self._lpm_levels:
                e = entries.get(head + (value & mask,) + tail)
                if e is not None:
                    return e
            return self.default
        memo = self._memo
        found = memo.get(key)
        if found is not None:
            return found
        found = self.default
        for e in self._scan:
            if _matches(self.keys, e.key, key):
                found = e
                break
        if len(memo) >= MEMO_ENTRIES:
            memo.clear()
        memo[key] = found
        return found


def _nothing() -> None:
    pass


def _canonical(table: str, spec: KeySpec, value: object) -> object:
    limit = 1 << spec.width
    where = f"table {table}: match field {spec.name} ({spec.match_kind}, {spec.width} bits)"
    try:
        if spec.match_kind == "exact":
            v = int(value)  # type: ignore[call-overload]
            if not 0 <= v < limit:
                raise RuntimeConfigError(f"{where}: {v} does not fit")
            return v
        if spec.match_kind == "lpm":
            v, plen = value  # type: ignore[misc]
            if not 0 <= plen <= spec.width:
                raise RuntimeConfigError(f"{where}: prefix length {plen} out of 0..{spec.width}")
            if not 0 <= v < limit:
                raise RuntimeConfigError(f"{where}: {v} does not fit")
            mask = ((1 << plen) - 1) << (spec.width - plen)
            return (v & mask, plen)
        if spec.match_kind == "ternary":
            v, m = value  # type: ignore[misc]
            if not (0 <= v < limit and 0 <= m < limit):
                raise RuntimeConfigError(f"{where}: value or mask does not fit")
            return (v & m, m)
        if spec.match_kind == "range":
            lo, hi = value  # type: ignore[misc]
            if not (0 <= lo < limit and 0 <= hi < limit) or lo > hi:
                raise RuntimeConfigError(f"{where}: range [{lo}, {hi}] is empty or does not fit")
            return (lo, hi)
        if spec.match_kind == "optional":
            if value is None:
                return None
            v = int(value)  # type: ignore[call-overload]
            if not 0 <= v < limit:
                raise RuntimeConfigError(f"{where}: {v} does not fit")
            return v
    except (TypeError, ValueError):
        raise RuntimeConfigError(f"{where}: malformed match value {value!r}") from None
    raise RuntimeConfigError(f"{where}: match kind not supported")


def _matches(specs: tuple[KeySpec, ...], entry_key: tuple, key: tuple) -> bool:
    for spec, ek, k in zip(specs, entry_key, key):
        kind = spec.match_kind
        if kind == "exact":
            if ek != k:
                return False
        elif kind == "ternary":
            if k & ek[1] != ek[0]:
                return False
        elif kind == "lpm":
            plen = ek[1]
            mask = ((1 << plen) - 1) << (spec.width - plen)
            if k & mask != ek[0]:
                return False
        elif kind == "range":
            if not ek[0] <= k <= ek[1]:
                return False
        elif kind == "optional":
            if ek is not None and ek != k:
                return False
    return True

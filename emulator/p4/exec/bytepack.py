"""Plans for moving runs of bit fields to and from bytes with one
:class:`struct.Struct` call, for the generated code (header extract and
emit, field lists of checksums and hashes).

Fields are laid out back to back, most significant bit first. A plan cuts
them into *groups* that each end on a byte boundary; a group of 1, 2, 4 or 8
bytes is one ``B``/``H``/``I``/``Q`` item, any other size an ``Ns`` item
(converted with ``int.from_bytes``/``int.to_bytes``). Inside a group, fields
are shifts and masks of one small integer instead of one wide integer for
the whole header.
"""

from __future__ import annotations

from dataclasses import dataclass

_CODES = {1: "B", 2: "H", 4: "I", 8: "Q"}


@dataclass(frozen=True)
class Group:
    """Fields ``first`` .. ``first + count - 1`` taking ``nbytes`` bytes."""

    first: int
    count: int
    nbytes: int

    @property
    def native(self) -> bool:
        """Whether struct packs the group as an integer (else as bytes)."""
        return self.nbytes in _CODES


def plan(widths: list[int]) -> list[Group] | None:
    """Groups for fields of these bit widths; None when the total is not a
    whole number of bytes (or there are no bits at all)."""
    groups: list[Group] = []
    first, bits = 0, 0
    for i, w in enumerate(widths):
        bits += w
        if bits % 8 == 0 and bits:
            groups.append(Group(first, i + 1 - first, bits // 8))
            first, bits = i + 1, 0
    if bits or not groups:
        return None
    # A field of width 0 after the last boundary belongs to the last group.
    if first < len(widths):
        last = groups[-1]
        groups[-1] = Group(last.first, len(widths) - last.first, last.nbytes)
    return _merge_odd(groups)


def _merge_odd(groups: list[Group]) -> list[Group]:
    """Join a group of an odd size (3, 5, 6, 7 bytes: converted through
    bytes) with a neighbour when together they make an integer item."""
    out: list[Group] = []
    i = 0
    while i < len(groups):
        g = groups[i]
        if not g.native:
            if out and out[-1].nbytes + g.nbytes in _CODES:
                prev = out.pop()
                g = Group(prev.first, prev.count + g.count, prev.nbytes + g.nbytes)
            elif i + 1 < len(groups) and g.nbytes + groups[i + 1].nbytes in _CODES:
                nxt = groups[i + 1]
                g = Group(g.first, g.count + nxt.count, g.nbytes + nxt.nbytes)
                i += 1
        out.append(g)
        i += 1
    return out


def struct_format(groups: list[Group]) -> str:
    return ">" + "".join(_CODES.get(g.nbytes, f"{g.nbytes}s") for g in groups)


def group_value(group: Group, codes: list[str], widths: list[int], c_ints: bool = False) -> str:
    """Python expression of a group's integer value from the codes of its
    fields (each an unsigned int of its width); ``c_ints``: the codes may be
    C integers (the compiled executor), so a group wider than 64 bits is
    assembled from Python ints (``_o``, see :func:`.layout.as_object`)."""
    parts: list[str] = []
    shift = sum(widths[group.first:group.first + group.count])
    for i in range(group.first, group.first + group.count):
        shift -= widths[i]
        if widths[i] == 0:
            continue
        code = codes[i]
        if c_ints and shift and group.nbytes > 8:
            code = f"_o({code})"  # wider than a C integer (see layout.as_object)
        parts.append(f"({code} << {shift})" if shift else code)
    if not parts:
        return "0"
    value = parts[0] if len(parts) == 1 else "(" + " | ".join(parts) + ")"
    if group.native:
        return value
    return f"int.to_bytes({value}, {group.nbytes}, 'big')"


def pack_args(groups: list[Group], codes: list[str], widths: list[int], c_ints: bool = False) -> str:
    """The arguments of ``Struct(struct_format(groups)).pack``."""
    return ", ".join(group_value(g, codes, widths, c_ints) for g in groups)


def field_from_group(group: Group, index: int, var: str, widths: list[int]) -> str:
    """Python expression of field ``index`` (unsigned) from the group's
    value held in ``var`` (an int; for a bytes item, converted already)."""
    below = sum(widths[index + 1:group.first + group.count])
    w = widths[index]
    if w == 0:
        return "0"
    if w == group.nbytes * 8:
        return var
    code = f"({var} >> {below})" if below else var
    if index == group.first:  # the top bits: nothing above them to mask off
        return code
    return f"({code} & {(1 << w) - 1})"

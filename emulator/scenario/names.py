"""Name patterns of scenario files (GPUs, servers): shell-style wildcards,
and ``[N-M]`` as a range of numbers.

``*`` is any run of characters, ``?`` one character, ``[abc]`` / ``[!abc]``
one character of (not of) a set, as in the shell. ``[N-M]`` with N and M
whole numbers is any number from N to M: ``srv[0-15]/gpu0`` names sixteen
servers, where a shell would read ``[0-15]`` as one of the characters 0, 1
and 5 (a range ``[0-3]`` of single digits means the same either way).
Bounds written with leading zeros and of equal width match numbers of that
width (``node[01-12]``). A range is written out as alternatives, so it may
span at most :data:`MAX_RANGE` numbers.
"""

from __future__ import annotations

import re
from typing import Callable

PATTERN_CHARS = frozenset("*?[")
MAX_RANGE = 100_000
_TOKEN = re.compile(r"\[(\d+)-(\d+)\]|\[!?\]?[^\]]*\]|\*|\?|[^[*?]+|\[")


class PatternError(ValueError):
    """A pattern that cannot be read (the message says why)."""


def is_pattern(name: str) -> bool:
    return bool(PATTERN_CHARS & set(name))


def matcher(pattern: str) -> Callable[[str], bool]:
    """A test of names against ``pattern`` (see the module docstring); a
    malformed pattern raises :class:`PatternError`."""
    regex = re.compile("".join(_parts(pattern)), re.DOTALL)
    return lambda name: regex.fullmatch(name) is not None


def _parts(pattern: str) -> list[str]:
    parts: list[str] = []
    for m in _TOKEN.finditer(pattern):
        token = m.group(0)
        if m.group(1) is not None:
            parts.append(_number_range(pattern, m.group(1), m.group(2)))
        elif token == "*":
            parts.append(".*")
        elif token == "?":
            parts.append(".")
        elif token == "[":
            parts.append(re.escape(token))  # an unclosed bracket is a character, as in fnmatch
        elif token.startswith("["):
            inner = token[1:-1]
            negate = inner.startswith("!")
            if negate:
                inner = inner[1:]
            body = "".join(c if c == "-" else re.escape(c) for c in inner)
            parts.append(f"[{'^' if negate else ''}{body}]")
        else:
            parts.append(re.escape(token))
    return parts


def _number_range(pattern: str, low: str, high: str) -> str:
    lo, hi = int(low), int(high)
    if lo > hi:
        raise PatternError(f"pattern {pattern!r}: range [{low}-{high}] is empty (write the "
                           "smaller number first)")
    if hi - lo >= MAX_RANGE:
        raise PatternError(f"pattern {pattern!r}: range [{low}-{high}] spans more than "
                           f"{MAX_RANGE:,} numbers")
    width = len(low) if len(low) == len(high) and low.startswith("0") and len(low) > 1 else 0
    numbers = [str(n).zfill(width) for n in range(lo, hi + 1)]
    # longest first, so that a number is not cut short by a shorter one
    numbers.sort(key=len, reverse=True)
    return "(?:" + "|".join(numbers) + ")"

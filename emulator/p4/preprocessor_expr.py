"""The expressions of ``#if`` and ``#elif``: C integer arithmetic with C
precedence, ``?:``, octal/hex literals and integer suffixes, identifiers
left after macro expansion counting as 0 (the preprocessor has already
replaced ``defined X`` and expanded macros)."""

from __future__ import annotations

import re


def evaluate_condition(text: str) -> int:
    """The value of the ``#if`` expression ``text``; raises
    :class:`ConditionError` with a short reason when it is not valid."""
    return _CondExpr(text).evaluate()


class ConditionError(Exception):
    """An ``#if`` expression that is not a valid C integer expression."""


_COND_TOKEN = re.compile(
    r"\s*(?:(0[xX][0-9a-fA-F]+|[0-9]+)[uUlL]*|([A-Za-z_][A-Za-z0-9_]*)|"
    r"(\|\||&&|==|!=|<=|>=|<<|>>|[-+*/%<>&|^!~?:()]))"
)
# Binary operators by C precedence, loosest first.
_BINARY_LEVELS = (("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
                  ("<<", ">>"), ("+", "-"), ("*", "/", "%"))


class _CondExpr:
    """Evaluates a preprocessor ``#if`` expression (C integer arithmetic,
    identifiers left after macro expansion count as 0)."""

    def __init__(self, text: str) -> None:
        self.tokens: list[tuple[str, object]] = []
        pos = 0
        text = text.rstrip()
        while pos < len(text):
            match = _COND_TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ConditionError(f"unexpected '{text[pos:].strip()[:1]}'")
            if match.group(1):
                lit = match.group(1)
                base = 16 if lit[:2] in ("0x", "0X") else 8 if len(lit) > 1 and lit[0] == "0" else 10
                try:
                    self.tokens.append(("num", int(lit, base)))
                except ValueError:
                    raise ConditionError(f"invalid number '{lit}'") from None
            elif match.group(2):
                self.tokens.append(("num", 0))
            else:
                self.tokens.append(("op", match.group(3)))
            pos = match.end()
        self.pos = 0

    def evaluate(self) -> int:
        if not self.tokens:
            raise ConditionError("expected an expression")
        value = self._ternary()
        if self.pos != len(self.tokens):
            raise ConditionError(f"unexpected '{self.tokens[self.pos][1]}'")
        return value

    def _peek(self) -> object:
        return self.tokens[self.pos][1] if self.pos < len(self.tokens) and self.tokens[self.pos][0] == "op" else None

    def _expect(self, op: str) -> None:
        if self._peek() != op:
            raise ConditionError(f"expected '{op}'")
        self.pos += 1

    def _ternary(self) -> int:
        cond = self._binary(0)
        if self._peek() == "?":
            self.pos += 1
            a = self._ternary()
            self._expect(":")
            b = self._ternary()
            return a if cond else b
        return cond

    def _binary(self, level: int) -> int:
        if level == len(_BINARY_LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in _BINARY_LEVELS[level]:
            op = self.tokens[self.pos][1]
            self.pos += 1
            right = self._binary(level + 1)
            left = _apply_binary(str(op), left, right)
        return left

    def _unary(self) -> int:
        op = self._peek()
        if op in ("!", "~", "-", "+"):
            self.pos += 1
            value = self._unary()
            return {"!": int(not value), "~": ~value, "-": -value, "+": value}[str(op)]
        if op == "(":
            self.pos += 1
            value = self._ternary()
            self._expect(")")
            return value
        if self.pos < len(self.tokens) and self.tokens[self.pos][0] == "num":
            self.pos += 1
            return int(self.tokens[self.pos - 1][1])  # type: ignore[arg-type]
        raise ConditionError("expected a value" if self.pos >= len(self.tokens) else f"unexpected '{op}'")


def _apply_binary(op: str, a: int, b: int) -> int:
    if op in ("/", "%") and b == 0:
        raise ConditionError("division by zero")
    if op == "/":
        return int(a / b)
    if op == "%":
        return a - int(a / b) * b
    return {
        "||": lambda: int(bool(a) or bool(b)), "&&": lambda: int(bool(a) and bool(b)),
        "|": lambda: a | b, "^": lambda: a ^ b, "&": lambda: a & b,
        "==": lambda: int(a == b), "!=": lambda: int(a != b), "<": lambda: int(a < b),
        "<=": lambda: int(a <= b), ">": lambda: int(a > b), ">=": lambda: int(a >= b),
        "<<": lambda: a << b, ">>": lambda: a >> b, "+": lambda: a + b, "-": lambda: a - b,
        "*": lambda: a * b,
    }[op]()

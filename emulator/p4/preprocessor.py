"""The C-style preprocessor that runs before the P4 parser, as p4c runs cpp.

Supported: ``#include "file"`` (relative to the including file, then the
include directories, then the bundled ``include/`` with ``core.p4`` and
``v1model.p4``) and ``#include <file>`` (include directories, then bundled),
object-like and simple function-like ``#define``, ``#undef``, ``#if``,
``#ifdef``, ``#ifndef``, ``#elif``, ``#else``, ``#endif`` with C integer
expressions (evaluated by :mod:`emulator.p4.preprocessor_expr`) and
``defined``, ``#error``, ``#warning``; ``#line`` and ``#pragma`` are
ignored (``#pragma once`` is honoured). Comments are blanked out (newlines
kept) before directives are read.

The output keeps a source map: every output line knows its file, line and
text, and columns shifted by macro expansion map back to the macro's use, so
diagnostics point at what the user wrote.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

from emulator.p4.errors import CompileError, Diagnostic, SourceLocation, UnsupportedError
from emulator.p4.preprocessor_expr import ConditionError, evaluate_condition

BUILTIN_INCLUDE_DIR = Path(__file__).resolve().parent / "include"
MAX_INCLUDE_DEPTH = 100


@dataclass(frozen=True)
class LineOrigin:
    """Where one output line came from.

    ``segments`` maps output columns (0-based) back to original columns:
    each ``(out_col, orig_col, exact)`` starts a run; in an exact run columns
    advance together, in a macro expansion run they all map to ``orig_col``.
    """

    file: str
    line: int
    text: str
    segments: tuple[tuple[int, int, bool], ...] = ()

    def original_col(self, col0: int) -> int:
        orig = col0
        for out_col, orig_col, exact in self.segments:
            if out_col > col0:
                break
            orig = orig_col + (col0 - out_col) if exact else orig_col
        return orig


@dataclass(frozen=True)
class PreprocessedSource:
    """The preprocessed text and, for each of its lines, where it came from."""

    text: str
    lines: tuple[LineOrigin, ...]
    files: tuple[str, ...] = ()
    warnings: tuple[Diagnostic, ...] = ()

    def location(self, line: int, col: int) -> SourceLocation:
        """The original location of output ``line`` and ``col`` (both from 1)."""
        if not self.lines:
            return SourceLocation("<empty>", 1, 1)
        if line > len(self.lines):
            origin = self.lines[-1]
            return SourceLocation(origin.file, origin.line, len(origin.text) + 1, origin.text)
        origin = self.lines[max(line, 1) - 1]
        return SourceLocation(origin.file, origin.line, origin.original_col(col - 1) + 1, origin.text)


def preprocess(
    path: str | os.PathLike[str],
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
    text: str | None = None,
) -> PreprocessedSource:
    """Preprocess the file at ``path``, or ``text`` shown as file ``path``.

    Raises :class:`CompileError` (or :class:`UnsupportedError` when only
    unsupported features were found) with every diagnostic of the run.
    """
    pp = _Preprocessor(tuple(Path(d) for d in include_dirs), dict(defines or {}))
    return pp.run(str(path), text)


def preprocess_text(
    text: str,
    filename: str = "<string>",
    include_dirs: Iterable[str | os.PathLike[str]] = (),
    defines: Mapping[str, str] | None = None,
) -> PreprocessedSource:
    return preprocess(filename, include_dirs, defines, text=text)


# --------------------------------------------------------------------------


@dataclass
class _Macro:
    name: str
    body: str
    params: tuple[str, ...] | None = None  # None: object-like


@dataclass
class _Cond:
    """One open #if: is its current branch taken, was any branch taken."""

    loc: SourceLocation
    parent_active: bool
    taking: bool
    taken: bool
    seen_else: bool = False


@dataclass
class _Output:
    lines: list[str] = field(default_factory=list)
    origins: list[LineOrigin] = field(default_factory=list)


_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# Identifiers, pp-numbers (kept whole so 8w5 or 0x1F never expand), strings.
_PP_TOKEN = re.compile(r'[A-Za-z_][A-Za-z0-9_]*|[0-9][A-Za-z0-9_.]*|"(?:[^"\\\n]|\\.)*"?')
_DIRECTIVE = re.compile(r"\s*#\s*([A-Za-z_]*)")


def strip_comments(text: str) -> tuple[str, list[tuple[int, str]]]:
    """Blank out ``//`` and ``/* */`` comments, keeping string literals,
    newlines and columns. Returns the text and (offset, message) problems."""
    out: list[str] = []
    problems: list[tuple[int, str]] = []
    i, n = 0, len(text)
    start = 0
    while i < n:
        c = text[i]
        if c == '"':
            j = i + 1
            while j < n and text[j] != '"' and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            i = min(j + 1, n) if j < n and text[j] == '"' else j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "/":
            out.append(text[start:i])
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = start = j
            continue
        if c == "/" and i + 1 < n and text[i + 1] == "*":
            out.append(text[start:i])
            j = text.find("*/", i + 2)
            if j < 0:
                problems.append((i, "unterminated comment"))
                j = n
            else:
                j += 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = start = j
            continue
        i += 1
    out.append(text[start:])
    return "".join(out), problems


class _Preprocessor:
    def __init__(self, include_dirs: tuple[Path, ...], defines: dict[str, str]) -> None:
        self.include_dirs = include_dirs
        self.macros: dict[str, _Macro] = {}
        for name, value in defines.items():
            self.macros[name] = _Macro(name, str(value))
        self.diagnostics: list[Diagnostic] = []
        self.warnings: list[Diagnostic] = []
        self.unsupported = False
        self.once: set[str] = set()
        self.files: list[str] = []
        self.out = _Output()

    # -- driver -------------------------------------------------------------

    def run(self, path: str, text: str | None) -> PreprocessedSource:
        if text is None:
            try:
                text = Path(path).read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise CompileError([Diagnostic(None, f"cannot read {path}: {exc.strerror}")]) from None
            base = Path(path).resolve().parent
        else:
            base = Path(path).resolve().parent if not path.startswith("<") else Path.cwd()
        self._file(path, text, base, 0)
        if self.diagnostics:
            cls = UnsupportedError if self.unsupported and all(
                "not supported" in d.message for d in self.diagnostics) else CompileError
            raise cls(self.diagnostics)
        return PreprocessedSource(
            "\n".join(self.out.lines) + "\n", tuple(self.out.origins), tuple(self.files), tuple(self.warnings)
        )

    def _error(self, loc: SourceLocation, message: str, unsupported: bool = False) -> None:
        self.unsupported = self.unsupported or unsupported
        self.diagnostics.append(Diagnostic(loc, message))

    def _file(self, name: str, text: str, base: Path, depth: int) -> None:
        self.files.append(name)
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        code, problems = strip_comments(text)
        orig_lines = text.split("\n")
        code_lines = code.split("\n")
        if len(code_lines) > 1 and code_lines[-1] == "":
            code_lines.pop()  # the text after the last newline
        for offset, message in problems:
            line = text.count("\n", 0, offset)
            col = offset - (text.rfind("\n", 0, offset) + 1)
            self._error(SourceLocation(name, line + 1, col + 1, orig_lines[line]), message)
        conds: list[_Cond] = []
        i = 0
        while i < len(code_lines):
            line_no = i + 1
            code_line = code_lines[i]
            match = _DIRECTIVE.match(code_line)
            if match is None:
                if not conds or conds[-1].taking:
                    self._emit_code(name, line_no, orig_lines[i], code_line)
                i += 1
                continue
            # A directive, with backslash-newline continuations joined.
            directive = code_line
            while directive.endswith("\\") and i + 1 < len(code_lines):
                i += 1
                directive = directive[:-1] + " " + code_lines[i]
            loc = SourceLocation(name, line_no, match.start(1) + 1 if match.group(1) else 1, orig_lines[line_no - 1])
            self._directive(match.group(1), directive[match.end():], loc, conds, base, depth)
            i += 1
        for cond in conds:
            self._error(cond.loc, "unterminated conditional directive")

    def _emit_code(self, name: str, line_no: int, orig: str, code: str) -> None:
        loc = SourceLocation(name, line_no, 1, orig)
        if self.macros and _IDENT.search(code):
            expanded, segments = self._expand_line(code, loc)
        else:
            expanded, segments = code, ()
        self.out.lines.append(expanded)
        self.out.origins.append(LineOrigin(name, line_no, orig, segments))

    # -- directives ---------------------------------------------------------

    def _directive(self, kind: str, rest: str, loc: SourceLocation, conds: list[_Cond], base: Path,
                   depth: int) -> None:
        active = not conds or conds[-1].taking
        if kind in ("if", "ifdef", "ifndef"):
            if not active:
                conds.append(_Cond(loc, False, False, True))
                return
            if kind == "if":
                value = self._eval_condition(rest, loc)
            else:
                ident = _IDENT.match(rest.strip())
                if ident is None:
                    self._error(loc, f"macro name missing after #{kind}")
                    value = False
                else:
                    value = (ident.group(0) in self.macros) == (kind == "ifdef")
            conds.append(_Cond(loc, True, value, value))
            return
        if kind in ("elif", "else", "endif"):
            if not conds:
                self._error(loc, f"#{kind} without #if")
                return
            cond = conds[-1]
            if kind == "endif":
                conds.pop()
            elif cond.seen_else:
                self._error(loc, f"#{kind} after #else")
            elif kind == "else":
                cond.seen_else = True
                cond.taking = cond.parent_active and not cond.taken
                cond.taken = True
            else:
                if cond.parent_active and not cond.taken:
                    cond.taking = self._eval_condition(rest, loc)
                    cond.taken = cond.taking
                else:
                    cond.taking = False
            return
        if not active:
            return  # cpp ignores every other directive in a skipped group
        if kind == "include":
            self._include(rest.strip(), loc, base, depth)
        elif kind == "define":
            self._define(rest, loc)
        elif kind == "undef":
            ident = _IDENT.match(rest.strip())
            if ident is None:
                self._error(loc, "macro name missing after #undef")
            else:
                self.macros.pop(ident.group(0), None)
        elif kind == "error":
            self._error(loc, f"#error {rest.strip()}".rstrip())
        elif kind == "warning":
            self.warnings.append(Diagnostic(loc, f"#warning {rest.strip()}".rstrip(), "warning"))
        elif kind == "pragma":
            if rest.split() == ["once"]:
                self.once.add(str(Path(loc.file).resolve()))
        elif kind in ("line", ""):
            pass  # line markers do not change our source map; '#' alone is a null directive
        else:
            self._error(loc, f"unknown preprocessing directive '#{kind}'")

    def _include(self, spec: str, loc: SourceLocation, base: Path, depth: int) -> None:
        if len(spec) >= 2 and spec[0] == '"' and spec.endswith('"'):
            target, dirs = spec[1:-1], (base, *self.include_dirs, BUILTIN_INCLUDE_DIR)
        elif len(spec) >= 2 and spec[0] == "<" and spec.endswith(">"):
            target, dirs = spec[1:-1], (*self.include_dirs, BUILTIN_INCLUDE_DIR)
        else:
            self._error(loc, "#include expects \"FILENAME\" or <FILENAME> (computed includes are not supported)",
                        unsupported=bool(spec) and _IDENT.match(spec) is not None)
            return
        for directory in dirs:
            candidate = directory / target
            if candidate.is_file():
                break
        else:
            self._error(loc, f"'{target}' file not found")
            return
        resolved = str(candidate.resolve())
        if resolved in self.once:
            return
        if depth >= MAX_INCLUDE_DEPTH:
            self._error(loc, f"#include nested too deeply (more than {MAX_INCLUDE_DEPTH} levels)")
            return
        try:
            text = candidate.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            self._error(loc, f"cannot read '{target}': {exc.strerror}")
            return
        shown = os.path.relpath(candidate)
        if shown.startswith(".."):
            shown = str(candidate.resolve())
        self._file(shown, text, candidate.resolve().parent, depth + 1)

    def _define(self, rest: str, loc: SourceLocation) -> None:
        stripped = rest.lstrip()
        ident = _IDENT.match(stripped)
        if ident is None:
            self._error(loc, "macro name missing after #define")
            return
        name = ident.group(0)
        after = stripped[ident.end():]
        params: tuple[str, ...] | None = None
        if after.startswith("("):
            close = after.find(")")
            if close < 0:
                self._error(loc, f"missing ')' in parameter list of macro '{name}'")
                return
            params = tuple(p.strip() for p in after[1:close].split(",") if p.strip())
            if any(_IDENT.fullmatch(p) is None for p in params):
                self._error(loc, f"variadic or malformed parameters of macro '{name}' are not supported",
                            unsupported=True)
                return
            after = after[close + 1:]
        body = after.strip()
        if params is not None and "#" in _mask_strings(body):
            self._error(loc, f"'#' and '##' in macro '{name}' are not supported", unsupported=True)
            return
        self.macros[name] = _Macro(name, body, params)

    # -- macro expansion ----------------------------------------------------

    def _expand_line(self, code: str, loc: SourceLocation) -> tuple[str, tuple[tuple[int, int, bool], ...]]:
        out: list[str] = []
        segments: list[tuple[int, int, bool]] = []
        out_len = 0
        pos = 0
        changed = False
        for match in _PP_TOKEN.finditer(code):
            word = match.group(0)
            macro = self.macros.get(word)
            if macro is None or match.start() < pos:
                continue  # not a macro, or inside the arguments of a call already expanded
            end = match.end()
            if macro.params is None:
                replacement = self._expand_text(macro.body, frozenset((word,)), loc)
            else:
                call = self._call_args(code, end)
                if call is None:
                    continue  # a function-like macro name without '(' is not a call
                args, end = call
                if args is _UNCLOSED:
                    self._error(loc, f"macro call '{word}(' must end on the same line (not supported)",
                                unsupported=True)
                    continue
                replacement = self._expand_text(self._apply(macro, args, loc), frozenset((word,)), loc)
            out.append(code[pos:match.start()])
            out_len += match.start() - pos
            segments.append((out_len, match.start(), False))
            out.append(replacement)
            out_len += len(replacement)
            segments.append((out_len, end, True))
            pos = end
            changed = True
        if not changed:
            return code, ()
        out.append(code[pos:])
        return "".join(out), tuple(segments)

    def _call_args(self, text: str, pos: int) -> tuple[object, int] | None:
        i = pos
        while i < len(text) and text[i] in " \t":
            i += 1
        if i >= len(text) or text[i] != "(":
            return None
        depth = 0
        args: list[str] = []
        start = i + 1
        j = i
        while j < len(text):
            c = text[j]
            if c == '"':
                k = j + 1
                while k < len(text) and text[k] != '"':
                    k += 2 if text[k] == "\\" else 1
                j = k + 1
                continue
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 0:
                    args.append(text[start:j].strip())
                    return (args if args != [""] else []), j + 1
            elif c == "," and depth == 1:
                args.append(text[start:j].strip())
                start = j + 1
            j += 1
        return _UNCLOSED, len(text)

    def _apply(self, macro: _Macro, args: list[str], loc: SourceLocation) -> str:
        assert macro.params is not None
        if len(args) != len(macro.params):
            self._error(loc, f"macro '{macro.name}' takes {len(macro.params)} argument(s), {len(args)} given")
            return ""
        values = {p: self._expand_text(a, frozenset(), loc) for p, a in zip(macro.params, args)}
        return _PP_TOKEN.sub(lambda m: values.get(m.group(0), m.group(0)), macro.body)

    def _expand_text(self, text: str, disabled: frozenset[str], loc: SourceLocation, depth: int = 0) -> str:
        if depth > 200:
            self._error(loc, "macro expansion too deep")
            return text
        out: list[str] = []
        pos = 0
        for match in _PP_TOKEN.finditer(text):
            if match.start() < pos:
                continue
            word = match.group(0)
            macro = self.macros.get(word)
            if macro is None or word in disabled:
                continue
            end = match.end()
            if macro.params is None:
                replacement = self._expand_text(macro.body, disabled | {word}, loc, depth + 1)
            else:
                call = self._call_args(text, end)
                if call is None or call[0] is _UNCLOSED:
                    continue
                args, end = call
                replacement = self._expand_text(self._apply(macro, args, loc), disabled | {word}, loc, depth + 1)
            out.append(text[pos:match.start()])
            out.append(replacement)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    # -- #if expressions ----------------------------------------------------

    def _eval_condition(self, text: str, loc: SourceLocation) -> bool:
        def defined(match: re.Match[str]) -> str:
            return "1" if match.group(1) in self.macros else "0"

        text = re.sub(r"\bdefined\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)", defined, text)
        text = re.sub(r"\bdefined\s+([A-Za-z_][A-Za-z0-9_]*)", defined, text)
        text = self._expand_text(text, frozenset(), loc)
        try:
            return evaluate_condition(text) != 0
        except ConditionError as exc:
            self._error(loc, f"invalid #if expression: {exc}")
            return False


_UNCLOSED = object()


def _mask_strings(text: str) -> str:
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)

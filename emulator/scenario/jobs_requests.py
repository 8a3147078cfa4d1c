"""Inference requests from a trace file: :func:`read_request_trace`.

A serving job's ``arrivals`` names a file of requests, each an arrival
time, a prompt length and an output length in tokens, in one of the
formats public LLM-serving traces use:

- **CSV with a header**, either Azure's LLM inference traces (columns
  ``TIMESTAMP``, ``ContextTokens``, ``GeneratedTokens``; the timestamp a
  date and time such as ``2023-11-16 18:15:46.6805900``) or
  ``arrival_s,prompt,output`` (seconds, tokens, tokens);
- **JSON lines** as in Mooncake's traces: one object a line with
  ``timestamp`` (milliseconds), ``input_length`` and ``output_length``
  (other keys, such as ``hash_ids``, are ignored).

Arrivals are made relative to the first request's (sorted by time: traces
are not always in order), so a trace taken at any wall-clock date starts
the job at its ``start``. A problem names the file and the line, in one
line (:class:`RequestTraceError`).
"""

from __future__ import annotations

import csv
import json
from datetime import datetime
from pathlib import Path
from typing import Iterator

from emulator.scenario.jobs_serve import Request

AZURE_COLUMNS = ("TIMESTAMP", "ContextTokens", "GeneratedTokens")
PLAIN_COLUMNS = ("arrival_s", "prompt", "output")
MOONCAKE_KEYS = ("timestamp", "input_length", "output_length")
FORMATS = ("CSV with TIMESTAMP,ContextTokens,GeneratedTokens (Azure's LLM inference "
           "traces) or arrival_s,prompt,output, or JSON lines with timestamp (ms), "
           "input_length and output_length (Mooncake's)")


class RequestTraceError(ValueError):
    """A trace file that cannot be read, in one line naming the file and line."""


def read_request_trace(path: Path, limit: int | None = None) -> tuple[Request, ...]:
    """The requests of ``path`` (module docstring), the first ``limit`` in
    arrival order when given, arrivals in seconds from the first."""
    if not path.is_file():
        raise RequestTraceError(f"{path} does not exist: give a request trace ({FORMATS})")
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise RequestTraceError(f"{path}: cannot be read as text ({exc})") from None
    first = next((line for line in text.splitlines() if line.strip()), "")
    rows = list(_json_lines(path, text) if first.lstrip().startswith("{")
                else _csv_rows(path, text))
    if not rows:
        raise RequestTraceError(f"{path}: no requests in it ({FORMATS})")
    rows.sort(key=lambda row: row[0])
    if limit is not None:
        rows = rows[:limit]
    t0 = rows[0][0]
    return tuple(Request(round(at - t0, 9), prompt, output) for at, prompt, output in rows)


def _tokens(path: Path, number: int, name: str, raw: object) -> int:
    try:
        value = int(str(raw).strip())
    except ValueError:
        raise RequestTraceError(f"{path}:{number}: {name} {raw!r} is not a whole number of "
                                "tokens") from None
    if value < 1:
        raise RequestTraceError(f"{path}:{number}: {name} {value} must be at least 1 token")
    return value


def _seconds(path: Path, number: int, name: str, raw: object, scale: float = 1.0) -> float:
    try:
        value = float(str(raw).strip()) * scale
    except ValueError:
        raise RequestTraceError(f"{path}:{number}: {name} {raw!r} is not a number") from None
    if value < 0 or value != value or value == float("inf"):
        raise RequestTraceError(f"{path}:{number}: {name} {raw!r} must be a time >= 0")
    return value


def _azure_time(path: Path, number: int, raw: str) -> float:
    text = raw.strip()
    # Azure's traces carry 7 fractional digits; datetime reads at most 6.
    if "." in text:
        whole, frac = text.split(".", 1)
        text = f"{whole}.{frac[:6]}"
    try:
        return datetime.fromisoformat(text).timestamp()
    except ValueError:
        raise RequestTraceError(f"{path}:{number}: TIMESTAMP {raw!r} is not a date and time "
                                "such as 2023-11-16 18:15:46.6805900") from None


def _csv_rows(path: Path, text: str) -> Iterator[tuple[float, int, int]]:
    reader = csv.DictReader(text.splitlines())
    columns = tuple(name.strip() for name in reader.fieldnames or ())
    azure = all(c in columns for c in AZURE_COLUMNS)
    plain = all(c in columns for c in PLAIN_COLUMNS)
    if not azure and not plain:
        raise RequestTraceError(f"{path}:1: header {','.join(columns) or '(none)'} has neither "
                                f"{','.join(AZURE_COLUMNS)} nor {','.join(PLAIN_COLUMNS)}")
    for number, row in enumerate(reader, 2):
        row = {(k or "").strip(): v for k, v in row.items()}
        if all(not (v or "").strip() for v in row.values() if isinstance(v, str)):
            continue
        if any(row.get(c) is None for c in (AZURE_COLUMNS if azure else PLAIN_COLUMNS)):
            raise RequestTraceError(f"{path}:{number}: fewer fields than the header names")
        if azure:
            yield (_azure_time(path, number, row["TIMESTAMP"]),
                   _tokens(path, number, "ContextTokens", row["ContextTokens"]),
                   _tokens(path, number, "GeneratedTokens", row["GeneratedTokens"]))
        else:
            yield (_seconds(path, number, "arrival_s", row["arrival_s"]),
                   _tokens(path, number, "prompt", row["prompt"]),
                   _tokens(path, number, "output", row["output"]))


def _json_lines(path: Path, text: str) -> Iterator[tuple[float, int, int]]:
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RequestTraceError(f"{path}:{number}: not a JSON object ({exc.msg})") from None
        if not isinstance(item, dict) or any(k not in item for k in MOONCAKE_KEYS):
            raise RequestTraceError(f"{path}:{number}: a line needs "
                                    f"{', '.join(MOONCAKE_KEYS)}")
        yield (_seconds(path, number, "timestamp", item["timestamp"], 1e-3),
               _tokens(path, number, "input_length", item["input_length"]),
               _tokens(path, number, "output_length", item["output_length"]))

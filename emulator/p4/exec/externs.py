"""Run-time side of the v1model externs and the small helpers generated code
calls: registers, counters, meters, hash algorithms and checksums as BMv2's
simple_switch computes them, and P4 arithmetic edge cases.

Hash and checksum inputs are packed the way BMv2 packs a field list: fields
back to back, most significant bit first, the last byte padded with zero bits;
fields of invalid headers are left out.
"""

from __future__ import annotations

import random as _random
import struct
import zlib
from typing import Callable, Sequence

from emulator.p4.errors import ExecutionError

COLOR_GREEN, COLOR_YELLOW, COLOR_RED = 0, 1, 2


class ExitBlock(Exception):
    """Raised by ``exit``: ends the current top-level block."""


class ParserError(Exception):
    """A parser error; ``args[0]`` is the error's value (None: explicit reject)."""


def p4_div(a: int, b: int) -> int:
    return a // b if b else 0


def p4_mod(a: int, b: int) -> int:
    return a % b if b else 0


def shl(a: int, b: int, width: int) -> int:
    return a << b if b < width else 0


def pack_bits(parts: Sequence[tuple[int, int]]) -> bytes:
    """Pack (value, width) pairs MSB first; pad the tail with zero bits."""
    value = 0
    nbits = 0
    for v, w in parts:
        value = (value << w) | (v & ((1 << w) - 1))
        nbits += w
    pad = -nbits % 8
    return (value << pad).to_bytes((nbits + pad) // 8, "big")


# ---- hash algorithms (BMv2 calculations) --------------------------------------


def _reflect(value: int, nbits: int) -> int:
    out = 0
    for _ in range(nbits):
        out = (out << 1) | (value & 1)
        value >>= 1
    return out


class CrcSpec:
    """A CRC in the parametrised form BMv2 uses (polynomial, initial
    remainder, final xor, reflected data, reflected remainder)."""

    __slots__ = ("width", "poly", "init", "xor_out", "refin", "refout", "_table", "_memo")

    def __init__(self, width: int, poly: int, init: int, xor_out: int,
                 refin: bool, refout: bool) -> None:
        self.width, self.poly, self.init, self.xor_out = width, poly, init, xor_out
        self.refin, self.refout = refin, refout
        mask = (1 << width) - 1
        top = 1 << (width - 1)
        table = []
        for dividend in range(256):
            rem = dividend << (width - 8)
            for _ in range(8):
                rem = ((rem << 1) ^ poly) if rem & top else (rem << 1)
            table.append(rem & mask)
        self._table = tuple(table)
        # Answers by input (a CRC is a pure function of its bytes): an ECMP
        # hash sees the same 5-tuple for every packet of a flow. Bounded: it
        # starts over when full, which changes no answer.
        self._memo: dict[bytes, int] = {}

    def __call__(self, data: bytes) -> int:
        memo = self._memo
        value = memo.get(data)
        if value is None:
            if len(memo) >= CRC_MEMO_ENTRIES:
                memo.clear()
            value = memo[data] = self._compute(data)
        return value

    def _compute(self, data: bytes) -> int:
        width, table = self.width, self._table
        mask = (1 << width) - 1
        shift = width - 8
        rem = self.init
        if self.refin:
            rev = _BYTE_REFLECT
            for byte in data:
                rem = table[rev[byte] ^ (rem >> shift)] ^ ((rem << 8) & mask)
        else:
            for byte in data:
                rem = table[byte ^ (rem >> shift)] ^ ((rem << 8) & mask)
        if self.refout:
            rem = _reflect(rem, width)
        return rem ^ self.xor_out


CRC_MEMO_ENTRIES = 1 << 16  # inputs a CRC remembers (about 100 bytes each)
_BYTE_REFLECT = tuple(_reflect(b, 8) for b in range(256))
CRC16 = CrcSpec(16, 0x8005, 0x0000, 0x0000, True, True)
CRC32_CUSTOM_DEFAULT = CrcSpec(32, 0x04C11DB7, 0xFFFFFFFF, 0xFFFFFFFF, True, True)
CRC16_CUSTOM_DEFAULT = CrcSpec(16, 0x8005, 0x0000, 0x0000, True, True)


def crc16(data: bytes) -> int:
    return CRC16(data)


def crc32(data: bytes) -> int:
    return zlib.crc32(data)


def csum16(data: bytes) -> int:
    """Internet checksum (RFC 1071): one's complement of the one's-complement
    sum of 16-bit words, an odd tail byte padded with zero.

    The bytes read as one big-endian number are the words times powers of
    2**16, and 2**16 = 1 modulo 0xFFFF: so the number modulo 0xFFFF is the
    folded one's-complement sum, but that a non-zero sum which is a multiple
    of 0xFFFF folds to 0xFFFF (the one's-complement "negative zero")."""
    n = int.from_bytes(data, "big")
    if len(data) & 1:
        n <<= 8
    total = n % 0xFFFF
    if not total and n:
        total = 0xFFFF
    return (~total) & 0xFFFF



class Csum16Packed:
    """``csum16(Struct(fmt).pack(*values))`` as one call: the checksum of a
    field list packed inline (``fmt``: big-endian integer items). The
    compiled executor binds one in place of ``hash_csum16(pack_...(...))``
    and makes it one C function (:func:`.cython_module.c_pack`): the
    fields packed on the stack and summed there, no bytes object between."""

    __slots__ = ("format", "_pack")

    def __init__(self, fmt: str) -> None:
        self.format = fmt
        self._pack = struct.Struct(fmt).pack

    def __call__(self, *values: int) -> int:
        return csum16(self._pack(*values))


def xor16(data: bytes) -> int:
    value = 0
    for i in range(0, len(data), 2):
        chunk = data[i:i + 2]
        value ^= int.from_bytes(chunk.ljust(2, b"\x00"), "big")
    return value


def identity(data: bytes) -> int:
    return int.from_bytes(data[:8], "big")


HASHES: dict[str, Callable[[bytes], int]] = {
    "crc16": crc16,
    "crc32": crc32,
    "crc16_custom": CRC16_CUSTOM_DEFAULT,
    "crc32_custom": CRC32_CUSTOM_DEFAULT,
    "csum16": csum16,
    "identity": identity,
    "xor16": xor16,
}


def hash_with_offset(value: int, base: int, max_value: int) -> int:
    """v1model ``hash``: ``base + value % max`` (a max of 0 counts as 1)."""
    return base + value % (max_value or 1)


# ---- stateful externs --------------------------------------------------------


class Register:
    """``register<T>(size)``; reads out of range leave the destination as it
    was and writes out of range are ignored, as BMv2 does. ``values`` is
    changed in place, never replaced: generated code indexes it directly."""

    __slots__ = ("name", "width", "values", "signed")

    def __init__(self, name: str, size: int, width: int, signed: bool = False) -> None:
        self.name, self.width, self.signed = name, width, signed
        self.values = [0] * size

    def read(self, index: int, old: int) -> int:
        values = self.values
        return values[index] if index < len(values) else old

    def write(self, index: int, value: int) -> None:
        if index < len(self.values):
            self.values[index] = value

    def reset(self) -> None:
        # In place: generated code holds the list.
        self.values[:] = [0] * len(self.values)


class Counter:
    """``counter(size, type)``: packets and bytes per index (BMv2 counts the
    packet's ingress length in bytes). The lists are changed in place,
    never replaced: generated code indexes them directly."""

    __slots__ = ("name", "kind", "packets", "bytes")

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.kind = name, kind
        self.packets = [0] * size
        self.bytes = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if index < len(self.packets):
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def reset(self) -> None:
        # In place: generated code holds the lists.
        self.packets[:] = [0] * len(self.packets)
        self.bytes[:] = [0] * len(self.bytes)


class MeterCell:
    """One meter: token buckets as BMv2's ``Meter`` runs them. ``rates`` are
    (units per microsecond, burst) in control-plane order (committed, then
    peak); BMv2 stores them reversed and checks the peak bucket first: the
    first bucket short of tokens decides the colour (RED for peak, YELLOW for
    committed) and the buckets after it are left untouched."""

    __slots__ = ("rates", "tokens", "last_tokens")

    def __init__(self) -> None:
        self.rates: list[tuple[float, int]] = []
        self.tokens: list[int] = []
        self.last_tokens: list[int] = []

    def configure(self, rates: list[tuple[float, int]]) -> None:
        self.rates = list(rates)
        self.tokens = [burst for _, burst in rates]
        self.last_tokens = [0] * len(rates)

    def execute(self, amount: int, now_us: float) -> int:
        micros = int(now_us)  # BMv2 counts whole microseconds since the start
        for i in range(len(self.rates) - 1, -1, -1):
            rate_per_us, burst = self.rates[i]
            since_init = int(micros * rate_per_us)
            new = since_init - self.last_tokens[i]
            self.last_tokens[i] = since_init
            self.tokens[i] = min(self.tokens[i] + new, burst)
            if self.tokens[i] < amount:
                return i + 1
            self.tokens[i] -= amount
        return COLOR_GREEN


class Meter:
    """``meter(size, type)`` or one ``direct_meter`` cell per table entry."""

    __slots__ = ("name", "kind", "cells")

    def __init__(self, name: str, size: int, kind: str) -> None:
        self.name, self.kind = name, kind
        self.cells = [MeterCell() for _ in range(size)]

    def execute(self, index: int, ctx: "PacketContext", old: int = 0) -> int:
        if index >= len(self.cells):
            return old  # BMv2 leaves the destination as it was
        amount = 1 if self.kind == "packets" else ctx.length
        return self.cells[index].execute(amount, ctx.now_us)


class PacketContext:
    """Per-packet state the generated code writes besides headers and
    metadata: clone/resubmit/recirculate requests, digests, truncation, the
    checksum error, direct-meter colours and log messages.

    Every slot is written here (the pipeline reads most of them for every
    packet), but digests, logs and colours get their containers only on
    first use. ``owner`` is the one packet frame that may take this context
    on into egress (None: every frame copied from it gets its own there)."""

    __slots__ = ("length", "now_us", "rng", "clone", "resubmit", "recirculate",
                 "truncate", "digests", "checksum_error", "logs", "meter_color",
                 "payload", "sm", "length_reg", "owner", "nocache", "bumps")

    def __init__(self, length: int, now_us: float, rng: _random.Random) -> None:
        self.length = length
        # BMv2's packet-length register: the ingress length, changed by
        # setValid/setInvalid; egress reads it as standard_metadata.packet_length.
        self.length_reg = length
        self.now_us = now_us
        self.rng = rng
        self.clone: tuple[int, int, int] | None = None
        self.resubmit: int | None = None
        self.recirculate: int | None = None
        self.truncate: int | None = None
        self.digests: tuple | list[tuple[str, object]] = ()
        self.checksum_error = 0
        self.logs: tuple | list[str] = ()
        self.meter_color: dict[int, int] | None = None
        self.payload = b""
        self.sm: object = None
        self.owner: object = None
        # Set by generated code whose effect a cached ingress decision could
        # not replay; counter cells bumped (see .decisions).
        self.nocache = False
        self.bumps: list[object] = []

    def digest(self, name: str, value: object) -> None:
        if not self.digests:
            self.digests = []
        self.digests.append((name, value))  # type: ignore[union-attr]

    def log(self, line: str) -> None:
        if not self.logs:
            self.logs = []
        self.logs.append(line)  # type: ignore[union-attr]

    def set_color(self, meter_key: int, color: int) -> None:
        if self.meter_color is None:
            self.meter_color = {}
        self.meter_color[meter_key] = color

    def color(self, meter_key: int) -> int:
        """The colour a direct meter gave this packet (GREEN if it ran not)."""
        colors = self.meter_color
        return colors.get(meter_key, COLOR_GREEN) if colors is not None else COLOR_GREEN


def p4_assert(ok: bool, what: str) -> None:
    if not ok:
        raise ExecutionError(f"{what} failed")


# ---- parser and packet helpers ---------------------------------------------------


class Cursor:
    """The parser's position in the packet: ``buf`` the bytes, ``off`` the
    next byte to read, ``end`` the packet length in bytes."""

    __slots__ = ("buf", "off", "end")

    def __init__(self, buf: bytes) -> None:
        self.buf = buf
        self.off = 0
        self.end = len(buf)


def lookahead_bits(cur: Cursor, width: int) -> int:
    nbytes = (width + 7) // 8
    if cur.off + nbytes > cur.end:
        raise _parser_error(1)
    value = int.from_bytes(cur.buf[cur.off:cur.off + nbytes], "big")
    return value >> (nbytes * 8 - width)


def lookahead_header(cur: Cursor, cls: type) -> object:
    probe = Cursor(cur.buf)
    probe.off = cur.off
    header = cls()
    header._ext(probe)  # type: ignore[attr-defined]
    return header


def advance(cur: Cursor, nbits: int) -> None:
    if nbits % 8:  # BMv2's ParserOpAdvance
        raise _parser_error(ERR_PARSER_INVALID_ARGUMENT)
    end = cur.off + nbits // 8
    if end > cur.end:
        raise _parser_error(1)
    cur.off = end


def p4_verify(ok: bool, error: int) -> None:
    if not ok:
        raise _parser_error(error)


def mark_to_drop(sm: object) -> None:
    sm.egress_spec = 511  # type: ignore[attr-defined]
    sm.mcast_grp = 0  # type: ignore[attr-defined]


def format_log(msg: str, data: object) -> str:
    values = data if isinstance(data, tuple) else (data,)
    parts = msg.split("{}")
    out = parts[0]
    for i, rest in enumerate(parts[1:]):
        out += (str(values[i]) if i < len(values) else "{}") + rest
    return out


ERR_PARSER_INVALID_ARGUMENT = 6  # core.p4's error.ParserInvalidArgument


def _parser_error(code: int) -> Exception:
    return ParserError(code)

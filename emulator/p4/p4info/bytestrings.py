"""P4Runtime bytestrings (P4Runtime spec §8.4): the canonical encoding of
unsigned and signed values, and fixed-width packet metadata. Shared by the
switch's server and the controller."""

from __future__ import annotations


def encode_uint(value: int) -> bytes:
    """Canonical bytestring of an unsigned value (``b"\\x00"`` for 0)."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def encode_int(value: int) -> bytes:
    """Canonical two's-complement bytestring (sign bit included)."""
    bits = (value if value >= 0 else ~value).bit_length() + 1
    return value.to_bytes(max(1, (bits + 7) // 8), "big", signed=True)


def encode_fixed(value: int, width: int) -> bytes:
    """``value`` on exactly ``ceil(width / 8)`` bytes (packet metadata)."""
    return value.to_bytes((width + 7) // 8, "big")


__all__ = ["encode_fixed", "encode_int", "encode_uint"]

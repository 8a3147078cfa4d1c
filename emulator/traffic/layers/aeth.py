"""AETH syndrome values: ACK, RNR NAK and NAK (the layer itself is Scapy's).

The AETH is 4 bytes: syndrome (8) and MSN (24); ``scapy.contrib.roce.AETH``
already dissects it. The syndrome packs a 2-bit kind in bits 6..5 and a 5-bit
value in bits 4..0: the credit count of an ACK, the timer of an RNR NAK, the
error code of a NAK; bit 7 is reserved (IBA vol. 1, chapter 9, "AETH syndrome").
"""

from __future__ import annotations

from scapy.contrib.roce import AETH

__all__ = [
    "AETH",
    "CREDITS_INVALID",
    "KIND_ACK",
    "KIND_NAK",
    "KIND_RNR_NAK",
    "NAK_INVALID_RD_REQUEST",
    "NAK_INVALID_REQUEST",
    "NAK_PSN_SEQUENCE_ERROR",
    "NAK_REMOTE_ACCESS_ERROR",
    "NAK_REMOTE_OPERATIONAL_ERROR",
    "ack_syndrome",
    "nak_syndrome",
    "rnr_nak_syndrome",
    "syndrome_kind",
    "syndrome_value",
]

KIND_ACK = 0b00
KIND_RNR_NAK = 0b01
KIND_NAK = 0b11

# ACK credit count 0b11111: "invalid", i.e. the responder does not limit.
CREDITS_INVALID = 0x1F

NAK_PSN_SEQUENCE_ERROR = 0
NAK_INVALID_REQUEST = 1
NAK_REMOTE_ACCESS_ERROR = 2
NAK_REMOTE_OPERATIONAL_ERROR = 3
NAK_INVALID_RD_REQUEST = 4


def _syndrome(kind: int, value: int) -> int:
    if not 0 <= value <= 0x1F:
        raise ValueError(f"AETH syndrome value {value} does not fit 5 bits")
    return (kind << 5) | value


def ack_syndrome(credits: int = CREDITS_INVALID) -> int:
    """Syndrome of a positive ACK carrying ``credits`` (a 5-bit credit code)."""
    return _syndrome(KIND_ACK, credits)


def rnr_nak_syndrome(timer: int) -> int:
    """Syndrome of a receiver-not-ready NAK with a 5-bit RNR timer code."""
    return _syndrome(KIND_RNR_NAK, timer)


def nak_syndrome(code: int) -> int:
    """Syndrome of a NAK; ``code`` is one of the ``NAK_*`` constants."""
    return _syndrome(KIND_NAK, code)


def syndrome_kind(syndrome: int) -> int:
    """``KIND_ACK``, ``KIND_RNR_NAK`` or ``KIND_NAK`` (0b10 is reserved)."""
    return (syndrome >> 5) & 0b11


def syndrome_value(syndrome: int) -> int:
    """The credit count, RNR timer or NAK code in the low five bits."""
    return syndrome & 0x1F

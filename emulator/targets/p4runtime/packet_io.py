"""Packet I/O framing through ``@controller_header`` headers (P4Runtime
spec §16.1, P4Info ``ControllerPacketMetadata``).

A packet-out becomes the frame the pipeline receives on the CPU port: the
"packet_out" header (its metadata fields in P4Info order, each ``bitwidth``
bits, packed most significant bit first and padded with zero bits to a whole
byte, as PI packs it) followed by the payload. A frame the pipeline sends to
the CPU port starts with the "packet_in" header; it is split off and its
fields returned as metadata by id, canonical bytestrings. Without a header in
the P4Info the payload is the frame.
"""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from emulator.p4.exec.externs import pack_bits
from emulator.targets.p4runtime.codec import decode_uint, encode_uint
from emulator.targets.p4runtime.errors import invalid_argument

Header = p4info_pb2.ControllerPacketMetadata


def header_bytes(header: Header) -> int:
    return (sum(m.bitwidth for m in header.metadata) + 7) // 8


def packet_out_frame(header: Header | None, packet: p4runtime_pb2.PacketOut) -> bytes:
    """The frame to inject on the CPU port; INVALID_ARGUMENT if the metadata
    does not match the P4Info (unknown, repeated or missing ids, values that
    do not fit)."""
    if header is None:
        if packet.metadata:
            raise invalid_argument("PacketOut: metadata given but the P4Info has no "
                                   "packet_out controller header")
        return packet.payload
    fields = {m.id: m for m in header.metadata}
    values: dict[int, int] = {}
    for md in packet.metadata:
        info = fields.get(md.metadata_id)
        if info is None:
            raise invalid_argument(f"PacketOut: unknown metadata id {md.metadata_id}")
        if md.metadata_id in values:
            raise invalid_argument(f"PacketOut: metadata {info.name} given twice")
        values[md.metadata_id] = decode_uint(md.value, info.bitwidth,
                                             f"PacketOut: metadata {info.name}")
    missing = [m.name for m in header.metadata if m.id not in values]
    if missing:
        raise invalid_argument(f"PacketOut: missing metadata {', '.join(missing)}")
    packed = pack_bits([(values[m.id], m.bitwidth) for m in header.metadata])
    return packed + packet.payload


def packet_in_message(header: Header | None, frame: bytes) -> p4runtime_pb2.PacketIn | None:
    """The PacketIn of a frame sent to the CPU port; None if the frame is
    shorter than the packet_in header."""
    if header is None:
        return p4runtime_pb2.PacketIn(payload=frame)
    nbytes = header_bytes(header)
    if len(frame) < nbytes:
        return None
    total = sum(m.bitwidth for m in header.metadata)
    bits = int.from_bytes(frame[:nbytes], "big") >> (nbytes * 8 - total)
    values = []
    for m in reversed(header.metadata):
        values.append((m.id, bits & ((1 << m.bitwidth) - 1)))
        bits >>= m.bitwidth
    message = p4runtime_pb2.PacketIn(payload=frame[nbytes:])
    for mid, value in reversed(values):
        message.metadata.add(metadata_id=mid, value=encode_uint(value))
    return message

"""Values on the wire: P4Runtime bytestrings and ``P4Data``.

Bytestrings (P4Runtime spec §8.4): big-endian; the server accepts the
canonical form (shortest string) and padded legacy forms (extra leading zero
bytes, or sign-extension bytes for ``int<W>``), checks the value fits the
P4Info bitwidth, rejects the empty string, and always answers with the
canonical form. The error code is a parameter: the table-entry sections of
the spec ask for ``INVALID_ARGUMENT`` (as PI does), the general rule is
``OUT_OF_RANGE``.

``P4Data`` (spec §8.5) is built from a ``P4DataTypeSpec`` and the
``P4TypeInfo`` of the P4Info, for register cells and digest messages.
Aggregate values come from the executor: generated struct/header objects
(fields as attributes named by :func:`~emulator.p4.exec.layout.py_ident`,
header validity in ``_v``) or tuples in declaration order.
"""

from __future__ import annotations

from google.rpc import code_pb2
from p4.config.v1 import p4types_pb2
from p4.v1 import p4data_pb2

from emulator.p4.exec.layout import py_ident
from emulator.p4.p4info.bytestrings import encode_int, encode_uint
from emulator.targets.p4runtime.errors import P4RuntimeError, unimplemented


def decode_uint(data: bytes, width: int, what: str,
                code: int = code_pb2.INVALID_ARGUMENT) -> int:
    """An unsigned value that must fit ``width`` bits."""
    if not data:
        raise P4RuntimeError(code, f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> width:
        raise P4RuntimeError(code, f"{what}: value 0x{data.hex()} does not fit in {width} bits")
    return value


def decode_int(data: bytes, width: int, what: str,
               code: int = code_pb2.INVALID_ARGUMENT) -> int:
    """A two's-complement value that must fit ``int<width>``."""
    if not data:
        raise P4RuntimeError(code, f"{what}: empty bytestring")
    value = int.from_bytes(data, "big", signed=True)
    if not -(1 << (width - 1)) <= value < (1 << (width - 1)):
        raise P4RuntimeError(code, f"{what}: value 0x{data.hex()} does not fit in int<{width}>")
    return value


# ---- P4Data --------------------------------------------------------------------


def _resolve(spec: p4types_pb2.P4DataTypeSpec,
             types: p4types_pb2.P4TypeInfo) -> p4types_pb2.P4DataTypeSpec:
    """Follow ``new_type`` references to the underlying type spec."""
    for _ in range(16):
        if spec.WhichOneof("type_spec") != "new_type":
            return spec
        new_type = types.new_types.get(spec.new_type.name)
        if new_type is None or not new_type.HasField("original_type"):
            raise unimplemented(f"type {spec.new_type.name}: translated types")
        spec = new_type.original_type
    raise unimplemented("type: new_type chain too deep")


def bitstring_width(spec: p4types_pb2.P4DataTypeSpec,
                    types: p4types_pb2.P4TypeInfo) -> tuple[int, bool] | None:
    """(width, signed) of a bit/int type spec, None for any other type."""
    spec = _resolve(spec, types)
    if spec.WhichOneof("type_spec") != "bitstring":
        return None
    kind = spec.bitstring.WhichOneof("type_spec")
    if kind == "bit":
        return spec.bitstring.bit.bitwidth, False
    if kind == "int":
        return spec.bitstring.int.bitwidth, True
    return None


def decode_bitstring_data(data: p4data_pb2.P4Data, spec: p4types_pb2.P4DataTypeSpec,
                          types: p4types_pb2.P4TypeInfo, what: str) -> int:
    """An int from a ``P4Data`` holding a bit/int value of type ``spec``."""
    shape = bitstring_width(spec, types)
    if shape is None:
        raise unimplemented(f"{what}: only bit<W> and int<W> data are supported")
    if data.WhichOneof("data") != "bitstring":
        raise P4RuntimeError(code_pb2.INVALID_ARGUMENT, f"{what}: expected a bitstring P4Data")
    width, signed = shape
    decode = decode_int if signed else decode_uint
    return decode(data.bitstring, width, what, code_pb2.OUT_OF_RANGE)


def encode_p4data(value: object, spec: p4types_pb2.P4DataTypeSpec,
                  types: p4types_pb2.P4TypeInfo) -> p4data_pb2.P4Data:
    """``P4Data`` of an executor value of P4 type ``spec``."""
    spec = _resolve(spec, types)
    kind = spec.WhichOneof("type_spec")
    out = p4data_pb2.P4Data()
    if kind == "bitstring":
        bits = spec.bitstring.WhichOneof("type_spec")
        number = int(value)  # type: ignore[call-overload]
        if bits == "int":
            out.bitstring = encode_int(_signed(number, spec.bitstring.int.bitwidth))
        elif bits == "varbit":
            out.varbit.bitstring = encode_uint(number)
            out.varbit.bitwidth = max(1, number.bit_length())
        else:
            out.bitstring = encode_uint(number)
    elif kind == "bool":
        out.bool = bool(value)
    elif kind == "tuple":
        for i, member in enumerate(spec.tuple.members):
            out.tuple.members.append(encode_p4data(_item(value, i, None), member, types))
    elif kind == "struct":
        struct = types.structs.get(spec.struct.name)
        if struct is None:
            raise unimplemented(f"struct {spec.struct.name}: not in the P4Info type_info")
        for i, member in enumerate(struct.members):
            out.struct.members.append(
                encode_p4data(_item(value, i, member.name), member.type_spec, types))
    elif kind == "header":
        header = types.headers.get(spec.header.name)
        if header is None:
            raise unimplemented(f"header {spec.header.name}: not in the P4Info type_info")
        out.header.is_valid = bool(getattr(value, "_v", True))
        if out.header.is_valid:
            for i, member in enumerate(header.members):
                number = int(_item(value, i, member.name))  # type: ignore[call-overload]
                width = member.type_spec
                if width.WhichOneof("type_spec") == "int":
                    out.header.bitstrings.append(encode_int(_signed(number, width.int.bitwidth)))
                else:
                    out.header.bitstrings.append(encode_uint(number))
    elif kind == "serializable_enum":
        out.enum_value = encode_uint(int(value))  # type: ignore[call-overload]
    elif kind == "enum":
        enum = types.enums.get(spec.enum.name)
        index = int(value)  # type: ignore[call-overload]
        if enum is None or not 0 <= index < len(enum.members):
            raise unimplemented(f"enum {spec.enum.name}: value {index} not in the P4Info")
        out.enum = enum.members[index].name
    elif kind == "error":
        index = int(value)  # type: ignore[call-overload]
        members = types.error.members
        out.error = members[index] if 0 <= index < len(members) else str(index)
    else:
        raise unimplemented(f"P4Data of kind {kind}")
    return out


def _signed(value: int, width: int) -> int:
    value &= (1 << width) - 1
    return value - (1 << width) if value >> (width - 1) else value


def _item(value: object, index: int, name: str | None) -> object:
    if isinstance(value, (tuple, list)):
        return value[index]
    if name is None:
        raise unimplemented("tuple data from a non-tuple value")
    return getattr(value, py_ident(name))

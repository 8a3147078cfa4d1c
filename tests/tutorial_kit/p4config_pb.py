"""``p4.tmp.P4DeviceConfig`` (PI's ``proto/p4/tmp/p4config.proto``) as a
protobuf class made at run time from its field numbers, so tests can speak
BMv2's wrapper without PI's Python package::

    reassign = 1 (bool), extras = 2 (Extras { map<string, string> kv = 1; }),
    device_data = 3 (bytes)
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_F = descriptor_pb2.FieldDescriptorProto


def _file() -> descriptor_pb2.FileDescriptorProto:
    proto = descriptor_pb2.FileDescriptorProto(name="aifabric_tests/p4config.proto",
                                               package="p4.tmp", syntax="proto3")
    config = proto.message_type.add(name="P4DeviceConfig")
    extras = config.nested_type.add(name="Extras")
    entry = extras.nested_type.add(name="KvEntry")
    entry.options.map_entry = True
    entry.field.add(name="key", number=1, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    entry.field.add(name="value", number=2, type=_F.TYPE_STRING, label=_F.LABEL_OPTIONAL)
    extras.field.add(name="kv", number=1, type=_F.TYPE_MESSAGE, label=_F.LABEL_REPEATED,
                     type_name=".p4.tmp.P4DeviceConfig.Extras.KvEntry")
    config.field.add(name="reassign", number=1, type=_F.TYPE_BOOL, label=_F.LABEL_OPTIONAL)
    config.field.add(name="extras", number=2, type=_F.TYPE_MESSAGE, label=_F.LABEL_OPTIONAL,
                     type_name=".p4.tmp.P4DeviceConfig.Extras")
    config.field.add(name="device_data", number=3, type=_F.TYPE_BYTES, label=_F.LABEL_OPTIONAL)
    return proto


def _message_class():  # type: ignore[no-untyped-def]
    # A pool of its own: the default pool may hold PI's real p4.tmp one.
    pool = descriptor_pool.DescriptorPool()
    pool.Add(_file())
    return message_factory.MessageFactory(pool).GetPrototype(
        pool.FindMessageTypeByName("p4.tmp.P4DeviceConfig"))


P4DeviceConfig = _message_class()


def wrap(device_data: bytes, reassign: bool = True) -> bytes:
    """What the tutorials' ``buildDeviceConfig`` sends: ``reassign`` set and
    the device config (their "BMv2 JSON") as ``device_data``."""
    return P4DeviceConfig(reassign=reassign, device_data=device_data).SerializeToString()

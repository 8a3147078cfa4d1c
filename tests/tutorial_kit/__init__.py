"""What the tests need to act like a user of the p4lang tutorials, written
for aifabric: the ``p4.tmp.P4DeviceConfig`` message built from its field
numbers (:mod:`.p4config_pb`), a controller connection in the style of the
tutorials' ``p4runtime_lib`` (:mod:`.controller`), a PTF test module
(``ptf/``) and an exercise directory in the tutorials' layout
(``exercise/``)."""

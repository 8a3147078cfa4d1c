"""SetForwardingPipelineConfig with the device config as BMv2's controllers
send it (inside a p4.tmp.P4DeviceConfig) and bare, through the real device
loader; configs that are neither are refused in one line saying what came."""

import json
from pathlib import Path

import grpc
import pytest
from p4.v1 import p4runtime_pb2

from emulator.p4.device import build_pipeline, make_device_config
from emulator.p4.p4info.from_ir import p4info_for
from tests.tutorial_kit.p4config_pb import wrap
from tests.unit.data.p4runtime.harness import SetConfig, Switch

PROGRAM = Path(__file__).parent / "p4" / "programs" / "basic_forwarding.p4"
GetConfig = p4runtime_pb2.GetForwardingPipelineConfigRequest


@pytest.fixture(scope="module")
def compiled():
    device_config, program = make_device_config(PROGRAM)
    return device_config, p4info_for(program)


@pytest.fixture
def switch():
    sw = Switch(device_id=0, loader=lambda p4info, data: build_pipeline(data))
    assert sw.stream().arbitrate(0, (0, 1)).status.code == 0
    yield sw
    sw.stop()


def push(sw: Switch, device_config: bytes, info) -> None:  # type: ignore[no-untyped-def]
    sw.set_config(device_config=device_config, info=info, action=SetConfig.VERIFY_AND_COMMIT)


@pytest.mark.parametrize("wrapped", [True, False])
def test_wrapped_and_bare_configs_both_load(switch, compiled, wrapped):
    device_config, info = compiled
    sent = wrap(device_config) if wrapped else device_config
    push(switch, sent, info)
    assert switch.device.pipeline is not None
    assert "MyIngress.ipv4_lpm" in switch.device.pipeline.tables
    got = switch.stub.GetForwardingPipelineConfig(GetConfig(device_id=0)).config
    assert got.p4_device_config == sent  # read back as written


@pytest.mark.parametrize("data, got", [
    (b"\x7fELF\x02\x01\x01\x00", "got 8 bytes, neither JSON nor a p4.tmp.P4DeviceConfig"),
    (wrap(b"\x00\x01\x02"), "got a p4.tmp.P4DeviceConfig whose device_data is 3 bytes, not JSON"),
    (wrap(json.dumps({"__meta__": {"version": [2, 23]}, "pipelines": []}).encode()),
     "is a BMv2 JSON (p4c's output)"),
    (b"", "got an empty device config"),
])
def test_neither_ours_nor_wrapped_is_one_line_saying_what_came(switch, compiled, data, got):
    with pytest.raises(grpc.RpcError) as err:
        push(switch, data, compiled[1])
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    message = err.value.details()
    assert got in message and "\n" not in message
    assert message.startswith("cannot load the device config")


def test_a_table_without_default_action_has_its_implicit_noaction(switch, tmp_path):
    # p4c lists the implicit NoAction() default as a @defaultonly action of
    # the table, in the P4Info as in the device; the two must bind.
    source = PROGRAM.read_text()
    trimmed = source.replace("default_action = drop();", "").replace("drop;\n            NoAction;",
                                                                       "drop;")
    assert "NoAction" not in trimmed and "default_action" not in trimmed
    program_path = tmp_path / "no_default.p4"
    program_path.write_text(trimmed)
    device_config, program = make_device_config(program_path)
    push(switch, wrap(device_config), p4info_for(program))
    table = switch.device.pipeline.tables["MyIngress.ipv4_lpm"]
    assert table.actions["NoAction"].scope == "default_only"
    assert table.default.action.name == "NoAction"

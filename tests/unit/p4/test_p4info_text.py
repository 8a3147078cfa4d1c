"""Writing and reading P4Info as text protobuf (.p4info.txtpb), binary, JSON."""

from __future__ import annotations

from emulator.p4.p4info import (
    Action,
    ActionRef,
    DefaultAction,
    MatchField,
    P4InfoModel,
    Param,
    Table,
    build_p4info,
    from_text,
    no_action,
    read_text,
    to_text,
    write_text,
)
from emulator.p4.p4info import text as p4text


def _model() -> P4InfoModel:
    return P4InfoModel(
        tables=[Table(name="MyIngress.ipv4_lpm",
                      key=[MatchField(name="hdr.ipv4.dstAddr", bitwidth=32, match_kind="lpm")],
                      actions=[ActionRef(name="MyIngress.ipv4_forward"),
                               ActionRef(name="NoAction")],
                      default_action=DefaultAction("MyIngress.ipv4_forward", [10, 0]))],
        actions=[no_action(), Action(name="MyIngress.ipv4_forward", params=[
            Param(name="dstAddr", bitwidth=32), Param(name="port", bitwidth=32)])],
    )


def test_header_and_body_like_p4c():
    text = to_text(build_p4info(_model()))
    assert text.startswith(
        "# proto-file: p4/config/v1/p4info.proto\n"
        "# proto-message: p4.config.v1.P4Info\n"
        "\n"
        "pkg_info {\n"
        '  arch: "v1model"\n'
        "}\n"
        "tables {\n")
    # bytes are escaped the way C++ TextFormat escapes them (p4c facts)
    assert 'value: "\\000\\000\\000\\n"' in text
    assert 'annotations: "@noWarn(\\"unused\\")"' in text
    assert "match_type: LPM\n" in text
    assert to_text(build_p4info(_model()), header=False).startswith("pkg_info {\n")


def test_round_trip(tmp_path):
    p4info = build_p4info(_model())
    path = tmp_path / "x.p4info.txtpb"
    write_text(p4info, path)
    assert read_text(path) == p4info
    assert from_text(path.read_text()) == p4info
    assert p4text.read_any(path) == p4info
    assert p4text.from_binary(p4text.to_binary(p4info)) == p4info
    assert p4text.from_json(p4text.to_json(p4info)) == p4info
    jpath = tmp_path / "x.p4info.json"
    jpath.write_text(p4text.to_json(p4info))
    assert p4text.read_any(jpath) == p4info


def test_non_ascii_names_are_octal_escaped():
    # p4c testdata: "ingress.tables.prefix\342\227\225..." for a UTF-8 name
    model = P4InfoModel(tables=[Table(name="ingress.tables.prefix\u25d5",
                                      actions=[ActionRef(name="a")],
                                      default_action=DefaultAction("a"))],
                        actions=[Action(name="a")])
    text = to_text(build_p4info(model))
    assert 'name: "ingress.tables.prefix\\342\\227\\225"' in text
    assert from_text(text).tables[0].preamble.name == "ingress.tables.prefix\u25d5"

"""``aifabric-agent``: exit statuses and messages before any packet moves."""

from __future__ import annotations

import json

from emulator.traffic.agent.cli import main
from tests.unit.test_agent_support import host_config


def test_a_bad_config_exits_2_and_says_where(tmp_path, capsys):
    path = tmp_path / "agent.json"
    raw = host_config("a")
    raw["qps"][0]["priority"] = 9
    path.write_text(json.dumps(raw))
    assert main(["--config", str(path)]) == 2
    assert "qps[0].priority = 9" in capsys.readouterr().err
    assert main(["--config", str(tmp_path / "missing.json")]) == 2


def test_a_negative_duration_exits_2(tmp_path, capsys):
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(host_config("a")))
    assert main(["--config", str(path), "--duration", "-1"]) == 2
    assert "--duration" in capsys.readouterr().err


def test_a_missing_interface_exits_1_without_stats(tmp_path, capsys):
    raw = host_config("a", nic={"name": "afa-no-such0"})
    raw["qps"][0]["nic"] = "afa-no-such0"
    path = tmp_path / "agent.json"
    path.write_text(json.dumps(raw))
    stats = tmp_path / "stats.json"
    assert main(["--config", str(path), "--stats", str(stats)]) == 1
    assert "aifabric-agent:" in capsys.readouterr().err
    assert not stats.exists()          # nothing ran, nothing measured

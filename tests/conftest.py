"""Test selection by what a test needs.

``@pytest.mark.root``: root, network namespaces and veth pairs.
``@pytest.mark.bmv2``: p4c and BMv2 (``simple_switch_grpc``), as in the Vagrant VM.
Tests whose needs are not met are skipped with a one-line reason.
"""

from __future__ import annotations

import os
import shutil

import pytest

BMV2_TOOLS = ("p4c-bm2-ss", "simple_switch_grpc")


def _missing_bmv2_tools() -> list[str]:
    return [tool for tool in BMV2_TOOLS if shutil.which(tool) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    missing = _missing_bmv2_tools()
    skip_root = pytest.mark.skip(reason="needs root (network namespaces, veth)")
    skip_bmv2 = pytest.mark.skip(
        reason=f"needs p4c and BMv2: {', '.join(missing)} not installed (use the Vagrant VM)"
    )
    for item in items:
        if "root" in item.keywords and not is_root:
            item.add_marker(skip_root)
        if "bmv2" in item.keywords and missing:
            item.add_marker(skip_bmv2)

"""Test selection by what a test needs.

``@pytest.mark.root``: root, network namespaces and veth pairs.
``@pytest.mark.bmv2``: p4c and BMv2 (``simple_switch_grpc``), as in the Vagrant VM.
``@pytest.mark.browser``: Debian's chromium (:data:`CHROMIUM`) and playwright for
Python (never ``playwright install``: the tests drive the system browser).
Tests whose needs are not met are skipped with a one-line reason.
"""

from __future__ import annotations

import os
import shutil

import pytest

BMV2_TOOLS = ("p4c-bm2-ss", "simple_switch_grpc")
CHROMIUM = "/usr/bin/chromium"


def _browser_missing() -> str | None:
    if not os.path.exists(CHROMIUM):
        return f"needs chromium at {CHROMIUM} (apt-get install chromium, or make setup)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "needs playwright for Python (pip install -e '.[dev]')"
    return None


def _missing_bmv2_tools() -> list[str]:
    return [tool for tool in BMV2_TOOLS if shutil.which(tool) is None]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    is_root = os.geteuid() == 0
    missing = _missing_bmv2_tools()
    skip_root = pytest.mark.skip(reason="needs root (network namespaces, veth)")
    skip_bmv2 = pytest.mark.skip(
        reason=f"needs p4c and BMv2: {', '.join(missing)} not installed (use the Vagrant VM)"
    )
    browser = _browser_missing()
    skip_browser = pytest.mark.skip(reason=browser or "")
    for item in items:
        if "browser" in item.keywords and browser:
            item.add_marker(skip_browser)
        if "root" in item.keywords and not is_root:
            item.add_marker(skip_root)
        if "bmv2" in item.keywords and missing:
            item.add_marker(skip_bmv2)

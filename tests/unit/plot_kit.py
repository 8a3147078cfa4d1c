"""What the run-plot tests share: the PNG signature, a fixture that keeps
the figures a plot function draws open (it closes them through
``plt.close``), and readers of their texts and legends."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import pytest
from matplotlib.axes import Axes
from matplotlib.figure import Figure

PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def figures(monkeypatch: pytest.MonkeyPatch):
    """Figures drawn during the test, kept open."""
    kept: list[Any] = []
    monkeypatch.setattr(plt, "close", kept.append)
    yield kept
    monkeypatch.undo()
    for fig in kept:
        plt.close(fig)


def texts(drawn: Figure | Axes) -> str:
    """Every text written on one axes, or on all axes of a figure."""
    axes = [drawn] if isinstance(drawn, Axes) else drawn.axes
    return "\n".join(t.get_text() for ax in axes for t in ax.texts)


def legend(ax: Axes) -> list[str]:
    """An axes' legend entries, [] without a legend."""
    found = ax.get_legend()
    return [t.get_text() for t in found.get_texts()] if found else []

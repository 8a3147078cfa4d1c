"""The load a live run will offer its processes, as the time budget counts
it: peak frames per second at each switch and each NIC agent, and the peak
of their sums. :func:`emulator.scenario.load.offered_load` counts it from a
scenario; :mod:`.choose` turns it into a time scale.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Load:
    """Peak frames per second (see the module docstring)."""

    switch_pps: dict[str, float] = field(default_factory=dict)
    agent_pps: dict[str, float] = field(default_factory=dict)
    peak_switch_pps: float = 0.0   # Σ over switches, at the busiest moment
    peak_agent_pps: float = 0.0
    peak_at_s: float = 0.0
    frame_bytes: int = 0

    def scaled(self, k: float) -> "Load":
        """The same load ``k`` times slower."""
        return Load({n: v / k for n, v in self.switch_pps.items()},
                    {n: v / k for n, v in self.agent_pps.items()},
                    self.peak_switch_pps / k, self.peak_agent_pps / k, self.peak_at_s * k,
                    self.frame_bytes)

    def busiest(self) -> tuple[str, float]:
        """The busiest process (``switch NAME`` or ``agent SERVER``) and its peak."""
        rows = [(f"switch {n}", v) for n, v in self.switch_pps.items()]
        rows += [(f"agent {n}", v) for n, v in self.agent_pps.items()]
        return max(rows, key=lambda r: r[1], default=("none", 0.0))

    def to_dict(self) -> dict[str, Any]:
        name, pps = self.busiest()
        return {"busiest": name, "busiest_pps": round(pps, 1),
                "peak_switch_pps": round(self.peak_switch_pps, 1),
                "peak_agent_pps": round(self.peak_agent_pps, 1),
                "peak_at_s": round(self.peak_at_s, 6), "frame_bytes": self.frame_bytes,
                "switch_pps": {n: round(v, 1) for n, v in sorted(self.switch_pps.items())},
                "agent_pps": {n: round(v, 1) for n, v in sorted(self.agent_pps.items())}}

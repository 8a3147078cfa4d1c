"""Tests of live runs that must come out faithful: a run the VM's host
stalled (``fidelity.cpu_steal``: the hypervisor took CPU time from every
process at once) is not judged, with a one-line reason, since no time
scale and no code of ours can keep up through that. A run that did not
keep up for any other reason still fails its test."""

from __future__ import annotations

from typing import Any, Mapping

import pytest

from emulator.fidelity.verdict import host_stalled


def skip_if_the_host_stalled(results: Mapping[str, Any], what: str) -> None:
    fidelity = results.get("fidelity") or {}
    steal = fidelity.get("cpu_steal") or 0.0
    if fidelity.get("faithful") is False and host_stalled(fidelity):
        pytest.skip(f"{what} not judged: the VM's host took {100 * steal:.1f} % of the CPU "
                    f"during the run ({100 * (fidelity.get('cpu_steal_max') or 0):.0f} % of one "
                    f"interval; steal); {(fidelity.get('reasons') or ['?'])[0]}")

"""What a scenario asks of a running fabric, carried out the same way on
either clock through one interface, :class:`FabricActions`.

- **Per-port buffers** (``switches.overrides[].buffer``):
  :func:`apply_buffer_overrides` sets every port whose buffer differs from
  the scenario's default, once the fabric is programmed.
- **Timed events**: :func:`apply_event` carries out ``stop_flow`` (the
  :class:`~.feeder.Feeder` posts nothing more for the flow) and
  ``link_down``/``link_up`` (the clock takes the link down or up: a live
  run sets the switch-side interfaces down, the virtual clock cuts the link
  both ways and loses what is on it; neither re-routes, as a fabric before
  its routing converges) and returns the event's record for results.json.
- **PFC storms** (``pfc_storm_start``/``pfc_storm_stop``) are handed to the
  storming GPU's agent before the run starts, with their time
  (:func:`storm_request`): the agent's own timer starts and stops the
  pauses on time, whichever clock drives it.

The live runner (:mod:`.live`) and the sim runner (:mod:`.sim`) each
implement :class:`FabricActions` for their fabric; the records are the
same but for what each clock says it did (interfaces, link state).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from emulator.scenario.fabric import buffer_bytes
from emulator.scenario.spec import EventSpec, Scenario

if TYPE_CHECKING:
    from emulator.run.feeder import Feeder

STORM_EVENTS = ("pfc_storm_start", "pfc_storm_stop")
LINK_EVENTS = ("link_down", "link_up")


class FabricActions(Protocol):
    """What a clock does to its running fabric when the scenario asks."""

    def set_port_buffer(self, switch: str, port: int, buffer_bytes: int) -> None:
        """Give ``port`` of ``switch`` a buffer of ``buffer_bytes``."""

    def set_link_state(self, link: tuple[str, str], up: bool) -> dict[str, Any]:
        """Take ``link`` up or down now; what the event's record adds."""


def apply_buffer_overrides(scenario: Scenario, actions: FabricActions) -> None:
    """Every port whose buffer is not the scenario's default gets its own."""
    default = scenario.switches.buffer_bytes
    for switch in scenario.topology.switches:
        for port in switch.ports:
            size = buffer_bytes(scenario, switch.name, port.number)
            if size != default:
                actions.set_port_buffer(switch.name, port.number, size)


def apply_event(event: EventSpec, feeder: Feeder, actions: FabricActions,
                applied_at_s: float) -> dict[str, Any]:
    """Carry out a ``stop_flow`` or link event now; its record."""
    record: dict[str, Any] = {**event.to_dict(), "applied_at_s": applied_at_s}
    if event.kind == "stop_flow":
        assert event.flow is not None
        feeder.stop_flow(event.flow)
    elif event.kind in LINK_EVENTS:
        assert event.link is not None
        record.update(actions.set_link_state(event.link, event.kind == "link_up"))
    return record


def storm_request(scenario: Scenario, event: EventSpec,
                  at_unix: float) -> tuple[str, dict[str, Any]]:
    """(server, the agent's ``pfc_storm`` request) that carries out the storm
    ``event`` at ``at_unix`` (the agent's clock: Unix time live, simulated
    seconds on sim)."""
    assert event.gpu is not None
    gpu = scenario.topology.gpu(event.gpu)
    request: dict[str, Any] = {"action": "start" if event.kind == "pfc_storm_start" else "stop",
                               "nic": gpu.intf, "at_unix": at_unix}
    if event.kind == "pfc_storm_start":
        request.update(priorities=list(event.priorities), quanta=event.quanta)
    return gpu.server, request


def storm_record(event: EventSpec, request: dict[str, Any], answer: dict[str, Any],
                 scheduled_at_s: float) -> dict[str, Any]:
    """The record of a storm event handed to its agent ``scheduled_at_s``
    after the start."""
    return {**event.to_dict(), "applied_at_s": event.at_s, "nic": request["nic"],
            "scheduled_at_s": scheduled_at_s,
            **({"interval_us": answer["interval_us"]} if "interval_us" in answer else {})}

"""Client arbitration: primary and backups per (device, role) (P4Runtime
spec §5, §16.2).

A :class:`Controller` is one ``StreamChannel`` that has sent a
``MasterArbitrationUpdate``. Election ids are unique per role among live
controllers (a duplicate ends the new stream with ``INVALID_ARGUMENT``); an
unset election id never makes a controller primary. A controller leaves the
moment its stream ends (closed, cancelled or failed). Clients that close a
stream and at once open the next with the same election id (the p4lang
tutorials' PTF tests do, one connection per test) can be faster than the
server reads the old stream's end; so a duplicate waits up to
``duplicate_grace_s`` for the holder of its id to leave before it is refused.

Two ways to choose the primary, differing only when controllers leave:

- ``sticky=False`` (PI/BMv2): the live controller with the highest election
  id is primary; when the primary's stream closes, the next highest takes
  over and everyone is told.
- ``sticky=True`` (spec §5.3 to the letter): the server remembers the highest
  election id it has ever seen for the role; only a controller presenting an
  id at least that high is primary. When the primary leaves, the role has no
  primary (backups are told ``NOT_FOUND``) until one sends a high enough id.

Notifications (§5.4): every controller of the role hears about a change of
primary; a controller that stays or becomes a backup without changing the
primary hears alone. The primary gets ``OK``, backups ``ALREADY_EXISTS``
(``NOT_FOUND`` when there is no primary).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Callable

from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from emulator.targets.p4runtime.errors import (
    failed_precondition, invalid_argument, not_found, permission_denied,
    resource_exhausted,
)

MAX_CONTROLLERS_PER_ROLE = 16
DUPLICATE_GRACE_S = 1.0
Message = p4runtime_pb2.StreamMessageResponse


def election_id(message) -> int | None:  # type: ignore[no-untyped-def]
    """The 128-bit election id of a request, None when unset."""
    if not message.HasField("election_id"):
        return None
    return (message.election_id.high << 64) | message.election_id.low


@dataclass(eq=False)
class Controller:
    """One arbitrated stream; ``send`` queues a message on it."""

    send: Callable[[Message], None]
    device_id: int = 0
    role: str = ""
    election_id: int | None = None
    arbitrated: bool = False


@dataclass
class _Role:
    controllers: list[Controller] = field(default_factory=list)
    highest: int | None = None  # highest election id ever seen (sticky mode)


class Arbitration:
    """Arbitration state of one device."""

    def __init__(self, device_id: int, sticky: bool = False,
                 duplicate_grace_s: float = DUPLICATE_GRACE_S) -> None:
        self.device_id = device_id
        self.sticky = sticky
        self.duplicate_grace_s = duplicate_grace_s
        self._roles: dict[str, _Role] = {}
        self._lock = threading.Lock()
        self._left = threading.Condition(self._lock)  # notified when a controller leaves

    # ---- stream side ---------------------------------------------------------------
    def arbitrate(self, ctrl: Controller, update: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a ``MasterArbitrationUpdate`` from ``ctrl``; raises the
        P4RuntimeError that must end the stream."""
        role_name = update.role.name
        if update.role.HasField("config"):
            raise invalid_argument("role.config is not supported by this server")
        eid = election_id(update)
        with self._lock:
            if not ctrl.arbitrated:
                if update.device_id != self.device_id:
                    raise not_found(f"unknown device id {update.device_id}")
            else:
                if update.device_id != ctrl.device_id:
                    raise failed_precondition("device id differs from the stream's")
                if role_name != ctrl.role:
                    raise failed_precondition("role differs from the stream's; open a new stream")
            state = self._roles.setdefault(role_name, _Role())
            if eid is not None and not self._left.wait_for(
                    lambda: not any(c.election_id == eid for c in state.controllers
                                    if c is not ctrl),
                    timeout=self.duplicate_grace_s):
                raise invalid_argument("election id already used by another controller")
            if not ctrl.arbitrated and len(state.controllers) >= MAX_CONTROLLERS_PER_ROLE:
                raise resource_exhausted("too many controllers for this role")
            before = self._primary(state)
            ctrl.device_id, ctrl.role, ctrl.election_id = update.device_id, role_name, eid
            if not ctrl.arbitrated:
                state.controllers.append(ctrl)
                ctrl.arbitrated = True
            if eid is not None and (state.highest is None or eid >= state.highest):
                state.highest = eid
            after = self._primary(state)
            if after is ctrl or after is not before:
                self._notify_all(state)
            else:
                self._notify(state, ctrl)

    def remove(self, ctrl: Controller) -> None:
        """The stream of ``ctrl`` closed."""
        with self._lock:
            state = self._roles.get(ctrl.role)
            if state is None or ctrl not in state.controllers:
                return
            before = self._primary(state)
            state.controllers.remove(ctrl)
            self._left.notify_all()
            if before is ctrl:
                self._notify_all(state)

    # ---- unary RPC side ----------------------------------------------------------------
    def check_writer(self, device_id: int, role: str, eid: int | None) -> None:
        """Raise unless (device_id, role, eid) is the primary (spec §12:
        NOT_FOUND for an unknown device or role, PERMISSION_DENIED else).
        PI also accepts requests without an election id while no controller
        is connected; so does the non-sticky mode."""
        if device_id != self.device_id:
            raise not_found(f"unknown device id {device_id}")
        with self._lock:
            state = self._roles.get(role)
            if state is None:
                if role:
                    raise not_found(f"unknown role {role!r}")
                state = _Role()
            if not state.controllers and eid is None and not self.sticky:
                return
            primary = self._primary(state)
            if primary is None or eid is None or primary.election_id != eid:
                raise permission_denied("not the primary controller")

    def is_primary(self, ctrl: Controller) -> bool:
        with self._lock:
            state = self._roles.get(ctrl.role)
            return state is not None and self._primary(state) is ctrl

    def primaries(self) -> list[Controller]:
        with self._lock:
            found = (self._primary(state) for state in self._roles.values())
            return [c for c in found if c is not None]

    # ---- internals ----------------------------------------------------------------------
    def _primary(self, state: _Role) -> Controller | None:
        candidates = [c for c in state.controllers if c.election_id is not None]
        if not candidates:
            return None
        best = max(candidates, key=lambda c: c.election_id)  # type: ignore[arg-type, return-value]
        if self.sticky and best.election_id != state.highest:
            return None
        return best

    def _notify_all(self, state: _Role) -> None:
        for ctrl in state.controllers:
            self._notify(state, ctrl)

    def _notify(self, state: _Role, ctrl: Controller) -> None:
        primary = self._primary(state)
        message = Message()
        update = message.arbitration
        update.device_id = self.device_id
        if ctrl.role:
            update.role.name = ctrl.role
        shown = state.highest if self.sticky else (primary.election_id if primary else None)
        if shown is not None:
            update.election_id.high = shown >> 64
            update.election_id.low = shown & ((1 << 64) - 1)
        if primary is ctrl:
            update.status.code, update.status.message = code_pb2.OK, "Is primary"
        elif primary is not None:
            update.status.code, update.status.message = code_pb2.ALREADY_EXISTS, "Is backup"
        else:
            update.status.code, update.status.message = code_pb2.NOT_FOUND, "No primary"
        ctrl.send(message)



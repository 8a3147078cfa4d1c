"""The switch's buffer, as a data-centre switch's MMU keeps it: one pool
shared by every port, admission per ingress priority group for lossless
classes (PFC XOFF/XON and headroom) and per egress queue for lossy ones
(dynamic thresholds). The data plane calls it on every frame it queues and
every frame that leaves a queue; it owns the bytes, the data plane owns the
frames and sends the pause frames this decides. :class:`BufferSeries`
samples what it holds over time (with the queue series of :mod:`.tm`).

The model (after SONiC's buffer pools and profiles on a Broadcom-class MMU):

- **Pool.** ``pool_bytes`` per switch, made of the *shared* part and a
  *headroom* reserved per lossless (port, priority group):
  ``shared = pool - sum(headroom)``. ``pool_bytes`` 0 sizes it from the
  ports: :func:`auto_shared_bytes` (:data:`BUFFER_TIME_S` of each port's
  rate, at least :data:`MIN_PORT_SHARE_BYTES` and at least the port's
  static queue cap) plus the headrooms.
- **Accounting.** Every frame queued is charged to its ingress port's
  priority group (``standard_metadata.priority`` given by ingress) and to
  the pool, and released when it leaves its queue, whatever egress then
  does with it (sends, drops, truncates, recirculates, clones): the bytes a
  (port, group) holds are those of its frames still queued. Copies
  (replicas, clones, recirculated passes) are charged and released each.
- **Lossless groups** (``lossless_priorities`` of the ingress port): a
  frame goes into the shared pool while the group's shared bytes stay
  within its XOFF threshold (static ``xoff_bytes``, or dynamic ``xoff_alpha``
  × free shared bytes) and the pool has room; otherwise into the group's
  headroom, and the port sends XOFF upstream. A frame is dropped only when
  the headroom cannot take it (``headroom_overflow``). No egress limit
  applies to a lossless frame. XON goes out when the headroom is empty and
  the shared bytes fell to the threshold less ``xoff_bytes - xon_bytes``
  (static: to ``xon_bytes``); while XOFF is on it is refreshed every half
  pause time.
- **Lossy queues**: a frame joins egress queue (port, priority) while the
  queue's bytes after it stay within ``alpha[priority]`` × free shared
  bytes (dynamic threshold: one congested queue settles at
  alpha / (1 + alpha) of the shared pool), within the port's static cap
  ``buffer_bytes`` (0: none) and the pool; else it is tail-dropped.

Headroom (:func:`headroom_bytes`): what arrives after the frame that
crossed XOFF, on this emulator's MACs (a pause frame waits for the frame
being sent; the peer finishes the frame it is sending)::

    2 * rate * delay / 8  +  3 * (max frame + overhead)  +  (64 + overhead)
                          +  rate * response / 8

(cable round trip; the crossing frame, the one our port is sending when the
XOFF is ready and the one the peer is sending when it lands; the pause frame
itself; the peer's response time). SONiC's dynamic headroom is the same
shape (2 × cable bytes + two MTUs + the peer's response, 802.3 Annex 31B
quanta); HPCC's ns-3 switch reserves 3 × rate × delay.
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, Iterable, Mapping

NUM_PRIORITIES = 8
# SONiC's default egress_lossy_profile, dynamic_th 3: alpha = 2**3.
DEFAULT_LOSSY_ALPHA = 8.0
# 64 MB for 12.8 Tb/s (Broadcom Tomahawk 3), about 5 MB per Tb/s: 40 us of
# every port at its rate (32 x 400G ports: 64 MB; k=8 fat-tree switch of
# 8 x 100G: 4 MB).
BUFFER_TIME_S = 40e-6
# An emulated port at Mb/s rates still gets about 64 full-size frames.
MIN_PORT_SHARE_BYTES = 96_000
PFC_FRAME_BYTES = 64
# Auto headroom's frame when nobody says the MTU (jumbo, SONiC's 9100 + L2).
DEFAULT_MAX_FRAME_BYTES = 9216
HEADROOM_OVERFLOW = "headroom_overflow"


def headroom_bytes(rate_bps: float, delay_s: float, frame_bytes: int,
                   overhead_bytes: int = 0, response_s: float = 0.0) -> int:
    """Headroom a lossless (port, priority group) needs (module docstring)."""
    return (math.ceil(2 * rate_bps * delay_s / 8) + 3 * (frame_bytes + overhead_bytes)
            + PFC_FRAME_BYTES + overhead_bytes + math.ceil(rate_bps * response_s / 8))


def auto_shared_bytes(ports: Iterable[tuple[float, int]]) -> int:
    """The shared pool a switch gets by default, from ``(rate_bps,
    static queue cap in bytes)`` of each of its ports."""
    return sum(max(math.ceil(rate * BUFFER_TIME_S / 8), MIN_PORT_SHARE_BYTES, cap)
               for rate, cap in ports)


def _per_priority(value: Any) -> list[Any]:
    """``value`` for each priority: a list (to Python), or the C array it
    fills (compiled, see mmu.pxd)."""
    return [value] * NUM_PRIORITIES


class PgAccount:
    """Ingress accounting of one port, per priority group, and its PFC
    state. ``lossless`` has bit n set when group n is lossless here."""

    __slots__ = ("port", "lossless", "shared", "headroom_used", "xoff", "xon_offset", "alpha",
                 "headroom", "quanta", "refresh_s", "xoff_on", "xoff_sent_at",
                 "max_bytes", "max_headroom", "drops", "xoff_frames", "xon_frames")

    def __init__(self, port: Any = None) -> None:
        self.port = port                        # the data plane's state of the port
        self.lossless = 0
        self.shared = _per_priority(0)          # bytes of the group's frames in the shared pool
        self.headroom_used = _per_priority(0)   # bytes of them in its headroom
        self.xoff = _per_priority(0)            # static XOFF threshold (bytes of shared)
        self.xon_offset = _per_priority(0)      # XON at threshold - offset
        self.alpha = _per_priority(0.0)         # > 0: dynamic XOFF at alpha x free shared bytes
        self.headroom = _per_priority(0)        # headroom reserved for the group
        self.quanta = 0xFFFF
        self.refresh_s = 0.0
        self.xoff_on = 0                        # bit n: XOFF sent for group n, no XON since
        self.xoff_sent_at = _per_priority(0.0)
        self.max_bytes = _per_priority(0)       # high-water mark of shared + headroom
        self.max_headroom = _per_priority(0)
        self.drops = _per_priority(0)           # headroom overflows
        self.xoff_frames = _per_priority(0)
        self.xon_frames = _per_priority(0)

    def held(self, priority: int) -> int:
        return self.shared[priority] + self.headroom_used[priority]

    def configure(self, lossless: frozenset[int], xoff_bytes: int, xon_bytes: int,
                  alpha: float, headroom: int, quanta: int, rate_bps: float) -> None:
        self.lossless = sum(1 << p for p in lossless)
        for p in range(NUM_PRIORITIES):
            on = p in lossless
            self.xoff[p] = xoff_bytes if on else 0
            self.xon_offset[p] = max(xoff_bytes - xon_bytes, 0) if on else 0
            self.alpha[p] = alpha if on else 0.0
            self.headroom[p] = headroom if on else 0
        self.quanta = quanta
        # Refresh the pause after half its time, as fabric.p4 did.
        self.refresh_s = quanta * 512 / (rate_bps or 100e9) / 2

    def reset_stats(self) -> None:
        for p in range(NUM_PRIORITIES):
            self.max_bytes[p] = self.held(p)
            self.max_headroom[p] = self.headroom_used[p]
            self.drops[p] = self.xoff_frames[p] = self.xon_frames[p] = 0

    def to_dict(self, priority: int) -> dict[str, Any]:
        return {"pg_bytes": self.held(priority), "pg_shared_bytes": self.shared[priority],
                "headroom_used_bytes": self.headroom_used[priority],
                "headroom_bytes": self.headroom[priority],
                "pg_max_bytes": self.max_bytes[priority],
                "headroom_max_bytes": self.max_headroom[priority],
                "lossless": bool(self.lossless >> priority & 1),
                "xoff_on": bool(self.xoff_on >> priority & 1),
                "headroom_overflow": self.drops[priority],
                "xoff_sent": self.xoff_frames[priority], "xon_sent": self.xon_frames[priority]}


class SwitchBuffer:
    """The pool of one switch: sizes, what is used, the lossy alphas, and
    admission/release of one frame (see the module docstring)."""

    __slots__ = ("pool_bytes", "alpha", "shared_bytes", "headroom_bytes", "used",
                 "headroom_in_use", "max_used", "max_headroom_in_use", "total_bytes")

    def __init__(self) -> None:
        self.pool_bytes = 0          # configured (0: auto)
        self.alpha = _per_priority(DEFAULT_LOSSY_ALPHA)
        self.shared_bytes = 0        # capacity of the shared part
        self.headroom_bytes = 0      # reserved for the lossless groups
        self.total_bytes = 0
        self.used = 0                # bytes in the shared part
        self.headroom_in_use = 0
        self.max_used = 0
        self.max_headroom_in_use = 0

    def configure(self, settings: Mapping[str, Any]) -> None:
        """``pool_bytes`` (0: auto) and ``alpha`` (one number, eight, or
        ``{priority: alpha}``); call :meth:`resize` after."""
        unknown = sorted(set(settings) - {"pool_bytes", "alpha"})
        if unknown:
            raise ValueError(f"unknown buffer setting(s) {', '.join(unknown)}; "
                             f"known: pool_bytes, alpha")
        if settings.get("pool_bytes") is not None:
            pool = settings["pool_bytes"]
            if isinstance(pool, bool) or not isinstance(pool, (int, float)) or pool < 0 \
                    or pool != int(pool):
                raise ValueError(f"pool_bytes: expected an integer >= 0, got {pool!r}")
            self.pool_bytes = int(pool)
        alpha = settings.get("alpha")
        if alpha is not None:
            self.alpha = _alphas(alpha, self.alpha)

    def resize(self, ports: Iterable[tuple[float, int, PgAccount]]) -> None:
        """Size the pool for ``(rate_bps, static queue cap, account)`` of
        every port."""
        rates, headroom = [], 0
        for rate, cap, acc in ports:
            rates.append((rate, cap))
            headroom += sum(acc.headroom)
        self.headroom_bytes = headroom
        if self.pool_bytes:
            if self.pool_bytes <= headroom:
                raise ValueError(f"pool_bytes {self.pool_bytes} does not exceed the headroom "
                                 f"the lossless ports reserve ({headroom} bytes)")
            self.shared_bytes = self.pool_bytes - headroom
        else:
            self.shared_bytes = auto_shared_bytes(rates)
        self.total_bytes = self.shared_bytes + headroom

    # ---- per frame ----------------------------------------------------------------------
    def admit_lossless(self, acc: PgAccount, prio: int, length: int) -> int:
        """Charge a lossless frame: 0 in the shared pool below XOFF, 1 in
        the shared pool or headroom at or above it (send XOFF), -1 dropped
        (headroom overflow, counted here)."""
        shared = acc.shared[prio]
        alpha = acc.alpha[prio]
        limit = alpha * (self.shared_bytes - self.used) if alpha else acc.xoff[prio]
        if shared + length <= limit and self.used + length <= self.shared_bytes:
            shared += length
            acc.shared[prio] = shared
            used = self.used = self.used + length
            if used > self.max_used:
                self.max_used = used
            held = shared + acc.headroom_used[prio]
            if held > acc.max_bytes[prio]:
                acc.max_bytes[prio] = held
            return 1 if shared >= limit else 0
        hr = acc.headroom_used[prio] + length
        if hr > acc.headroom[prio]:
            acc.drops[prio] += 1
            return -1
        acc.headroom_used[prio] = hr
        if hr > acc.max_headroom[prio]:
            acc.max_headroom[prio] = hr
        in_use = self.headroom_in_use = self.headroom_in_use + length
        if in_use > self.max_headroom_in_use:
            self.max_headroom_in_use = in_use
        held = shared + hr
        if held > acc.max_bytes[prio]:
            acc.max_bytes[prio] = held
        return 1

    def admit_lossy(self, depth_bytes: int, length: int, prio: int, cap_bytes: int) -> bool:
        """Whether a lossy frame may join a queue holding ``depth_bytes``."""
        free = self.shared_bytes - self.used
        after = depth_bytes + length
        return length <= free and after <= self.alpha[prio] * free \
            and (not cap_bytes or after <= cap_bytes)

    def charge(self, acc: PgAccount | None, prio: int, length: int) -> None:
        """Charge an admitted lossy frame to the pool (and its ingress group)."""
        used = self.used = self.used + length
        if used > self.max_used:
            self.max_used = used
        if acc is not None:
            held = acc.shared[prio] + length
            acc.shared[prio] = held
            if held > acc.max_bytes[prio]:
                acc.max_bytes[prio] = held

    def release(self, acc: PgAccount | None, prio: int, length: int) -> bool:
        """Release a frame leaving its queue; True when its lossless group
        should now send XON. Headroom empties first."""
        if acc is None:
            self.used -= length
            return False
        hr = acc.headroom_used[prio]
        if hr:
            take = hr if hr < length else length
            acc.headroom_used[prio] = hr - take
            self.headroom_in_use -= take
            length -= take
        if length:
            acc.shared[prio] -= length
            self.used -= length
        return bool(acc.xoff_on >> prio & 1) and self.xon_due(acc, prio)

    def xon_due(self, acc: PgAccount, prio: int) -> bool:
        """Whether a paused group has drained enough to resume its peer: no
        headroom in use and its shared bytes at the threshold less the XON
        offset, or nothing of it left (a dynamic threshold can fall below
        the offset; with no bytes of its own held, pausing the peer cannot
        help, and nothing would be released to resume it later)."""
        if acc.headroom_used[prio]:
            return False
        shared = acc.shared[prio]
        if not shared:
            return True
        alpha = acc.alpha[prio]
        limit = alpha * (self.shared_bytes - self.used) if alpha else acc.xoff[prio]
        return shared <= limit - acc.xon_offset[prio]

    def reset_stats(self) -> None:
        self.max_used = self.used
        self.max_headroom_in_use = self.headroom_in_use

    def to_dict(self) -> dict[str, Any]:
        return {"pool_bytes": self.total_bytes, "shared_bytes": self.shared_bytes,
                "headroom_bytes": self.headroom_bytes, "shared_used_bytes": self.used,
                "headroom_used_bytes": self.headroom_in_use,
                "shared_max_bytes": self.max_used,
                "headroom_max_bytes": self.max_headroom_in_use,
                "pool_configured_bytes": self.pool_bytes,
                "alpha": list(self.alpha)}


class BufferSeries:
    """The buffer's occupancy over time: the switch's shared pool and
    headroom in use, and the bytes each ingress (port, priority group)
    holds. :meth:`sample` (called with the queue series, every sample
    interval) reads what :class:`SwitchBuffer` and :class:`PgAccount` keep
    anyway: no per-frame cost.

    - ``pool``: ``(t, shared_used, headroom_used, shared_bytes,
      headroom_bytes)`` while anything is held, with the empty samples just
      before and after (so a line drawn from them rises from and falls to
      zero). The capacities ride along because ``SetBuffer`` can change them.
    - ``groups[(port, priority)]``: ``(t, bytes held, of them in headroom,
      xoff_on)`` while the group holds bytes or has XOFF on, with the empty
      samples just before and after.

    Samples older than ``window_s`` behind the newest are dropped."""

    __slots__ = ("window_s", "pool", "groups", "_pool_busy", "_active", "_last_t")

    def __init__(self, window_s: float) -> None:
        self.window_s = window_s
        self.pool: deque[tuple[float, int, int, int, int]] = deque()
        self.groups: dict[tuple[int, int], deque[tuple[float, int, int, bool]]] = {}
        self._pool_busy = False
        self._active: set[tuple[int, int]] = set()   # groups busy at the previous sample
        self._last_t: float | None = None              # time of the previous sample

    def sample(self, now: float, buffer: SwitchBuffer, ports: Mapping[int, Any]) -> None:
        horizon = now - self.window_s
        busy = bool(buffer.used or buffer.headroom_in_use)
        last_t = self._last_t
        self._last_t = now
        if busy or self._pool_busy:
            pool = self.pool
            if not self._pool_busy and last_t is not None:
                pool.append((last_t, 0, 0, buffer.shared_bytes, buffer.headroom_bytes))
            pool.append((now, buffer.used, buffer.headroom_in_use, buffer.shared_bytes,
                         buffer.headroom_bytes))
            while pool[0][0] < horizon:
                pool.popleft()
        self._pool_busy = busy
        previous = self._active
        active: set[tuple[int, int]] = set()
        groups = self.groups
        for number, ps in ports.items():
            acc = ps.pg
            if not (acc.xoff_on or any(acc.shared) or any(acc.headroom_used)):
                if not previous:
                    continue
                held_any = False
            else:
                held_any = True
            for prio in range(NUM_PRIORITIES):
                key = (number, prio)
                hr = acc.headroom_used[prio]
                held = acc.shared[prio] + hr
                xoff = bool(acc.xoff_on >> prio & 1)
                was_busy = key in previous
                if held_any and (held or xoff):
                    active.add(key)
                elif not was_busy:
                    continue
                ring = groups.get(key)
                if ring is None:
                    ring = groups[key] = deque()
                if not was_busy and last_t is not None:
                    ring.append((last_t, 0, 0, False))
                ring.append((now, held, hr, xoff))
                while ring[0][0] < horizon:
                    ring.popleft()
        self._active = active

    def query(self, ports: Iterable[int] | None = None, since: float | None = None
              ) -> tuple[list[list[Any]], list[dict[str, Any]]]:
        """``(pool samples, [{"port", "priority", "samples"}])`` after ``since``
        (groups of ``ports`` only, sorted)."""
        pool = [list(s) for s in self.pool if since is None or s[0] > since]
        wanted = None if ports is None else set(ports)
        groups = []
        for (number, prio), ring in sorted(self.groups.items()):
            if wanted is not None and number not in wanted:
                continue
            rows = [list(s) for s in ring if since is None or s[0] > since]
            if rows:
                groups.append({"port": number, "priority": prio, "samples": rows})
        return pool, groups


def _alphas(value: Any, current: list[float]) -> list[float]:
    def one(v: Any, where: str) -> float:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v < math.inf:
            raise ValueError(f"alpha{where}: expected a number > 0, got {v!r}")
        return float(v)
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return [one(value, "")] * NUM_PRIORITIES
    out = list(current)
    if isinstance(value, Mapping):
        for key, v in value.items():
            try:
                prio = int(key)
            except (TypeError, ValueError):
                raise ValueError(f"alpha: priority {key!r} is not 0..7") from None
            if not 0 <= prio < NUM_PRIORITIES:
                raise ValueError(f"alpha: priority {key!r} is not 0..7")
            out[prio] = one(v, f"[{prio}]")
        return out
    if isinstance(value, (list, tuple)) and len(value) == NUM_PRIORITIES:
        return [one(v, f"[{i}]") for i, v in enumerate(value)]
    raise ValueError(f"alpha: expected a number, eight numbers or {{priority: number}}, "
                     f"got {value!r}")

"""DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
SIGCOMM 2015): the sender's reaction point and the receiver's CNP gate.

**Reaction point** (:class:`ReactionPoint`, one per queue pair). State: the
current rate Rc, the target rate Rt, α, the byte counter and the timer and
byte stage counts. Events (paper §3, Figure 7):

- CNP: ``Rt = Rc; Rc = Rc·(1 − α/2); α = (1 − g)·α + g``; the byte counter,
  both stage counts and both timers restart.
- α timer, every K without a CNP: ``α = (1 − g)·α``. Before the first CNP
  α stays at its initial value α₀ (the timer starts with the first CNP).
- Rate increase, on each expiry of the timer T and each B bytes sent; with
  T_cnt and B_cnt the number of such events since the last CNP:
  fast recovery while ``max(T_cnt, B_cnt) < F`` (Rt unchanged),
  hyper increase when ``min(T_cnt, B_cnt) > F`` (``Rt += i·R_HAI``,
  ``i = min(T_cnt, B_cnt) − F``), additive increase otherwise
  (``Rt += R_AI``); then ``Rc = (Rt + Rc)/2`` in every stage. Rt and Rc
  never exceed the line rate; Rc never falls below the minimum rate.

Once Rc and Rt are both back at the line rate the rate timer stops (every
further event would leave them there) until the next CNP; α keeps decaying
and is brought up to date in closed form when it is next looked at. Of
the ConnectX knobs beyond the paper only one is here:
``rate_reduce_period_us`` (``rate_reduce_monitor_period``, at most one cut
per period; default 0 = the paper's one cut per CNP) and
``clamp_target_rate`` (ConnectX ``clamp_tgt_rate``): the paper sets Rt = Rc
at every cut; ConnectX by default (and HPCC's ns-3 DCQCN) does so only when a
rate-increase timer stage has passed since the previous cut, so CNPs that
follow each other faster than the timer cut Rc again but keep Rt, and fast
recovery climbs back to the rate before the burst of cuts instead of to the
lowest one. ``clamp_target_rate`` false (the default) is ConnectX's; true
is the paper's.

**CNP gate** (:class:`CnpGate`, one per queue pair at the receiver): a CE
-marked packet asks for a CNP; at most one is sent per ``cnp_interval_us``
(the paper's N = 50 µs; ConnectX ``min_time_between_cnps``). A mark that
arrives while the interval runs is not forgotten: one CNP goes when the
interval ends, so CNPs keep coming once per interval while marks do.

**Scaling.** Parameters are given as in the paper, at its 40 Gb/s
(``reference_rate_bps``), and scaled to the emulated line rate R: every time
(K, T, N, the reduce period) is multiplied by ``time_scale``, every rate
(R_AI, R_HAI, the minimum) by ``R / reference_rate_bps`` and the byte counter
B by both. The emulated network then behaves as the paper's slowed down
``time_scale`` times in time, with queues and rates shrunk in proportion.
Defaults (:class:`DcqcnParams`): g = 1/256, K = T = 55 µs, N = 50 µs,
B = 10 MB, F = 5, R_AI = 40 Mb/s (all from the paper), R_HAI = 400 Mb/s
(10 × R_AI, the ratio of ConnectX's rpg_hai_rate/rpg_ai_rate 50/5), α₀ = 1
(ConnectX initial_alpha_value 1023/1024), minimum rate 400 Mb/s (1 % of the
line, our choice: a throttled flow still sends a packet now and then at
10 Mb/s), and
``time_scale`` 100, because a Python agent's timers are good to a few tens
of microseconds, not a few: at 10 Mb/s that is K = T = 5.5 ms, N = 5 ms,
B = 250 kB, R_AI = 10 kb/s, R_HAI = 100 kb/s, minimum 100 kb/s. Set
``time_scale`` 1 and ``reference_rate_bps`` equal to the line rate to give
every value unscaled (then give the rates too: the default minimum rate,
400 Mb/s, would be clamped to a slower line and forbid any cut).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, fields
from typing import Any

DEFAULT_TIME_SCALE = 100.0
PAPER_RATE_BPS = 40e9


@dataclass(frozen=True)
class DcqcnParams:
    """DCQCN settings of one queue pair, in the paper's units (see module doc)."""

    enabled: bool = True
    time_scale: float = DEFAULT_TIME_SCALE
    reference_rate_bps: float = PAPER_RATE_BPS
    g: float = 1 / 256
    alpha_init: float = 1.0
    alpha_timer_us: float = 55.0           # K
    rate_timer_us: float = 55.0            # T
    byte_counter_bytes: float = 10e6       # B
    fast_recovery_stages: int = 5          # F
    rate_ai_bps: float = 40e6              # R_AI
    rate_hai_bps: float = 400e6            # R_HAI
    min_rate_bps: float = 400e6
    rate_reduce_period_us: float = 0.0
    cnp_interval_us: float = 50.0          # N, at the receiver
    clamp_target_rate: bool = False        # Rt = Rc at every cut (the paper); see module doc

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in ("enabled", "clamp_target_rate"):
                if not isinstance(value, bool):
                    raise ValueError(f"dcqcn.{f.name} must be true or false")
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) \
                    or math.isnan(value) or value < 0:
                raise ValueError(f"dcqcn.{f.name} must be a non-negative number, not {value!r}")
        if not 0 < self.g <= 1:
            raise ValueError("dcqcn.g must be in (0, 1]")
        if not 0 <= self.alpha_init <= 1:
            raise ValueError("dcqcn.alpha_init must be in [0, 1]")
        for name in ("time_scale", "reference_rate_bps", "alpha_timer_us", "rate_timer_us",
                     "byte_counter_bytes"):
            if getattr(self, name) <= 0:
                raise ValueError(f"dcqcn.{name} must be positive")
        if int(self.fast_recovery_stages) != self.fast_recovery_stages:
            raise ValueError("dcqcn.fast_recovery_stages must be an integer")

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def scaled(self, line_rate_bps: float) -> ScaledDcqcn:
        """The values in effect on a NIC of ``line_rate_bps``."""
        rate_ratio = line_rate_bps / self.reference_rate_bps
        ts = self.time_scale * 1e-6
        return ScaledDcqcn(
            line_rate_bps=line_rate_bps,
            g=self.g,
            alpha_init=self.alpha_init,
            alpha_timer_s=self.alpha_timer_us * ts,
            rate_timer_s=self.rate_timer_us * ts,
            byte_counter_bytes=max(1.0, self.byte_counter_bytes * rate_ratio * self.time_scale),
            fast_recovery_stages=int(self.fast_recovery_stages),
            rate_ai_bps=self.rate_ai_bps * rate_ratio,
            rate_hai_bps=self.rate_hai_bps * rate_ratio,
            min_rate_bps=min(line_rate_bps, self.min_rate_bps * rate_ratio),
            rate_reduce_period_s=self.rate_reduce_period_us * ts,
            cnp_interval_s=self.cnp_interval_us * ts,
            clamp_target_rate=self.clamp_target_rate,
        )


@dataclass(frozen=True)
class ScaledDcqcn:
    """DCQCN values in seconds, bytes and b/s at one line rate."""

    line_rate_bps: float
    g: float
    alpha_init: float
    alpha_timer_s: float
    rate_timer_s: float
    byte_counter_bytes: float
    fast_recovery_stages: int
    rate_ai_bps: float
    rate_hai_bps: float
    min_rate_bps: float
    rate_reduce_period_s: float
    cnp_interval_s: float
    clamp_target_rate: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class ReactionPoint:
    """The sender side of DCQCN for one queue pair (see the module docstring).

    Every method takes ``now``; :meth:`advance` runs the timer events due by
    then at their own times. ``samples`` gets ``(t, Rc, Rt, α)`` at the start
    and whenever an event changes Rc or Rt (up to ``max_samples``; later
    ones are counted in ``samples_dropped``)."""

    __slots__ = ("p", "rc_bps", "rt_bps", "alpha", "byte_count", "t_cnt", "b_cnt",
                 "alpha_next", "rate_next", "last_cut", "cuts", "cnps", "cnps_ignored",
                 "increases", "samples", "samples_dropped", "max_samples")

    def __init__(self, params: ScaledDcqcn, now: float, *, initial_rate_bps: float | None = None,
                 max_samples: int = 20_000) -> None:
        self.p = params
        line = params.line_rate_bps
        self.rc_bps = line if initial_rate_bps is None else min(line, initial_rate_bps)
        self.rt_bps = self.rc_bps
        self.alpha = params.alpha_init
        self.byte_count = 0.0
        self.t_cnt = self.b_cnt = 0
        # α holds its initial value until the first CNP (ConnectX
        # initial_alpha_value: "used when receiving the first CNP for a flow").
        self.alpha_next = math.inf
        self.rate_next = math.inf if self.rc_bps >= line else now + params.rate_timer_s
        self.last_cut = -math.inf
        self.cuts = self.cnps = self.cnps_ignored = 0
        self.increases = {"fast_recovery": 0, "additive": 0, "hyper": 0}
        self.max_samples = max_samples
        self.samples: list[tuple[float, float, float, float]] = []
        self.samples_dropped = 0
        self._sample(now)

    # -- events ---------------------------------------------------------------

    def on_cnp(self, now: float) -> bool:
        """A CNP arrived; True when it cut the rate."""
        self.advance(now)
        self.cnps += 1
        p = self.p
        if now - self.last_cut < p.rate_reduce_period_s:
            self.cnps_ignored += 1
            return False
        self.last_cut = now
        self.cuts += 1
        if p.clamp_target_rate or self.t_cnt:
            self.rt_bps = self.rc_bps
        self.rc_bps = max(p.min_rate_bps, self.rc_bps * (1 - self.alpha / 2))
        self.alpha = (1 - p.g) * self.alpha + p.g
        self.byte_count = 0.0
        self.t_cnt = self.b_cnt = 0
        self.alpha_next = now + p.alpha_timer_s
        self.rate_next = now + p.rate_timer_s
        self._sample(now)
        return True

    def on_sent(self, nbytes: int, now: float) -> None:
        """``nbytes`` were sent: feed the byte counter."""
        if self.rate_next == math.inf:
            return  # at line rate: the byte stage cannot raise anything
        self.advance(now)
        self.byte_count += nbytes
        b = self.p.byte_counter_bytes
        while self.byte_count >= b and self.rate_next != math.inf:
            self.byte_count -= b
            self.b_cnt += 1
            self._increase(now)

    def advance(self, now: float) -> None:
        """Run the α and rate timer expiries due by ``now``, in time order."""
        p = self.p
        while self.rate_next <= now:
            t = self.rate_next
            self._decay_alpha(t)
            self.t_cnt += 1
            self.rate_next = t + p.rate_timer_s
            self._increase(t)
        self._decay_alpha(now)

    def _decay_alpha(self, until: float) -> None:
        # Rate events never change α, so its decays are taken in closed form.
        if self.alpha_next <= until:
            k = self.p.alpha_timer_s
            n = math.floor((until - self.alpha_next) / k) + 1
            self.alpha *= (1 - self.p.g) ** n
            self.alpha_next += n * k

    def next_event(self) -> float:
        """When the next rate increase timer expires (``inf`` when stopped)."""
        return self.rate_next

    # -- internals -------------------------------------------------------------

    def _increase(self, t: float) -> None:
        p = self.p
        line = p.line_rate_bps
        f = p.fast_recovery_stages
        if max(self.t_cnt, self.b_cnt) < f:
            self.increases["fast_recovery"] += 1
        elif min(self.t_cnt, self.b_cnt) > f:
            self.increases["hyper"] += 1
            self.rt_bps = min(line, self.rt_bps + (min(self.t_cnt, self.b_cnt) - f) * p.rate_hai_bps)
        else:
            self.increases["additive"] += 1
            self.rt_bps = min(line, self.rt_bps + p.rate_ai_bps)
        self.rc_bps = min(line, (self.rt_bps + self.rc_bps) / 2)
        if self.rt_bps >= line and line - self.rc_bps <= line * 1e-6:
            self.rc_bps = line
            self.rate_next = math.inf
            self.byte_count = 0.0
        self._sample(t)

    def _sample(self, t: float) -> None:
        samples = self.samples
        if samples and samples[-1][1] == self.rc_bps and samples[-1][2] == self.rt_bps:
            return
        if len(samples) < self.max_samples:
            self.samples.append((t, self.rc_bps, self.rt_bps, self.alpha))
        else:
            self.samples_dropped += 1

    def to_dict(self, now: float) -> dict[str, Any]:
        self.advance(now)
        return {"rc_bps": self.rc_bps, "rt_bps": self.rt_bps, "alpha": self.alpha,
                "cuts": self.cuts, "cnps": self.cnps, "cnps_ignored": self.cnps_ignored,
                "increases": dict(self.increases), "samples_dropped": self.samples_dropped}


class CnpGate:
    """At most one CNP per ``interval_s`` and, while CE marks keep coming, at
    least one per interval (per queue pair, at the receiver).

    :meth:`allow` answers a CE-marked packet: True when the interval since
    the last CNP has passed (send one now); otherwise the mark is remembered
    and :attr:`due` says when the interval ends, when :meth:`fire` sends the
    one CNP owed for all the marks that came in between. Without the
    deferred CNP, marks read in a burst (a receiver that was not scheduled
    for a few ms reads the frames queued meanwhile within microseconds)
    would get one CNP for the whole burst and the sender would hear of
    congestion far less often than once per interval."""

    __slots__ = ("interval_s", "last", "pending")

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self.last = -math.inf
        self.pending = False

    def allow(self, now: float) -> bool:
        # a nanosecond of slack: intervals are sums of float seconds
        if now - self.last >= self.interval_s - 1e-9:
            self.last = now
            self.pending = False
            return True
        self.pending = True
        return False

    @property
    def due(self) -> float:
        """When the owed CNP may go (``inf``: none owed)."""
        return self.last + self.interval_s if self.pending else math.inf

    def fire(self, now: float) -> bool:
        """The interval ended: True when a CNP is owed (it is sent now)."""
        if self.pending and now - self.last >= self.interval_s - 1e-9:
            self.last = now
            self.pending = False
            return True
        return False

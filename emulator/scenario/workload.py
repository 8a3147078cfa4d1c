"""Generators to flows: :func:`expand_workload`.

What each generator kind makes (``size`` is per flow; the n-th flow made is
``{id}-{n}`` and starts at ``start + n × stagger``):

- ``incast``: one flow from each sender to the receiver, in sender order.
- ``permutation``: every GPU of ``gpus`` sends to exactly one other and
  receives from exactly one other, always on another server (GPUs of a
  server meet in zero time, not over the fabric). Impossible when one
  server holds more than half of the GPUs.
- ``all-to-all``: a flow for every ordered pair of ``gpus`` on different
  servers, source-major in topology order.

"Server" above is a group of :func:`~emulator.scenario.apart.apart_groups`:
with a scale-up tier (on sim; live with domains of one server, the switch
timed in the agent) every GPU is one, so pairs inside a server are made too
and run over the scale-up switch.
- ``pairs``: one flow per ``[src, dst]`` pair, in order.

The permutation is drawn from ``random.Random(f"{seed}:{generator id}")``,
so it is the same on every run and machine, and adding a generator does not
change the flows of another.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Mapping

from emulator.scenario.apart import apart_groups
from emulator.scenario.collectives import CollectivePlan, plan_collective
from emulator.scenario.errors import ScenarioError, key_text
from emulator.scenario.jobs_plan import JobPlan, plan_job
from emulator.scenario.spec import FlowSpec, GeneratorSpec, Scenario

# Random swaps tried per GPU when mixing a permutation.
_MIXING_ROUNDS = 20


def expand_workload(scenario: Scenario) -> list[FlowSpec]:
    """Every flow of the scenario: the written flows, then each generator's,
    then each collective's, then each job's, in order."""
    flows = list(scenario.flows)
    apart = apart_groups(scenario.topology, scenario.target)
    for index, generator in enumerate(scenario.generators):
        try:
            flows.extend(expand_generator(generator, scenario.seed, apart))
        except ValueError as exc:
            key = key_text(["workload", "generators", index])
            raise ScenarioError(f"{scenario.source}: key '{key}': {exc}") from None
    for plan in collective_plans(scenario):
        flows.extend(plan.flows)
    for job in job_plans(scenario):
        flows.extend(job.flows)
    return flows


def job_plans(scenario: Scenario) -> list[JobPlan]:
    """The plan of every job (graph, flows, agents' work), in order."""
    plans = []
    for index, spec in enumerate(scenario.jobs):
        try:
            plans.append(plan_job(spec, scenario.topology, scenario.target))
        except ValueError as exc:
            key = key_text(["workload", "jobs", index])
            raise ScenarioError(f"{scenario.source}: key '{key}': {exc}") from None
    return plans


def collective_plans(scenario: Scenario) -> list[CollectivePlan]:
    """The plan of every collective (flows, ops), in order."""
    plans = []
    for index, spec in enumerate(scenario.collectives):
        try:
            plans.append(plan_collective(spec, scenario.topology, scenario.seed))
        except ValueError as exc:
            key = key_text(["workload", "collectives", index])
            raise ScenarioError(f"{scenario.source}: key '{key}': {exc}") from None
    return plans


def expand_generator(generator: GeneratorSpec, seed: int,
                     server_of: Mapping[str, str]) -> list[FlowSpec]:
    """The flows one generator makes; ValueError when it cannot make any.
    ``server_of`` gives each GPU's group (:func:`~emulator.scenario.apart.apart_groups`)."""
    if generator.kind == "incast":
        pairs = [(sender, generator.receiver or "") for sender in generator.senders]
        if not pairs:
            raise ValueError(f"has no sender left: the patterns match only GPUs of the "
                             f"receiver's server {server_of.get(generator.receiver or '')}")
    elif generator.kind == "permutation":
        rng = random.Random(f"{seed}:{generator.id}")
        destinations = permutation(generator.gpus, server_of, rng)
        pairs = [(gpu, destinations[gpu]) for gpu in generator.gpus]
    elif generator.kind == "all-to-all":
        pairs = [(src, dst) for src in generator.gpus for dst in generator.gpus
                 if server_of[src] != server_of[dst]]
        if not pairs:
            raise ValueError(f"has no pair of GPUs on different servers among "
                             f"{', '.join(generator.gpus)}")
    else:
        pairs = list(generator.pairs)
    return [
        FlowSpec(id=f"{generator.id}-{n}", src=src, dst=dst, size_bytes=generator.size_bytes,
                 start_ns=generator.start_ns + n * generator.stagger_ns,
                 priority=generator.priority, dscp=generator.dscp, op=generator.op,
                 qps=generator.qps, rate_bps=generator.rate_bps, generator=generator.id)
        for n, (src, dst) in enumerate(pairs)
    ]


def permutation(gpus: tuple[str, ...], server_of: Mapping[str, str],
                rng: random.Random) -> dict[str, str]:
    """A random one-to-one map of ``gpus`` onto themselves that never maps a
    GPU to one of its own server.

    Built valid, then mixed: the GPUs are laid out server by server (largest
    server first) and each sends to the GPU ``m`` places on, ``m`` being the
    largest server's share; as no server holds more than ``m`` ≤ N/2 of them,
    that always lands on another server. Random swaps of two destinations
    that keep both on other servers then mix the map.
    """
    by_server: dict[str, list[str]] = defaultdict(list)
    for gpu in gpus:
        by_server[server_of[gpu]].append(gpu)
    largest = max((len(members) for members in by_server.values()), default=0)
    if len(by_server) < 2 or 2 * largest > len(gpus):
        crowded = max(by_server, key=lambda server: len(by_server[server]))
        raise ValueError(
            f"cannot send every GPU's traffic to another server: {crowded} holds {largest} of "
            f"the {len(gpus)} GPUs (at most half may share a server); list GPUs of more servers")
    groups = list(by_server.values())
    for members in groups:
        rng.shuffle(members)
    rng.shuffle(groups)
    groups.sort(key=len, reverse=True)
    order = [gpu for members in groups for gpu in members]
    count = len(order)
    target = [order[(i + largest) % count] for i in range(count)]
    for _ in range(_MIXING_ROUNDS * count):
        i, j = rng.randrange(count), rng.randrange(count)
        if (server_of[order[i]] != server_of[target[j]]
                and server_of[order[j]] != server_of[target[i]]):
            target[i], target[j] = target[j], target[i]
    return dict(zip(order, target))


def stopped_flows(scenario: Scenario) -> dict[str, int]:
    """Flow id -> time (ns) of its ``stop_flow`` event."""
    return {e.flow: e.at_ns for e in scenario.events if e.kind == "stop_flow" and e.flow}

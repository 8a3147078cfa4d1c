"""The JSON Schema of a scenario file, and its violations as one-line errors.

:data:`SCHEMA` describes the whole file (draft 2020-12). It checks the
shape: keys, types, ranges, enumerations, and which keys each kind of
generator and event takes (``if``/``then`` on ``kind``). Units (sizes,
durations, rates, thresholds) are strings the schema only types; their
syntax is checked when they are parsed (:mod:`.parse`), and everything that
needs the topology (GPU, switch and port names) afterwards (:mod:`.checks`).

Each object schema has a ``title`` ("a flow") and each value schema a
``description`` (what to write instead); :func:`check_schema` uses them to
turn the violation nearest the top of the file into one line.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

import jsonschema

from emulator.scenario.errors import Where
from emulator.scenario.spec import UNLIMITED
from emulator.scenario.storage_traffic import STORAGE_KINDS
from emulator.scenario.units import DURATION_HINT, SIZE_HINT, THRESHOLD_HINT
from emulator.topology.units import RATE_HINT

TARGETS: tuple[str, ...] = ("builtin", "bmv2", "sim")
OPS: tuple[str, ...] = ("write", "send", "read")
GENERATOR_KINDS: tuple[str, ...] = ("incast", "permutation", "all-to-all", "pairs",
                                     *STORAGE_KINDS)
COLLECTIVE_KINDS: tuple[str, ...] = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all",
                                      "send-recv", "pipeline", "kv-handoff")
PLACEMENTS: tuple[str, ...] = ("rail-aligned", "rail-unaware")
ALGORITHMS: tuple[str, ...] = ("ring", "hierarchical")
EVENT_KINDS: tuple[str, ...] = ("link_down", "link_up", "stop_flow", "pfc_storm_start",
                                "pfc_storm_stop")
CHECK_OPS: tuple[str, ...] = ("==", "!=", "<", "<=", ">", ">=")
MAX_QPS = 64

_NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
_NAME_HINT = "letters, digits, '.', '_' and '-', starting with a letter or digit (e.g. f1)"


def _one_of(values: tuple[str, ...]) -> str:
    return "one of " + ", ".join(values)


def _obj(title: str, properties: dict[str, Any], required: tuple[str, ...] = (),
         example: str = "") -> dict[str, Any]:
    """A mapping schema: ``title`` names it in messages ("a flow")."""
    return {
        "type": "object",
        "title": title,
        "description": f"a mapping{f', e.g. {example}' if example else ''}",
        "properties": properties,
        "required": list(required),
        "additionalProperties": False,
    }


def _list(items: dict[str, Any], hint: str, min_items: int = 0,
          unique: bool = False) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "array", "items": items, "description": hint}
    if min_items:
        schema["minItems"] = min_items
    if unique:
        schema["uniqueItems"] = True
    return schema


def _int(minimum: int, maximum: int | None = None, hint: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum}
    if maximum is not None:
        schema["maximum"] = maximum
    schema["description"] = hint or (f"a whole number from {minimum} to {maximum}"
                                     if maximum is not None else f"a whole number >= {minimum}")
    return schema


_STR = {"type": "string", "description": "text"}
_BOOL = {"type": "boolean", "description": "true or false"}
_SIZE = {"type": ["string", "integer"], "description": SIZE_HINT}
_DURATION = {"type": ["string", "integer"], "description": DURATION_HINT}
_RATE = {"type": ["string", "integer"], "description": RATE_HINT}
_THRESHOLD = {"type": ["string", "integer"], "description": THRESHOLD_HINT}
_FLOW_SIZE = {"type": ["string", "integer"],
              "description": f"{SIZE_HINT}; or {UNLIMITED} to send until stopped"}
_PRIORITY = _int(0, 7)
_DSCP = _int(0, 63)
_PRIORITY_LIST = _list(_PRIORITY, "a list of priorities from 0 to 7, e.g. [3]", unique=True)
_GPU = {"type": "string", "description": "a GPU name srvS/gpuR (e.g. srv0/gpu0)"}
_GPU_LIST = _list({"type": "string", "description": "a GPU name or pattern (e.g. srv*/gpu0, "
                                                    "srv[0-15]/gpu0: [N-M] is a range of numbers)"},
                  "a list of GPU names or patterns, e.g. [srv0/gpu0, srv*/gpu1, 'srv[0-15]/gpu2']",
                  min_items=1, unique=True)
_ID = {"type": "string", "pattern": _NAME, "maxLength": 64, "description": _NAME_HINT}

_ECN_KEYS: dict[str, Any] = {
    "enabled": _BOOL,
    "kmin": _THRESHOLD,
    "kmax": _THRESHOLD,
    "pmax": {"type": "number", "minimum": 0, "maximum": 1,
             "description": "a probability from 0 to 1 (e.g. 0.2)"},
}
_ALPHA = {"type": "number", "exclusiveMinimum": 0,
          "description": "a number above 0 (e.g. 0.125 for 1/8, or 8)"}
_PFC_KEYS: dict[str, Any] = {
    "enabled": _BOOL,
    "xoff": _THRESHOLD,
    "xon": _THRESHOLD,
    "quanta": _int(1, 65535, "a whole number of pause quanta from 1 to 65535"),
    "alpha": _ALPHA,
    "headroom": {"type": ["string", "integer"],
                 "description": f"auto, or {THRESHOLD_HINT}"},
}
_ECN = _obj("an ecn mapping", {**_ECN_KEYS, "priorities": _PRIORITY_LIST},
            example="{enabled: true, kmin: 20KB, kmax: 80KB, pmax: 0.2}")
_PFC = _obj("a pfc mapping", {**_PFC_KEYS, "priorities": {**_PRIORITY_LIST, "minItems": 1},
                              "response": _DURATION,
                              "dci": {"enum": ["lossless", "lossy"],
                                      "description": "lossless (PFC over the DCI, headroom "
                                                     "for its distance) or lossy (ECN only "
                                                     "on the DCI ports)"}},
            example="{enabled: true, priorities: [3], xoff: 40KB, xon: 20KB}")
_PRIORITIES = _obj("a priorities mapping", {
    "roce_dscp": _DSCP, "roce": _PRIORITY, "cnp_dscp": _DSCP, "cnp": _PRIORITY,
}, example="{roce_dscp: 26, roce: 3, cnp_dscp: 48, cnp: 6}")
_OVERRIDE = _obj("an override", {
    "switch": {"type": "string", "description": "a switch name (e.g. leaf-r0-0)"},
    "port": _int(1, hint="a port number >= 1 (leave it out for every port of the switch)"),
    "buffer": _SIZE,
    "ecn": _obj("an ecn override", _ECN_KEYS, example="{kmin: 10KB}"),
    "pfc": _obj("a pfc override", _PFC_KEYS, example="{xoff: 20KB, xon: 10KB}"),
}, required=("switch",), example="{switch: leaf-r0-0, port: 3, buffer: 64KB}")
_POOL = _obj("a pool mapping", {
    "size": {"type": ["string", "integer"], "description": f"auto, or {SIZE_HINT}"},
    "alpha": {"anyOf": [_ALPHA, {"type": "object", "additionalProperties": _ALPHA}],
              "description": "a number above 0, or {priority: number} (e.g. {0: 0.125})"},
}, example="{size: 4MB, alpha: {0: 0.125}}")
_SWITCHES = _obj("switches", {
    "buffer": _SIZE,
    "pool": _POOL,
    "ecn": _ECN,
    "pfc": _PFC,
    "priorities": _PRIORITIES,
    "overrides": _list(_OVERRIDE, "a list of overrides, e.g. [{switch: leaf-r0-0, buffer: 64KB}]"),
}, example="{buffer: 256KB, ecn: {...}, pfc: {...}}")

_DCQCN = _obj("a dcqcn mapping", {
    "enabled": _BOOL,
    "g": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
          "description": "a weight above 0 and at most 1 (e.g. 0.00390625, 1/256)"},
    "rate_ai": _RATE,
    "rate_hai": _RATE,
    "min_rate": _RATE,
    "timer": _DURATION,
    "alpha_timer": _DURATION,
    "byte_counter": _SIZE,
    "fast_recovery_steps": _int(1, 64),
    "cnp_interval": _DURATION,
    "clamp_target_rate": _BOOL,
}, example="{enabled: true, g: 0.00390625, rate_ai: 5Mbps}")
_HOSTS = _obj("hosts", {"mtu": _SIZE, "dcqcn": _DCQCN}, example="{mtu: 1024B, dcqcn: {...}}")

# Keys every generator takes, then what each kind adds.
_TRAFFIC_KEYS: dict[str, Any] = {
    "start": _DURATION,
    "priority": _PRIORITY,
    "op": {"enum": list(OPS), "description": _one_of(OPS)},
    "qps": _int(1, MAX_QPS),
    "rate": _RATE,
}
_FLOW = _obj("a flow", {
    "id": _ID, "src": _GPU, "dst": _GPU, "size": _FLOW_SIZE, **_TRAFFIC_KEYS,
}, required=("id", "src", "dst", "size"),
    example="{id: f1, src: srv0/gpu0, dst: srv3/gpu0, size: 4MB}")
_GENERATOR_COMMON: dict[str, Any] = {
    "kind": {"enum": list(GENERATOR_KINDS), "description": _one_of(GENERATOR_KINDS)},
    "id": _ID,
    "size": _FLOW_SIZE,
    "stagger": _DURATION,
    **_TRAFFIC_KEYS,
}
_PAIR = {"type": "array", "items": _GPU, "minItems": 2, "maxItems": 2,
         "description": "a pair [src, dst], e.g. [srv0/gpu0, srv1/gpu0]"}
GENERATOR_SCHEMAS: dict[str, dict[str, Any]] = {
    "incast": _obj("an incast generator", {
        **_GENERATOR_COMMON, "senders": _GPU_LIST, "receiver": _GPU,
    }, required=("kind", "senders", "receiver", "size")),
    "permutation": _obj("a permutation generator", {**_GENERATOR_COMMON, "gpus": _GPU_LIST},
                        required=("kind", "size")),
    "all-to-all": _obj("an all-to-all generator", {**_GENERATOR_COMMON, "gpus": _GPU_LIST},
                       required=("kind", "size")),
    "pairs": _obj("a pairs generator", {
        **_GENERATOR_COMMON,
        "pairs": _list(_PAIR, "a list of [src, dst] pairs, e.g. [[srv0/gpu0, srv1/gpu0]]",
                       min_items=1),
    }, required=("kind", "pairs", "size")),
    # storage and front-end traffic (emulator.scenario.storage_traffic)
    **{kind: _obj(f"a {kind} generator", {
        **_GENERATOR_COMMON, "gpus": _GPU_LIST,
        **({} if kind in ("requests", "tokens") else {"stripe": _int(
            1, None, "a whole number >= 1: the storage nodes each GPU's bytes are striped "
                     "over (e.g. 4)")}),
    }, required=("kind", "size")) for kind in STORAGE_KINDS},
}


# Collectives (emulator.scenario.collectives): the ranks are ``gpus`` (in
# ring order) or ``servers`` (one rank per server, its GPU by ``placement``).
_SERVER_LIST = _list({"type": "string", "description": "a server name or pattern (e.g. srv*, "
                                                       "srv[0-15]: [N-M] is a range of numbers)"},
                     "a list of server names or patterns, e.g. [srv0, srv1] or ['srv[0-15]']",
                     min_items=1, unique=True)
_COLLECTIVE_COMMON: dict[str, Any] = {
    "kind": {"enum": list(COLLECTIVE_KINDS), "description": _one_of(COLLECTIVE_KINDS)},
    "id": _ID,
    "size": _SIZE,
    "start": _DURATION,
    "priority": _PRIORITY,
    "op": {"enum": ["write", "send"], "description": "one of write, send"},
    "pxn": _BOOL,
    "qps": _int(1, MAX_QPS),
}
_RANKS: dict[str, Any] = {
    "gpus": _GPU_LIST,
    "servers": _SERVER_LIST,
    "placement": {"enum": list(PLACEMENTS), "description": _one_of(PLACEMENTS)},
    "rail": _int(0, hint="a GPU index inside a server (e.g. 0)"),
}
_RING_KEYS: dict[str, Any] = {
    **_RANKS,
    "channels": _int(1, 16, "a whole number of rings from 1 to 16"),
    "chunks": _int(1, 64, "a whole number of chunks per step from 1 to 64"),
}
COLLECTIVE_SCHEMAS: dict[str, dict[str, Any]] = {
    **{kind: _obj(f"an {kind} collective" if kind[0] in "aeiou" else f"a {kind} collective",
                  {**_COLLECTIVE_COMMON, **_RING_KEYS}, required=("kind", "id", "size"))
       for kind in ("all-gather", "reduce-scatter", "send-recv")},
    "all-reduce": _obj("an all-reduce collective", {
        **_COLLECTIVE_COMMON, **_RING_KEYS,
        "algorithm": {"enum": list(ALGORITHMS), "description": _one_of(ALGORITHMS)},
    }, required=("kind", "id", "size")),
    "all-to-all": _obj("an all-to-all collective", {
        **_COLLECTIVE_COMMON, "gpus": _GPU_LIST, "servers": _SERVER_LIST,
        "chunks": _RING_KEYS["chunks"],
    }, required=("kind", "id", "size")),
    "pipeline": _obj("a pipeline collective", {
        **_COLLECTIVE_COMMON, **_RANKS,
        "microbatches": _int(1, 1024, "a whole number of microbatches from 1 to 1024"),
        "compute": _DURATION,
    }, required=("kind", "id", "size")),
    "kv-handoff": _obj("a kv-handoff collective", {
        **_COLLECTIVE_COMMON, "prefill": _GPU_LIST, "decode": _GPU_LIST,
        "requests": _int(1, 100000, "a whole number of requests >= 1"),
        "interval": _DURATION,
    }, required=("kind", "id", "size", "prefill", "decode", "requests")),
}


# Jobs (emulator.scenario.jobs_spec): a training step from a model and its
# parallelism, or Chakra traces; both run as the agents' work graphs.
JOB_KINDS: tuple[str, ...] = ("training", "inference", "chakra")
JOB_PLACEMENTS: tuple[str, ...] = ("rail-aware", "rail-unaware")
MODEL_PRESETS: tuple[str, ...] = ("llama3-8b", "llama3-70b", "mixtral-8x7b")
_NUMBER = {"type": "number", "exclusiveMinimum": 0, "description": "a positive number"}
_MODEL = {"type": ["string", "object"],
          "description": f"a preset ({', '.join(MODEL_PRESETS)}) or a shape mapping "
                         "{layers, hidden, heads, kv_heads, ffn, vocab, experts, top_k, "
                         "bytes_per_element}",
          "properties": {k: _int(0 if k == "experts" else 1) for k in (
              "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "experts", "top_k",
              "bytes_per_element")},
          "additionalProperties": False}
_LENGTH = {"type": ["integer", "array"], "minimum": 1, "items": _int(1), "minItems": 2,
           "maxItems": 2, "description": "tokens: a whole number, or [min, max] drawn "
                                            "uniformly (e.g. 512 or [128, 2048])"}
_JOB_COMMON: dict[str, Any] = {
    "kind": {"enum": list(JOB_KINDS), "description": _one_of(JOB_KINDS)},
    "id": _ID,
    "gpus": _GPU_LIST,
    "iterations": _int(1, 1000, "a whole number of iterations from 1 to 1000"),
    "start": _DURATION,
    "priority": _PRIORITY,
    "qps": _int(1, MAX_QPS),
}
JOB_SCHEMAS: dict[str, dict[str, Any]] = {
    "training": _obj("a training job", {
        **_JOB_COMMON,
        "model": _MODEL,
        "seq": _int(1, hint="a whole number of tokens per sequence (e.g. 2048)"),
        "micro_batch": _int(1, hint="sequences per micro-batch (e.g. 1)"),
        "global_batch": _int(1, hint="sequences per iteration over all replicas (e.g. 64)"),
        "tp": _int(1), "pp": _int(1), "dp": _int(1), "ep": _int(1),
        "placement": {"enum": list(JOB_PLACEMENTS), "description": _one_of(JOB_PLACEMENTS)},
        "bucket": _SIZE,
        "overlap_dp": _BOOL,
        "peak_tflops": _NUMBER,
        "efficiency": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                       "description": "a share of the peak from 0 (excluded) to 1"},
    }, required=("kind", "id", "model", "seq", "micro_batch", "global_batch", "peak_tflops")),
    "inference": _obj("an inference job", {
        **{k: v for k, v in _JOB_COMMON.items() if k not in ("gpus", "iterations")},
        "model": _MODEL,
        "prefill": _GPU_LIST,
        "decode": _GPU_LIST,
        "requests": _int(1, 100000, "a whole number of requests from 1 to 100000"),
        "arrivals": {"type": "string", "description": "a request trace file (CSV: Azure's "
                     "TIMESTAMP,ContextTokens,GeneratedTokens or arrival_s,prompt,output; "
                     "JSON lines: Mooncake's timestamp,input_length,output_length)"},
        "interval": _DURATION,
        "prompt": _LENGTH,
        "output": _LENGTH,
        "peak_tflops": _NUMBER,
        "efficiency": {"type": "number", "exclusiveMinimum": 0, "maximum": 1,
                       "description": "a share of the peak from 0 (excluded) to 1"},
        "hbm_tb_per_s": _NUMBER,
        "stripe_rails": _BOOL,
        "max_batch": _int(1, 4096, "a whole number of requests a decode GPU batches, 1 to 4096"),
        "hbm_kv": {"type": ["string", "integer"],
                   "description": "a size, the HBM a decode GPU has for KV caches (e.g. "
                                  "40GB)"},
    }, required=("kind", "id", "model", "prefill", "decode", "peak_tflops")),
    "chakra": _obj("a chakra job", {
        **_JOB_COMMON,
        "traces": _list({"type": "string", "description": "an ET file path (relative to the "
                                                          "scenario file)"},
                        "a list of Chakra ET files, one per rank in rank order, e.g. "
                        "[trace/rank0.et, trace/rank1.et]", min_items=1),
        "mapping": {"type": "string", "description": "a file (relative to the scenario file) "
                                                     "with one GPU name per line, rank 0 first"},
        "groups": {"type": "object", "description": "process group name -> ranks in it, "
                                                    "e.g. {dp: 4}",
                   "additionalProperties": _int(1)},
    }, required=("kind", "id", "traces")),
}


def _by_kind(title: str, kinds: tuple[str, ...], schemas: Mapping[str, dict[str, Any]],
             example: str) -> dict[str, Any]:
    """A mapping whose ``kind`` picks the schema of the rest."""
    return {
        "type": "object",
        "title": title,
        "description": f"a mapping, e.g. {example}",
        "properties": {"kind": {"enum": list(kinds), "description": _one_of(kinds)}},
        "required": ["kind"],
        "allOf": [
            {"if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
             "then": schemas[kind]}
            for kind in kinds
        ],
    }


_LINK = {"type": "array", "items": {"type": "string", "description": "a switch or GPU name"},
         "minItems": 2, "maxItems": 2,
         "description": "the two ends of a link, e.g. [leaf-r0-0, spine0]"}
EVENT_SCHEMAS: dict[str, dict[str, Any]] = {
    "link_down": _obj("a link_down event", {"at": _DURATION, "kind": _STR, "link": _LINK},
                      required=("at", "kind", "link")),
    "link_up": _obj("a link_up event", {"at": _DURATION, "kind": _STR, "link": _LINK},
                    required=("at", "kind", "link")),
    "stop_flow": _obj("a stop_flow event", {
        "at": _DURATION, "kind": _STR,
        "flow": {"type": "string", "description": "a flow id (e.g. f1 or g0-3)"},
    }, required=("at", "kind", "flow")),
    # a host NIC that keeps sending PFC pauses (emulator.traffic.agent.storm)
    "pfc_storm_start": _obj("a pfc_storm_start event", {
        "at": _DURATION, "kind": _STR, "gpu": _GPU,
        "priorities": {**_PRIORITY_LIST, "minItems": 1},
        "quanta": _int(1, 65535, "a whole number of pause quanta from 1 to 65535"),
    }, required=("at", "kind", "gpu")),
    "pfc_storm_stop": _obj("a pfc_storm_stop event", {"at": _DURATION, "kind": _STR, "gpu": _GPU},
                           required=("at", "kind", "gpu")),
}
_CAPTURE = _obj("capture", {
    "ports": _list({"type": "string", "description": "SWITCH:PORT, SWITCH:* or a GPU name"},
                   "a list of capture points, e.g. [leaf-r0-0:1, spine0:*, srv3/gpu0]",
                   min_items=1),
    "max_packets": _int(1, hint="a whole number of packets >= 1 (e.g. 10000)"),
}, required=("ports",), example="{ports: [leaf-r0-0:1], max_packets: 10000}")
_CHECK = _obj("an expect check", {
    "metric": {"type": "string", "pattern": r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_/-]+)*$",
               "description": "a dotted path into results.json (e.g. totals.drops)"},
    "op": {"enum": list(CHECK_OPS), "description": _one_of(CHECK_OPS)},
    "value": {"type": ["number", "boolean", "string"],
              "description": "a number (or true, false, text with == and !=)"},
    "description": _STR,
}, required=("metric", "op", "value"), example="{metric: totals.drops, op: '==', value: 0}")

SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    **_obj("a scenario", {
        "name": {"type": "string", "pattern": _NAME, "maxLength": 64,
                 "description": "letters, digits, '.', '_' and '-' (e.g. incast-ecn), at most 64"},
        "description": _STR,
        "expect": _STR,
        "topology": {"type": ["string", "object"],
                     "description": "a topology file path (relative to this file) or a mapping"},
        "target": {"enum": list(TARGETS), "description": _one_of(TARGETS)},
        "duration": _DURATION,
        "seed": _int(0),
        # minimum applies to numbers only, pattern to text only
        "time_scale": {"type": ["number", "string"], "minimum": 1, "pattern": "^auto$",
                       "description": "a number >= 1 (1 = real time; 1000 = emulated 1000 times "
                                      "slower than written) or auto"},
        "switches": _SWITCHES,
        "hosts": _HOSTS,
        "workload": _obj("workload", {
            "flows": _list(_FLOW, "a list of flows, e.g. [{id: f1, src: srv0/gpu0, ...}]"),
            "generators": _list(
                _by_kind("a generator", GENERATOR_KINDS, GENERATOR_SCHEMAS,
                         "{kind: incast, senders: [srv0/gpu0], receiver: srv3/gpu0, size: 2MB}"),
                "a list of generators, e.g. [{kind: permutation, size: 1MB}]"),
            "collectives": _list(
                _by_kind("a collective", COLLECTIVE_KINDS, COLLECTIVE_SCHEMAS,
                         "{kind: all-reduce, id: ar, servers: ['srv[0-3]'], size: 4MB}"),
                "a list of collectives, e.g. [{kind: all-reduce, id: ar, gpus: [...], "
                "size: 4MB}]"),
            "jobs": _list(
                _by_kind("a job", JOB_KINDS, JOB_SCHEMAS,
                         "{kind: training, id: llm, model: llama3-8b, seq: 2048, "
                         "micro_batch: 1, global_batch: 16, tp: 8, dp: 2, peak_tflops: 989}"),
                "a list of jobs, e.g. [{kind: training, id: llm, model: llama3-8b, ...}]"),
        }, example="{flows: [...], generators: [...], collectives: [...]}"),
        "events": _list(_by_kind("an event", EVENT_KINDS, EVENT_SCHEMAS,
                                 "{at: 2s, kind: link_down, link: [leaf-r0-0, spine0]}"),
                        "a list of events, e.g. [{at: 2s, kind: stop_flow, flow: f1}]"),
        "capture": _CAPTURE,
        "expect_checks": _list(_CHECK, "a list of checks, e.g. [{metric: totals.drops, "
                                       "op: '==', value: 0}]"),
    }, required=("name", "topology", "duration", "workload")),
}


def _show(value: object) -> str:
    """A value as the user wrote it in YAML, for messages."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null (no value)"
    if isinstance(value, (list, tuple)):
        return "a list"
    if isinstance(value, Mapping):
        return "a mapping"
    return repr(value)


_TYPE_NAMES = {"object": "a mapping", "array": "a list", "integer": "a whole number",
               "number": "a number", "string": "text", "boolean": "true or false"}


def _describe(error: jsonschema.ValidationError) -> tuple[list[str | int], str]:
    """The key path and message of one violation."""
    path: list[str | int] = list(error.absolute_path)
    schema = error.schema if isinstance(error.schema, dict) else {}
    hint = schema.get("description", "")
    title = schema.get("title", "this mapping")
    value = error.instance
    shown = _show(value)
    if error.validator == "additionalProperties":
        allowed = list(schema.get("properties", {}))
        extra = sorted((key for key in value if key not in allowed), key=str)[0]
        return path + [extra], f"unknown key; {title} takes {', '.join(allowed)}"
    if error.validator == "required":
        missing = next(key for key in error.validator_value if key not in value)
        return path + [missing], f"is missing; {title} needs {', '.join(error.validator_value)}"
    if error.validator == "type":
        expected = error.validator_value
        names = [_TYPE_NAMES[t] for t in (expected if isinstance(expected, list) else [expected])]
        return path, f"{shown} is not {' or '.join(names)}; use {hint}"
    if error.validator in ("minimum", "exclusiveMinimum"):
        return path, f"{shown} is too small; use {hint}"
    if error.validator == "maximum":
        return path, f"{shown} is too large; use {hint}"
    if error.validator == "enum":
        what = path[-1] if path and isinstance(path[-1], str) else "value"
        return path, f"{shown} is not a known {what}; use {hint}"
    if error.validator in ("pattern", "maxLength"):
        return path, f"{shown} is not allowed; use {hint}"
    if error.validator == "minItems":
        if not value:
            return path, f"is empty; use {hint}"
        return path, f"has {len(value)} item(s), too few; use {hint}"
    if error.validator == "maxItems":
        return path, f"has {len(value)} items, too many; use {hint}"
    if error.validator == "uniqueItems":
        seen: list[object] = []
        repeated = next(item for item in value if item in seen or seen.append(item))
        return path, f"lists {_show(repeated)} twice; use {hint}"
    return path, error.message  # pragma: no cover - every keyword SCHEMA uses is above


def check_schema(data: object, where: Where) -> None:
    """Raise the violation of :data:`SCHEMA` nearest the top of the file."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    described = [_describe(error) for error in validator.iter_errors(data)]
    if not described:
        return
    # The one nearest the top of the file, so fixing errors one by one walks
    # down the file; among errors on one line, the deepest key.
    path, message = min(
        described,
        key=lambda item: (where.line(item[0]) or math.inf, -len(item[0]), str(item[0])),
    )
    raise where.error(path, message)

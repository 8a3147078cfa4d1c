"""Inference requests from a trace file (emulator.scenario.jobs_requests):
Azure's LLM inference CSV, a plain CSV and Mooncake's JSON lines, arrivals
relative to the first request, a cap on the count, one-line errors naming
the file and line; and an inference job that takes its requests from one."""

from __future__ import annotations

from pathlib import Path

import pytest

from emulator.scenario import ScenarioError
from emulator.scenario.jobs_requests import RequestTraceError, read_request_trace
from emulator.scenario.jobs_serve import Request
from emulator.scenario.loader import scenario_from_dict

AZURE = """TIMESTAMP,ContextTokens,GeneratedTokens
2023-11-16 18:15:46.6805900,374,44
2023-11-16 18:15:50.9951690,396,109
2023-11-16 18:15:46.9000000,879,15
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_azure_csv_is_read_in_arrival_order_from_the_first_request(tmp_path):
    requests = read_request_trace(write(tmp_path, "azure.csv", AZURE))
    assert [(r.prompt, r.output) for r in requests] == [(374, 44), (879, 15), (396, 109)]
    assert [r.arrival_s for r in requests] == pytest.approx([0.0, 0.21941, 4.314579], abs=1e-6)
    # the first ``limit`` in arrival order
    assert read_request_trace(tmp_path / "azure.csv", 2) == requests[:2]


def test_plain_csv_and_mooncake_json_lines(tmp_path):
    plain = write(tmp_path, "r.csv", "arrival_s,prompt,output\n0.5,100,10\n\n0.25,200,20\n")
    assert read_request_trace(plain) == (Request(0.0, 200, 20), Request(0.25, 100, 10))
    mooncake = write(tmp_path, "m.jsonl",
                     '{"timestamp": 27482, "input_length": 6955, "output_length": 52, '
                     '"hash_ids": [46, 47]}\n{"timestamp": 30535, "input_length": 6472, '
                     '"output_length": 26, "hash_ids": [46]}\n')
    assert read_request_trace(mooncake) == (Request(0.0, 6955, 52), Request(3.053, 6472, 26))


@pytest.mark.parametrize("name, text, needle", [
    ("h.csv", "time,in,out\n1,2,3\n", "h.csv:1: header time,in,out has neither"),
    ("t.csv", "arrival_s,prompt,output\n0,10,5\n1,ten,5\n", "t.csv:3: prompt 'ten' is not a "
                                                           "whole number of tokens"),
    ("z.csv", "arrival_s,prompt,output\n0,0,5\n", "z.csv:2: prompt 0 must be at least 1"),
    ("n.csv", "arrival_s,prompt,output\n-1,10,5\n", "n.csv:2: arrival_s '-1' must be a time"),
    ("d.csv", AZURE.replace("2023-11-16 18:15:50", "yesterday"),
     "d.csv:3: TIMESTAMP 'yesterday"),
    ("s.csv", "arrival_s,prompt,output\n0,10\n", "s.csv:2: fewer fields than the header"),
    ("j.jsonl", '{"timestamp": 1, "input_length": 5, "output_length": 1}\n{oops\n',
     "j.jsonl:2: not a JSON object"),
    ("k.jsonl", '{"timestamp": 1, "input_length": 5}\n', "k.jsonl:1: a line needs timestamp, "
                                                          "input_length, output_length"),
    ("e.csv", "arrival_s,prompt,output\n", "e.csv: no requests in it"),
])
def test_bad_traces_are_one_line_naming_the_file_and_line(tmp_path, name, text, needle):
    with pytest.raises(RequestTraceError) as caught:
        read_request_trace(write(tmp_path, name, text))
    assert needle in str(caught.value) and "\n" not in str(caught.value)


def test_a_missing_trace_names_the_formats(tmp_path):
    with pytest.raises(RequestTraceError, match="does not exist: give a request trace"):
        read_request_trace(tmp_path / "nothing.csv")


def job(**kw) -> dict:
    return {"kind": "inference", "id": "j",
            "model": {"layers": 2, "hidden": 256, "heads": 4, "kv_heads": 2, "ffn": 512,
                      "vocab": 1000},
            "prefill": ["srv0/gpu0"], "decode": ["srv1/gpu0"], "peak_tflops": 20, **kw}


def load(tmp_path: Path, item: dict):
    return scenario_from_dict({
        "name": "t", "target": "sim", "duration": "50ms",
        "topology": {"name": "r", "kind": "rail-optimized", "servers": 2, "gpus_per_server": 1,
                     "servers_per_leaf": 2, "spines": 1,
                     "host_link": {"rate": "10Gbps", "delay": "1us"},
                     "fabric_link": {"rate": "10Gbps", "delay": "1us"}},
        "workload": {"jobs": [item]}}, str(tmp_path / "s.yaml"), str(tmp_path), "sim")


def test_an_inference_job_takes_its_requests_from_a_trace_beside_the_scenario(tmp_path):
    write(tmp_path, "azure.csv", AZURE)
    scenario = load(tmp_path, job(arrivals="azure.csv", requests=2))
    serving = scenario.jobs[0].serving
    assert serving.requests == read_request_trace(tmp_path / "azure.csv", 2)
    # the graph: request r's prefill released at its arrival
    releases = sorted(n.release_s for n in scenario.jobs[0].world() if n.kind == "compute"
                      and n.id.endswith("/prefill"))
    assert releases == pytest.approx([0.0, 0.21941], abs=1e-6)


@pytest.mark.parametrize("extra, key, needle", [
    ({"arrivals": "azure.csv", "prompt": 10}, "prompt", "'prompt' comes from the 'arrivals'"),
    ({"arrivals": "azure.csv", "interval": "1ms"}, "interval", "'interval' comes from"),
    ({"arrivals": "none.csv"}, "arrivals", "none.csv does not exist"),
    ({"requests": 2, "prompt": 10}, "jobs[0]", "needs output (or an 'arrivals' trace"),
])
def test_trace_keys_are_one_line_errors(tmp_path, extra, key, needle):
    write(tmp_path, "azure.csv", AZURE)
    with pytest.raises(ScenarioError) as caught:
        load(tmp_path, job(**extra))
    text = str(caught.value)
    assert needle in text and key in text and "\n" not in text

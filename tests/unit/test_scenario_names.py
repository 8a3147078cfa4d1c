"""Name patterns: shell wildcards, and [N-M] as a range of numbers."""

from __future__ import annotations

from fnmatch import fnmatchcase

import pytest

from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.names import PatternError, is_pattern, matcher
from emulator.scenario.workload import expand_workload

NAMES = [f"srv{i}/gpu{j}" for i in range(20) for j in range(4)] + [
    "a-b", "x]y", "q^r", "back\\slash", "srv[", "node01", "node1", "node12"]


def test_a_bracketed_number_range_means_the_numbers_not_characters():
    hits = [n for n in NAMES if matcher("srv[0-15]/gpu0")(n)]
    assert hits == [f"srv{i}/gpu0" for i in range(16)]  # a shell: srv0, srv1, srv5
    assert [n for n in NAMES if matcher("srv[8-12]/*")(n)] == \
        [f"srv{i}/gpu{j}" for i in range(8, 13) for j in range(4)]
    padded = matcher("node[01-12]")
    assert [padded(n) for n in ("node01", "node1", "node12", "node13")] == [True, False, True, False]


@pytest.mark.parametrize("pattern", [
    "srv*", "srv?/gpu0", "srv[0-3]/gpu[12]", "srv[!0-3]/gpu0", "*/gpu[0-1]", "srv1*", "a[-]b",
    "x[]]y", "q[^]r", "back\\\\slash", "srv[", "[!s]*", "srv[13579]/*", "srv[1-3][0-9]/gpu0"])
def test_other_patterns_match_as_in_the_shell(pattern):
    match = matcher(pattern)
    assert [n for n in NAMES if match(n)] == [n for n in NAMES if fnmatchcase(n, pattern)]


def test_bad_ranges_are_refused_with_the_reason():
    with pytest.raises(PatternError, match=r"range \[5-2\] is empty"):
        matcher("srv[5-2]")
    with pytest.raises(PatternError, match="spans more than 100,000 numbers"):
        matcher("srv[0-999999]")
    assert is_pattern("srv[0-3]") and is_pattern("srv*") and not is_pattern("srv0/gpu0")


def test_a_scenario_names_sixteen_servers_with_one_range():
    topology = {"name": "t", "kind": "rail-optimized", "servers": 17, "gpus_per_server": 1,
                "servers_per_leaf": 17, "spines": 1,
                "host_link": {"rate": "100Mbps", "delay": "5us"},
                "fabric_link": {"rate": "100Mbps", "delay": "5us"}}
    sc = scenario_from_dict({
        "name": "s", "topology": topology, "duration": "1s",
        "workload": {"generators": [{"kind": "incast", "id": "in", "senders": ["srv[0-15]/gpu0"],
                                     "receiver": "srv16/gpu0", "size": "1MB"}]}})
    assert sorted(sc.generators[0].senders) == sorted(f"srv{i}/gpu0" for i in range(16))
    assert sorted(f.src for f in expand_workload(sc)) == sorted(f"srv{i}/gpu0" for i in range(16))

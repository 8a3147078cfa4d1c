"""Run ids and the names a run gives to what it creates (no root)."""

from __future__ import annotations

import string

import pytest

from emulator.network.errors import NetworkError
from emulator.network.naming import (
    RUN_ID_RE, check_run_id, netns_name, new_run_id, run_of_ifname, run_of_netns,
    run_of_switch_cmdline, switch_ifalias, switch_ifname,
)


def test_run_ids_are_a_letter_and_three_more():
    ids = {new_run_id() for _ in range(200)}
    assert len(ids) > 150
    for run_id in ids:
        assert RUN_ID_RE.fullmatch(run_id) and run_id[0] in string.ascii_lowercase
        assert check_run_id(run_id) == run_id


@pytest.mark.parametrize("bad", ["1234", "abc", "abcde", "AB12", "a-12"])
def test_bad_run_ids_are_refused(bad):
    with pytest.raises(NetworkError):
        check_run_id(bad)


def test_names_round_trip():
    assert switch_ifname("k3f9", 11, 12) == "afxk3f9s11p12"
    assert run_of_ifname("afxk3f9s11p12") == "k3f9"
    assert netns_name("k3f9", "srv7") == "afx-k3f9-srv7"
    assert run_of_netns("afx-k3f9-srv7") == "k3f9"
    assert switch_ifalias("k3f9", "leaf-r0-0-eth1") == "aifabric:k3f9:leaf-r0-0-eth1"
    assert run_of_switch_cmdline(["x", "--device-id", "1", "-i", "3@afxk3f9s0p3"]) == "k3f9"


def test_interface_names_fit_ifnamsiz():
    assert len(switch_ifname("k3f9", 999, 999)) == 15
    with pytest.raises(NetworkError, match="longer than 15"):
        switch_ifname("k3f9", 1000, 100)


@pytest.mark.parametrize("name", [
    "afx-4242-sw", "afx-12345-h1", "afa-18436-a",   # other tests' pid-based names
    "leaf-r0-0-eth1", "srv0-eth0", "afx4242s0p1", "afxk3f9s0", "eth0",
])
def test_other_names_are_not_ours(name):
    assert run_of_netns(name) is None
    assert run_of_ifname(name) is None
    assert run_of_switch_cmdline(["-i", f"1@{name}"]) is None

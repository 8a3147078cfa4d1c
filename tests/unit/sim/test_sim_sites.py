"""Scale-across on the virtual clock: two sites of fabric.p4 switches joined
by border switches over a 10 km DCI link (50 us one way at 5 us/km).

A lone cross-site flow's completion time is the frame arithmetic of the
issue: serialisation at the line rate, every link's propagation (both sites'
paths plus the DCI's 50 us), store-and-forward of the last frame at every
switch, and the ACK's way back; checked to 0.5 % (the issue asks for 2 %).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from emulator.run.sim import run_sim
from emulator.scenario.loader import scenario_from_dict
from emulator.scenario.spec import SwitchOverride
from emulator.scenario.units import Threshold
from sim_kit import ACK_BYTES, run, scenario, topology, write_wire_bytes


def test_lone_cross_site_flow_pays_both_paths_and_the_dci(tmp_path: Path) -> None:
    rate, delay, dci_delay, size = 100e9, 1e-6, 50e-6, 8_000_000
    topo = topology(2, 2, rate="100Gbps", delay="1us")
    topo["sites"] = {"count": 2, "dci_link": {"rate": "100Gbps", "distance": "10km"}}
    data = scenario("xsite", topo,
                    {"flows": [{"id": "f", "src": "srv0/gpu0", "dst": "srv3/gpu0",
                                "size": "8MB", "start": "0s"}]}, duration="2ms")
    results = run(data, tmp_path)
    flow = results["flows"][0]
    totals = results["totals"]
    assert flow["completed"] and flow["retransmits"] == 0
    assert totals["drops"] == totals["pfc_tx"] == totals["ecn_marked"] == 0
    wire, last = write_wire_bytes(size)
    # host, leaf-spine, spine-border in site 0; the DCI; the same in site 1
    delays = [delay] * 3 + [dci_delay] + [delay] * 3
    switches = len(delays) - 1
    expected = (wire * 8 / rate + sum(delays) + switches * last * 8 / rate
                + sum(delays) + len(delays) * ACK_BYTES * 8 / rate)
    assert flow["fct_s"] == pytest.approx(expected, rel=0.005)
    # the data crossed the DCI link once
    dci = [row for row in results["links"] if row["network"] == "dci"]
    assert len(dci) == 1 and dci[0]["bytes_ab"] >= wire


def test_networks_block_splits_backend_and_dci_and_adds_up(tmp_path: Path) -> None:
    """Two GPUs of site 0 send to one GPU of site 1: the DCI carries the
    cross-site bytes; the queue builds where the two flows meet, on the
    backend (site 0's leaf uplink), so ECN marks and pauses are counted
    there; the networks add up to the totals."""
    topo = topology(2, 1, rate="10Gbps", delay="1us")
    topo["sites"] = {"count": 2, "dci_link": {"rate": "10Gbps", "delay": "20us"}}
    flows = [{"id": f"f{s}", "src": f"srv{s}/gpu0", "dst": "srv2/gpu0", "size": "200KB",
              "start": "0s"} for s in range(2)]
    results = run(scenario("xsite-net", topo, {"flows": flows}, duration="3ms"), tmp_path)
    networks = results["networks"]
    assert list(networks) == ["backend", "dci"]
    assert networks["dci"]["links"] == 1
    # both flows' data crossed the one DCI link once
    assert networks["dci"]["bytes"] >= 2 * write_wire_bytes(200_000)[0]
    assert networks["dci"]["busiest_link"] == "s0-border0:2-s1-border0:2"
    assert networks["backend"]["ecn_marked"] > 0 and networks["dci"]["ecn_marked"] == 0
    links = results["links"]
    assert sum(n["bytes"] for n in networks.values()) \
        == sum(r["bytes_ab"] + r["bytes_ba"] for r in links)
    totals = results["totals"]
    for counter in ("drops", "ecn_marked", "pfc_tx"):
        assert sum(n[counter] for n in networks.values()) == totals[counter]
    assert max(n["max_link_util"] for n in networks.values()) == totals["max_link_util"]
    assert {r["network"] for r in links if "border" in r["a"] and "border" in r["b"]} == {"dci"}


def _incast_data(dci: str = "lossless", **switches: Any) -> dict:
    # srv0 (site 0, over a 10 km, 100 Gb/s DCI) and srv6 (site 1, another
    # leaf) send 3 MB each to srv4 (site 1): site 1's spine port to the
    # receiver's leaf is asked for twice its rate, so the spine pauses its
    # border, which pauses site 0's border across the DCI, with
    # 2 x 100 Gb/s x 50 us = 1.25 MB in flight when the pause takes hold.
    topo = topology(4, 1, rate="100Gbps", delay="1us", per_leaf=2)
    topo["sites"] = {"count": 2, "dci_link": {"rate": "100Gbps", "distance": "10km"}}
    flows = [{"id": f"f{i}", "src": f"srv{i}/gpu0", "dst": "srv4/gpu0", "size": 3_000_000}
             for i in (0, 6)]
    return scenario("xsite-incast", topo, {"flows": flows}, duration="3ms",
                    switches={"buffer": "400KB", "ecn": {"enabled": False},
                              "pfc": {"enabled": True, "xoff": "60KB", "xon": "48KB",
                                      "dci": dci}, **switches},
                    hosts={"mtu": "4096B", "dcqcn": {"enabled": False}})


def _cross_site_incast(headroom_bytes: int | None,
                       dci: str = "lossless") -> tuple[Any, str, int]:
    loaded = scenario_from_dict(_incast_data(dci), "<xsite-incast>")
    border = loaded.topology.switch("s1-border0")
    port = next(p.number for p in border.ports if p.peer == "s0-border0")
    if headroom_bytes is None:
        return loaded, border.name, port
    # forced below what the loader allows (it would refuse this file)
    small = SwitchOverride(border.name, port,
                           pfc={"headroom": Threshold(headroom_bytes, "bytes")})
    return (replace(loaded, switches=replace(loaded.switches, overrides=(small,))),
            border.name, port)


def test_cross_site_incast_lossless_with_the_computed_headroom_drops_below_it(
        tmp_path: Path) -> None:
    computed, border, port = _cross_site_incast(None)
    good = run_sim(computed, tmp_path / "good", progress=False)
    assert good["totals"]["drops"] == 0 and good["totals"]["flows_incomplete"] == 0
    slot = good["switches"][border][str(port)]["3"]
    # the DCI port paused site 0 and its headroom took what was on the fibre
    assert slot["pfc_tx"] > 0 and slot["headroom_max_bytes"] > 300_000
    forced, _, _ = _cross_site_incast(300_000)  # < 2 x 100 Gb/s x 50 us = 1.25 MB
    bad = run_sim(forced, tmp_path / "bad", progress=False)
    reasons = bad["switches"][border]["_drops_by_reason"]
    print(f"\nDCI headroom peak with the computed headroom {slot['headroom_max_bytes']} B; "
          f"forced to 300 KB: drops {reasons}")
    assert reasons.get("headroom_overflow", 0) > 0 and "tail" not in reasons
    # the frames the DCI port's headroom could not take are the DCI's drops
    assert bad["networks"]["dci"]["drops"] == reasons["headroom_overflow"]
    assert bad["networks"]["backend"]["drops"] == 0


def test_dci_ports_made_lossy_by_an_override_never_pause_across_the_dci(
        tmp_path: Path) -> None:
    """The class lossy on the DCI only (README "Sites"): ``switches.pfc.dci:
    lossy`` turns PFC off on both borders' DCI ports (the overrides the file
    could write itself); the far site is never paused over the fibre and no
    DCI headroom is used. What the DCI delivers while site 1's spine pauses
    the border then queues in the border and is tail-dropped there (the
    senders go back and retransmit): the price of a lossy DCI."""
    scenario, border, port = _cross_site_incast(None, dci="lossy")
    far = scenario.topology.switch("s0-border0")
    far_port = next(p.number for p in far.ports if p.peer == border)
    dci_ends = {(link.node_a, link.port_a) for link in scenario.topology.links
                if link.network == "dci"} | {(link.node_b, link.port_b) for link in
                                             scenario.topology.links if link.network == "dci"}
    assert {(o.switch, o.port) for o in scenario.switches.overrides} == dci_ends
    assert (far.name, far_port) in dci_ends
    assert all(not scenario.switches.for_port(*end).pfc.enabled for end in dci_ends)
    assert scenario.switches.for_port(border, 1).pfc.enabled  # inside the site: lossless
    results = run_sim(scenario, tmp_path, progress=False)
    assert results["networks"]["dci"]["pfc_tx"] == 0
    assert results["switches"][border][str(port)]["3"]["headroom_max_bytes"] == 0
    assert results["totals"]["flows_incomplete"] == 0
    assert results["switches"][border]["_drops_by_reason"].get("tail", 0) > 0
    assert results["totals"]["retransmits"] > 0


def test_dci_key_errors_and_the_pool_hint_are_one_line() -> None:
    from emulator.scenario import ScenarioError
    # a pool too small for the DCI's headroom names the lossy way out
    with pytest.raises(ScenarioError, match=r"switches.pool.size.*keep the class lossy on the "
                                            r"DCI \(switches.pfc.dci: lossy\)"):
        scenario_from_dict(_incast_data(pool={"size": "1MB"}), "<x>")
    # the same pool holds once the DCI is lossy
    assert scenario_from_dict(_incast_data("lossy", pool={"size": "1MB"}), "<x>")
    # PFC turned on at a DCI port by an override contradicts the key
    _, border, port = _cross_site_incast(None)
    data = _incast_data("lossy")
    data["switches"]["overrides"] = [{"switch": border, "port": port, "pfc": {"enabled": True}}]
    with pytest.raises(ScenarioError, match=rf"overrides\[0\]\.pfc\.enabled.*DCI port "
                                            rf"{border}:{port}"):
        scenario_from_dict(data, "<x>")
    # an override of a DCI port keeps its other keys, with PFC off
    data["switches"]["overrides"] = [{"switch": border, "port": port, "buffer": "1MB"}]
    merged = scenario_from_dict(data, "<x>").switches.for_port(border, port)
    assert merged.buffer_bytes == 1_000_000 and not merged.pfc.enabled
    # no DCI to make lossy
    one_site = scenario("one", topology(2, 1, rate="10Gbps", delay="1us"), {"flows": []},
                        duration="1ms",
                        switches={"pfc": {"dci": "lossy"}})
    with pytest.raises(ScenarioError, match="switches.pfc.dci.*no DCI links"):
        scenario_from_dict(one_site, "<x>")

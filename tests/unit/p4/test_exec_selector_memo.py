"""An action selector's memo of hashes by selector fields
(emulator.p4.exec.tables.ActionProfile.select): the member it picks is the
one the hash computed afresh picks, across the memo starting over and after
the group changes."""

import zlib

from emulator.p4.exec import tables
from emulator.p4.exec.externs import pack_bits
from emulator.p4.exec.tables import ActionProfile, Entry


def _profile() -> ActionProfile:
    profile = ActionProfile("ecmp", 16, zlib.crc32, 16)
    for m in range(1, 6):
        profile.add_member(m, Entry(None, (m,), None, True))
    profile.set_group(1, [1, 2, 3, 4])
    return profile


def _expected(profile: ActionProfile, group: int, parts) -> Entry:
    members = profile.groups[group]
    return profile.members[members[(zlib.crc32(pack_bits(parts)) & 0xFFFFFFFF) % len(members)]]


def test_memo_picks_as_computed_across_start_over_and_group_change(monkeypatch) -> None:
    monkeypatch.setattr(tables, "SELECTOR_HASHES", 8)
    profile = _profile()
    flows = [((0x0A000001 + i, 32), (0x0A000100, 32), (17, 8), (49152 + i, 16), (4791, 16))
             for i in range(20)]
    picked = set()
    for _round in range(2):
        for parts in flows:
            got = profile.select(1, parts)
            assert got is _expected(profile, 1, parts)
            picked.add(got.args[0])
            assert len(profile._hashes) <= 8
    assert picked == {1, 2, 3, 4}  # the flows spread over every member
    profile.set_group(1, [2, 5])  # a new group: the remembered hashes pick from it
    for parts in flows:
        assert profile.select(1, parts) is _expected(profile, 1, parts)

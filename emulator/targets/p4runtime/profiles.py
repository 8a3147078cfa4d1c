"""Action profiles and selectors: ``ActionProfileMember``,
``ActionProfileGroup`` and one-shot action sets (P4Runtime spec §9.2).

Members are executor entries in ``ActionProfile.members`` under their
member id; a group is the list of its member ids, each repeated ``weight``
times (how PI programs weights into BMv2, see ``ActionProfile.set_group``),
with the weights and ``max_size`` kept beside it for reads. One-shot programming creates a
hidden group and hidden members under negative ids, one member per action of
the set, removed with the table entry; a profile is programmed one way or the
other, never both (§9.2.3, ``INVALID_ARGUMENT``).
"""

from __future__ import annotations

from p4.v1 import p4runtime_pb2

from emulator.p4.exec.tables import ActionProfile, Entry
from emulator.targets.p4runtime.codec import decode_uint, encode_uint
from emulator.targets.p4runtime.context import PipelineContext, ProfileBinding, TableBinding
from emulator.targets.p4runtime.errors import (
    already_exists, failed_precondition, invalid_argument, not_found, permission_denied,
    resource_exhausted, unimplemented,
)
from emulator.p4.p4info.index import ActionInfo, SCOPE_DEFAULT_ONLY, SCOPE_TABLE_ONLY

Update = p4runtime_pb2.Update


# ---- actions (shared with table entries) ------------------------------------------


def decode_action(ctx: PipelineContext, tb: TableBinding, action: p4runtime_pb2.Action,
                  default: bool, what: str) -> tuple[str, list[int]]:
    """Action name and parameter values (in declaration order) of an
    ``Action`` allowed in table ``tb`` (as default action if ``default``)."""
    info = ctx.index.actions.get(action.action_id)
    if info is None:
        raise invalid_argument(f"{what}: unknown action id {action.action_id}")
    scope = tb.info.action_scopes.get(action.action_id)
    if scope is None:
        raise invalid_argument(f"{what}: action {info.name} is not an action of table "
                               f"{tb.info.name}")
    if default and scope == SCOPE_TABLE_ONLY:
        raise permission_denied(f"{what}: action {info.name} is @tableonly")
    if not default and scope == SCOPE_DEFAULT_ONLY:
        raise permission_denied(f"{what}: action {info.name} is @defaultonly")
    return info.name, decode_params(info, action.params, what)


def decode_params(info: ActionInfo, params, what: str) -> list[int]:  # type: ignore[no-untyped-def]
    values: dict[int, int] = {}
    for p in params:
        param = info.params_by_id.get(p.param_id)
        if param is None:
            raise invalid_argument(f"{what}: action {info.name} has no parameter id {p.param_id}")
        if p.param_id in values:
            raise invalid_argument(f"{what}: parameter {param.name} given twice")
        values[p.param_id] = decode_uint(p.value, param.bitwidth,
                                         f"{what}: parameter {param.name}")
    missing = [p.name for p in info.params if p.id not in values]
    if missing:
        raise invalid_argument(f"{what}: action {info.name} is missing parameter(s) "
                               f"{', '.join(missing)}")
    return [values[p.id] for p in info.params]


def encode_action(ctx: PipelineContext, entry: Entry) -> p4runtime_pb2.Action:
    assert entry.action is not None
    info = ctx.index.actions[ctx.action_ids[entry.action.name]]
    out = p4runtime_pb2.Action(action_id=info.id)
    for param, value in zip(info.params, entry.args):
        out.params.add(param_id=param.id, value=encode_uint(value))
    return out


# ---- members ---------------------------------------------------------------------------


def _member_entry(ctx: PipelineContext, pb: ProfileBinding, action: p4runtime_pb2.Action,
                  what: str) -> Entry:
    if not pb.tables:
        raise invalid_argument(f"{what}: the action profile implements no table")
    tb = pb.tables[0]
    name, values = decode_action(ctx, tb, action, False, what)
    return tb.table.make_entry(name, values)


def write_member(ctx: PipelineContext, update_type: int,
                 msg: p4runtime_pb2.ActionProfileMember) -> None:
    pb = ctx.profile(msg.action_profile_id)
    profile = pb.profile
    what = f"action profile {profile.name} member {msg.member_id}"
    if msg.member_id == 0:
        raise invalid_argument(f"{what}: 0 is not a valid member id")
    exists = msg.member_id in profile.members
    if update_type == Update.INSERT:
        _manual(pb, what)
        if exists:
            raise already_exists(f"{what}: already exists")
        if not msg.HasField("action"):
            raise invalid_argument(f"{what}: action must be set")
        entry = _member_entry(ctx, pb, msg.action, what)
        if len(profile.members) >= profile.size:
            raise resource_exhausted(f"{what}: action profile is full ({profile.size} members)")
        profile.members[msg.member_id] = entry
        pb.mode = "manual"
    elif update_type == Update.MODIFY:
        if not exists:
            raise not_found(f"{what}: no such member")
        if not msg.HasField("action"):
            raise invalid_argument(f"{what}: action must be set")
        profile.members[msg.member_id] = _member_entry(ctx, pb, msg.action, what)
    elif update_type == Update.DELETE:
        if not exists:
            raise not_found(f"{what}: no such member")
        groups = [g for g, members in profile.groups.items() if msg.member_id in members]
        if groups:
            raise failed_precondition(f"{what}: member of group(s) {groups}")
        if msg.member_id in referenced(pb)[0]:
            raise failed_precondition(f"{what}: used by a table entry")
        del profile.members[msg.member_id]
        _maybe_reset(pb)
    else:
        raise invalid_argument(f"{what}: update type not set")


def read_members(ctx: PipelineContext, msg: p4runtime_pb2.ActionProfileMember) -> list[p4runtime_pb2.Entity]:
    out = []
    for pid in _profile_ids(ctx, msg.action_profile_id):
        profile = ctx.profiles[pid].profile
        for mid, entry in profile.members.items():
            if mid < 0 or (msg.member_id and mid != msg.member_id):
                continue
            entity = p4runtime_pb2.Entity()
            m = entity.action_profile_member
            m.action_profile_id = pid
            m.member_id = mid
            m.action.CopyFrom(encode_action(ctx, entry))
            out.append(entity)
    return out


# ---- groups ------------------------------------------------------------------------------


def _group_members(pb: ProfileBinding, members, max_size: int,  # type: ignore[no-untyped-def]
                   what: str) -> dict[int, int]:
    """member id -> weight of a group's member list, checked."""
    weights: dict[int, int] = {}
    for m in members:
        if m.member_id in weights:
            raise invalid_argument(f"{what}: member {m.member_id} listed twice (use weights)")
        if m.weight <= 0:
            raise invalid_argument(f"{what}: member {m.member_id}: weight must be positive")
        if m.watch or m.watch_port:
            raise unimplemented(f"{what}: watch ports")
        if m.member_id not in pb.profile.members:
            raise not_found(f"{what}: no member {m.member_id}")
        weights[m.member_id] = m.weight
    limit = max_size or pb.msg.max_group_size
    if limit and sum(weights.values()) > limit:
        raise resource_exhausted(f"{what}: sum of weights {sum(weights.values())} above {limit}")
    return weights


def _set_group(profile: ActionProfile, gid: int, weights: dict[int, int], max_size: int) -> None:
    # The executor orders the weighted member list the way BMv2 selects.
    profile.set_group(gid, list(weights), list(weights.values()))
    profile.group_weights[gid] = dict(weights)
    profile.group_max_size[gid] = max_size


def _drop_group(profile: ActionProfile, gid: int) -> None:
    profile.groups.pop(gid, None)
    profile.group_weights.pop(gid, None)
    profile.group_max_size.pop(gid, None)


def write_group(ctx: PipelineContext, update_type: int,
                msg: p4runtime_pb2.ActionProfileGroup) -> None:
    pb = ctx.profile(msg.action_profile_id)
    profile = pb.profile
    what = f"action profile {profile.name} group {msg.group_id}"
    if not profile.with_selector:
        raise invalid_argument(f"{what}: {profile.name} is not an action selector")
    if msg.group_id == 0:
        raise invalid_argument(f"{what}: 0 is not a valid group id")
    exists = msg.group_id in profile.groups
    if update_type == Update.INSERT:
        _manual(pb, what)
        if exists:
            raise already_exists(f"{what}: already exists")
        if msg.max_size < 0 or (pb.msg.max_group_size and msg.max_size > pb.msg.max_group_size):
            raise invalid_argument(f"{what}: max_size {msg.max_size} outside 0.."
                                   f"{pb.msg.max_group_size or 'unlimited'}")
        weights = _group_members(pb, msg.members, msg.max_size, what)
        _set_group(profile, msg.group_id, weights, msg.max_size)
        pb.mode = "manual"
    elif update_type == Update.MODIFY:
        if not exists:
            raise not_found(f"{what}: no such group")
        if msg.max_size != profile.group_max_size.get(msg.group_id, 0):
            raise invalid_argument(f"{what}: max_size cannot change after the group is created")
        weights = _group_members(pb, msg.members, msg.max_size, what)
        _set_group(profile, msg.group_id, weights, msg.max_size)
    elif update_type == Update.DELETE:
        if not exists:
            raise not_found(f"{what}: no such group")
        if msg.group_id in referenced(pb)[1]:
            raise failed_precondition(f"{what}: used by a table entry")
        _drop_group(profile, msg.group_id)
        _maybe_reset(pb)
    else:
        raise invalid_argument(f"{what}: update type not set")


def read_groups(ctx: PipelineContext, msg: p4runtime_pb2.ActionProfileGroup) -> list[p4runtime_pb2.Entity]:
    out = []
    for pid in _profile_ids(ctx, msg.action_profile_id):
        profile = ctx.profiles[pid].profile
        for gid in profile.groups:
            if gid < 0 or (msg.group_id and gid != msg.group_id):
                continue
            entity = p4runtime_pb2.Entity()
            g = entity.action_profile_group
            g.action_profile_id = pid
            g.group_id = gid
            g.max_size = profile.group_max_size.get(gid, 0)
            for mid, weight in profile.group_weights.get(gid, {}).items():
                g.members.add(member_id=mid, weight=weight)
            out.append(entity)
    return out


# ---- table entries pointing into a profile ------------------------------------------


def resolve_indirect(ctx: PipelineContext, tb: TableBinding, action: p4runtime_pb2.TableAction,
                     entry: Entry, what: str) -> p4runtime_pb2.ActionProfileActionSet | None:
    """Point ``entry`` at a member, a group, or a new one-shot group; returns
    the one-shot action set (kept for reads) or None."""
    pb = ctx.profiles[tb.profile_id]
    profile = pb.profile
    kind = action.WhichOneof("type")
    if kind == "action":
        raise invalid_argument(f"{what}: table {tb.info.name} is indirect, give a member or group")
    if kind == "action_profile_member_id":
        if pb.mode == "oneshot":
            raise invalid_argument(f"{what}: {profile.name} is programmed with one-shots")
        if action.action_profile_member_id not in profile.members or \
                action.action_profile_member_id <= 0:
            raise not_found(f"{what}: no member {action.action_profile_member_id}")
        entry.member = action.action_profile_member_id
        return None
    if not profile.with_selector:
        raise invalid_argument(f"{what}: {profile.name} is not an action selector")
    if kind == "action_profile_group_id":
        if pb.mode == "oneshot":
            raise invalid_argument(f"{what}: {profile.name} is programmed with one-shots")
        if action.action_profile_group_id not in profile.groups or \
                action.action_profile_group_id <= 0:
            raise not_found(f"{what}: no group {action.action_profile_group_id}")
        entry.group = action.action_profile_group_id
        return None
    if kind == "action_profile_action_set":
        entry.group = _oneshot_group(ctx, pb, tb, action.action_profile_action_set, what)
        return action.action_profile_action_set
    raise invalid_argument(f"{what}: action must be set")


def _oneshot_group(ctx: PipelineContext, pb: ProfileBinding, tb: TableBinding,
                   action_set: p4runtime_pb2.ActionProfileActionSet, what: str) -> int:
    profile = pb.profile
    if pb.mode == "manual":
        raise invalid_argument(f"{what}: {profile.name} is programmed with members and groups")
    actions = list(action_set.action_profile_actions)
    if not actions:
        raise invalid_argument(f"{what}: empty one-shot action set")
    members = []
    for a in actions:
        if a.weight <= 0:
            raise invalid_argument(f"{what}: one-shot weight must be positive")
        if a.watch or a.watch_port:
            raise unimplemented(f"{what}: watch ports")
        name, values = decode_action(ctx, tb, a.action, False, what)
        members.append((tb.table.make_entry(name, values), a.weight))
    total = sum(w for _, w in members)
    if pb.msg.max_group_size and total > pb.msg.max_group_size:
        raise resource_exhausted(f"{what}: sum of weights {total} above {pb.msg.max_group_size}")
    if len(profile.members) + len(members) > profile.size:
        raise resource_exhausted(f"{what}: action profile is full ({profile.size} members)")
    weights: dict[int, int] = {}
    for member, weight in members:
        mid = next(ctx.hidden_ids)
        profile.members[mid] = member
        weights[mid] = weight
    gid = next(ctx.hidden_ids)
    _set_group(profile, gid, weights, 0)
    pb.mode = "oneshot"
    return gid


def release_oneshot(ctx: PipelineContext, tb: TableBinding, gid: int) -> None:
    """Remove a one-shot group and its members."""
    pb = ctx.profiles[tb.profile_id]
    for mid in pb.profile.group_weights.get(gid, {}):
        pb.profile.members.pop(mid, None)
    _drop_group(pb.profile, gid)
    _maybe_reset(pb)


def referenced(pb: ProfileBinding) -> tuple[set[int], set[int]]:
    """Member ids and group ids used by table entries of the profile's tables."""
    members: set[int] = set()
    groups: set[int] = set()
    for tb in pb.tables:
        for e in tb.table.all_entries():
            if e.member is not None:
                members.add(e.member)
            if e.group is not None:
                groups.add(e.group)
    return members, groups


def _manual(pb: ProfileBinding, what: str) -> None:
    if pb.mode == "oneshot":
        raise invalid_argument(f"{what}: {pb.profile.name} is programmed with one-shots")


def _maybe_reset(pb: ProfileBinding) -> None:
    if not pb.profile.members and not pb.profile.groups:
        pb.mode = None


def _profile_ids(ctx: PipelineContext, profile_id: int) -> list[int]:
    if profile_id == 0:
        return list(ctx.profiles)
    ctx.profile(profile_id)
    return [profile_id]

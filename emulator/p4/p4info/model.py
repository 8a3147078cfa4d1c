"""The P4Info model: a neutral description of a program's control-plane objects.

The front end converts its IR into these dataclasses; :func:`build_p4info`
(``build.py``) turns them into the ``p4.config.v1.P4Info`` message that
``p4c-bm2-ss --arch v1model --p4runtime-files x.p4info.txtpb`` writes for the
same program.  The model carries *names, widths, annotations and order*; the
builder computes ids, aliases, scopes, field ids, table_ids of action
profiles, the ``type_info`` section and p4c's omissions.

Sources for every rule below: p4c ``control-plane/p4RuntimeSerializer.cpp``,
``p4RuntimeSymbolTable.cpp``, ``p4RuntimeArchHandler.{h,cpp}``,
``p4RuntimeArchStandard.{h,cpp}``, ``typeSpecConverter.cpp``,
``flattenHeader.cpp``, ``bytestrings.cpp``; front end
``frontends/p4/{hierarchicalNames,tableKeyNames,localizeActions,inlining,
uniqueNames,createBuiltins,unusedDeclarations}.cpp``, ``frontends/p4/
frontend.cpp`` (pass order), ``frontends/p4/evaluator/evaluator.cpp``;
``ir/base.cpp`` (``externalName``/``controlPlaneName``); checked against the
expected outputs ``testdata/p4_16_samples_outputs/*.p4info.txtpb``.  P4Info is
generated right after the front end (``backends/bmv2/simple_switch/main.cpp``),
i.e. on the front end's output, before the mid end.

Names: how p4c forms control-plane names
========================================

``externalName`` of a declaration is the argument of its ``@name`` annotation
if it has one, else its identifier; ``controlPlaneName`` is that with one
leading ``.`` removed.  The front end (``UniqueNames``, ``LocalizeAllActions``,
``Inline``, ``HierarchicalNames``) gives every externally visible object a
``@name`` before P4Info is built, which yields these rules (``C`` is the
name of the *control/parser type* in which the object is declared, e.g.
``MyIngress`` -- the type name, never an instance name, never ``C``'s own
``@name``):

* **Table, action, extern instance (counter, meter, register,
  direct_counter, direct_meter, action_profile, action_selector),
  value_set declared in control/parser ``C``**: ``C.x`` where ``x`` is the
  identifier, or the ``@name("x")`` argument if relative.
  ``@name(".x")`` (absolute) gives ``x``: no prefix, dot dropped.
  Examples: ``MyIngress.ipv4_lpm``, ``MyIngress.ipv4_forward``,
  ``MyParser.pvs``; ``@name("namedmeter")`` in ``ingress`` ->
  ``ingress.namedmeter``; ``@name(".foo")`` -> ``foo``.
* **Top-level (global) actions**: their own name, no prefix (p4c clones them
  into each control that uses them with ``@name(".<name>")``): ``NoAction``,
  ``@name("x") action a`` at top level -> ``x``.  A top-level extern
  instance likewise keeps its bare name.
* **Objects of a control ``D`` instantiated inside ``C``** (``D() d;`` then
  ``d.apply()``; the front end inlines it): ``C.<inst>.x`` where ``<inst>``
  is the instance's externalName (``@name`` of the instance or its
  identifier); absolute names (``.x``) are kept as ``x``; the prefixing
  repeats for each nesting level.  A control applied directly by type
  (``E.apply(...)`` with no instance declared) gets an instance named after
  the type: ``cIngress.E.c1.stats`` for counter ``stats`` of instance ``c1``
  inside control type ``E`` applied directly from ``cIngress``.
* **Externs constructed in place in a table property**
  (``implementation = action_selector(...)``, ``counters =
  direct_counter(...)``, ``meters = direct_meter(...)``): the property must
  carry ``@name``; the name is that string *verbatim* (not prefixed with the
  control, leading dot stripped): ``@name("ap_ws") implementation = ...`` ->
  ``ap_ws``.  Without ``@name`` p4c rejects the program.  ``@id`` on such a
  property is ignored.
* **Action parameters**: the parameter identifier as written (or its
  ``@name``); never prefixed.  Only directionless parameters are listed
  (``in``/``out``/``inout`` ones are bound by the caller and removed by the
  front end: ``action my_drop(inout standard_metadata_t m)`` has no params).
* **Match fields** (``MatchField.name``): the key element's ``@name``
  string *verbatim* (a leading dot is kept) if the user wrote one; otherwise
  the name that ``TableKeyNames`` derives from the key expression *as
  written in the source* (before any renaming or inlining, so it uses the
  control's parameter names, e.g. ``hdr``/``meta``/``standard_metadata``):

  - path ``x`` -> ``x``; member ``e.f`` -> ``<e>.f``:
    ``hdr.ipv4.dstAddr``, ``meta.x``, ``standard_metadata.ingress_port``;
    if struct/header field ``f`` has ``@name("g")`` the component is ``g``,
    and if that starts with ``.`` the whole name is ``g`` without the dot;
  - ``h.isValid()`` on a header or header union -> ``<h>.$valid$``
    (``hdr.ipv4.$valid$``; bitwidth 1);
  - array index ``e[i]`` -> ``<e>[<i>]`` (``hdr.mpls[0].label``; a
    non-constant index is named too: ``hdrs.vlan_tag[meta.depth].vid``);
  - slice ``e[h:l]`` -> ``<e>[h:l]`` (``hdr.ethernet.srcAddr[22:18]``;
    bitwidth ``h-l+1``);
  - ``e & c`` -> ``<e> & <c>`` with spaces;
  - integer constants print in the base they were written in, without
    width prefix and without leading zeros: ``0x010101010101`` ->
    ``0x10101010101``, ``8w0xFF`` -> ``0xff`` (lower-case hex digits),
    binary ``0b...``, octal ``0o...``, decimal plain, negative ``-``;
  - anything else (casts, arithmetic, other method calls) makes p4c fail
    with "Complex key expression requires a @name annotation".

  ``MatchField.bitwidth`` is the width of the key expression's type (for a
  type with ``@p4runtime_translation(uri, W)`` it is ``W``).  Key elements
  whose match kind is ``selector`` are dropped from P4Info but still take a
  field id; leave them in the model with ``match_kind="selector"``.
* **Controller headers**: symbol (id hash, alias computation) = the header
  *type's* control-plane name (``packet_in_header_t``); the P4Info name and
  alias are the ``@controller_header("packet_in")`` string.  Fields of a
  header that contains structs are flattened: nested field ``s.f`` is named
  ``s.f`` (p4c ``FlattenHeader``), in declaration order, depth first.
* **Digests** (v1model ``digest<T>(receiver, data)``): the control-plane name
  of ``T``'s declaration (struct/header name or its ``@name``), not
  prefixed; if ``T`` has no name (a tuple / list expression) p4c invents
  ``digest_0``, ``digest_1``, ... in order of first encounter.
* **Struct/header/enum member names in type_info**: field identifiers (or
  their ``@name``).

``@hidden`` (p4c ``isHidden``): hidden tables, actions and controller headers
and hidden fields of a controller header are left out of P4Info, but they
stay in the symbol table (they take ids and count for aliases; hidden fields
take field ids).  ``@hidden`` on anything else (externs, params, keys) has no
effect.  Set ``hidden=True`` in the model.

Which objects p4c lists (v1model)
=================================

* Tables: every table left after the front end.  Tables never applied are
  removed by the front end (``RemoveAllUnusedDeclarations``) -- do not put
  them in the model.
* Actions: every action left after the front end: those named in a table
  (``actions``/``default_action``/``entries``) or called directly from an
  apply block.  Declared-but-unreferenced actions are removed, and so is an
  action that is only called from other actions (the front end inlines
  action-to-action calls, then deletes the callee as unused).  Each action
  is listed once even when the front end duplicated it per table (dedup by
  name).
* Extern instances (counter, meter, register, action_profile,
  action_selector) are listed even when unused (the front end never deletes
  extern instances).  Direct counters/meters are listed only through the
  table that uses them (in table order); one attached to no table is not
  listed but is still a symbol (put it in ``direct_counters`` anyway, the
  builder drops it).
* Digests: one per distinct digest type name, in order of the ``digest()``
  calls; annotations are never emitted for v1model digests.
* Controller headers: every header type with ``@controller_header``, in
  program order of the type declarations (including unused ones).
* Value sets: every ``value_set`` in a parser.
* A table without ``default_action`` gets ``default_action = NoAction()``
  (not const) and, when ``NoAction`` is not in its actions list,
  ``NoAction`` is appended with ``@defaultonly`` (p4c ``CreateBuiltins``).
  Model it with ``default_action=None`` and the builder applies the rule.
* ``size``: the ``size`` property; absent or 0 -> 1024 (v1model default).
* ``const_default_action_id`` only for ``const default_action``;
  ``initial_default_action`` always (action id + the arguments, each as a
  big-endian byte string of ``ceil(width/8)`` bytes, ``param_id`` = the
  parameter's ``@id`` or its 1-based position).
* ``is_const_table`` iff the table has ``const entries`` (even an empty
  list); ``has_initial_entries`` iff it has at least one entry (``entries``
  or ``const entries``).
* ``idle_timeout_behavior`` = NOTIFY_CONTROL iff ``support_timeout = true``.
* Action profiles/selectors: ``size`` = the ``size`` constructor argument
  (``action_selector(algo, size, width)`` -> ``size``); ``max_group_size``
  only from ``@max_group_size(N)``; ``@selector_size_semantics("sum_of_
  weights"|"sum_of_members")`` and ``@max_member_weight(N)`` likewise (all
  three only for selectors; the annotations themselves are not copied);
  ``table_ids`` = every table whose ``implementation`` names it, ordered by
  table *name* (byte order).
* ``type_info`` is present iff p4c touched it: any listed table, any
  listed action with a parameter, any controller header field, any extern
  instance declared with a declaration (not in-place), any digest, or any
  extern *function* call (``mark_to_drop``, ``hash``, ``verify_checksum``,
  ...) inside a control -- set ``calls_extern_functions`` for the last one.
  Its content is the closure of the named types reached from match-field
  types, action-param types, controller-header field types, register and
  digest types (new types, serializable enums, structs, headers, ...).
* ``pkg_info.arch`` = ``v1model``; ``@pkginfo(name=..., version=...,
  organization=..., contact=..., url=..., arch=...)`` and
  ``@platform_property(...)`` on the ``main`` declaration fill the other
  fields; other annotations on ``main`` go to ``pkg_info.annotations``.

Annotations
===========

For every object pass *all* its annotations in source order
(:class:`Annotation` with p4c's rendering); the builder drops those p4c
drops: ``@name``, ``@id``, ``@brief``, ``@description`` everywhere (put the
latter two in ``brief``/``description``: they become ``doc``), ``@match`` on
value-set fields, ``@max_group_size``/``@selector_size_semantics``/
``@max_member_weight`` on action profiles, ``@pkginfo``/``@platform_property``
on the package, ``@p4runtime_translation`` on new types.  Everything else is
kept, including ``@noWarn("unused")`` (v1model's ``NoAction``),
``@defaultonly``/``@tableonly`` on action refs (they also set the scope),
``@controller_header("...")`` and ``@hidden``.  Rendering (p4c ``ToP4``):

* no body: ``@defaultonly`` (no parentheses);
* an *unparsed* body (any annotation p4c does not know, e.g. ``@format``,
  ``@refers_to``): the tokens joined with single spaces, string literal
  tokens in double quotes: ``@format(IPV4_ADDRESS)``,
  ``@refers_to(vrf_table , vrf_id)``, ``@p4runtime_role("sdn_controller")``
  -> :meth:`Annotation.from_tokens`;
* a *parsed* body (``@name``, ``@noWarn``, ``@deprecated``, ``@length``,
  ``@controller_header``, ``@id``, ``@brief``, ``@description``,
  ``@max_group_size``, ...): the expressions printed as P4 and joined with
  ``", "``: ``@noWarn("unused")``, ``@controller_header("packet_in")``
  -> :meth:`Annotation.from_exprs`.

Structured annotations (``@x[...]``) go to :class:`StructuredAnnotation`
(all kept, never filtered).

Order
=====

p4c does not sort P4Info lists (only ``type_info`` maps, which the text
format prints sorted by key); each list is in the order the serializer meets
the objects, and the builder keeps the order of the model's lists.  p4c
walks the evaluated program breadth first: first the top-level blocks in
``main``'s argument order (v1model: parser, verifyChecksum, ingress, egress,
computeChecksum, deparser; global extern instances declared before ``main``
come before them), then the contents of each of those blocks in that order
(tables and extern instances in declaration order after the front end).
Hence:

* ``actions``: control by control in ``main``'s argument order; inside a
  control, first the *global* actions the control uses (``NoAction``, ...)
  in the order of their first reference in the control's text (tables'
  ``actions``/``default_action`` lists, action bodies and the apply block in
  source order), then the control's own actions in declaration order.  An
  action already listed (same name) is skipped.
* Sub-controls: the front end inlines an instantiated control, putting its
  locals (actions, tables, externs) where the instance is declared in the
  caller; a control applied directly by type (``D.apply()``) counts as an
  instance declared *after* all the caller's own locals.  (Seen in p4c's
  ``actions-almost-duplicate-names1.p4``: ``ingressImpl.t1`` before
  ``ingressImpl.c1.t2``, ``ingressImpl.*`` actions before
  ``ingressImpl.c1.bar``.)
* ``tables``: control by control, in declaration order (not apply order).
* ``action_profiles``, ``counters``, ``meters``, ``registers``: control by
  control, in declaration order; an action profile constructed in place is
  at the position of its table.
* ``direct_counters``/``direct_meters``: the builder emits them in the order
  of the tables that use them.
* ``digests``: in the order the ``digest()`` calls appear, control by
  control, within a control first the actions (declaration order, each
  action's calls in order) then the apply block.
* ``controller_headers``: header type declarations in program order.
* ``value_sets``: parser by parser, declaration order.
* Key fields, params, header fields, struct members: declaration order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence, Union

# --------------------------------------------------------------------------
# Annotations


@dataclass(frozen=True)
class Annotation:
    """An unstructured annotation: ``name`` and its full p4c rendering.

    ``text`` is what P4Info shows, e.g. ``'@format(IPV4_ADDRESS)'``; when
    None it is ``'@' + name`` (an annotation without body).
    """

    name: str
    text: Optional[str] = None

    def render(self) -> str:
        return self.text if self.text is not None else "@" + self.name

    @classmethod
    def from_tokens(cls, name: str, tokens: Sequence[str]) -> "Annotation":
        """An unparsed annotation: ``tokens`` joined by single spaces.

        String-literal tokens must be given with their double quotes.
        """
        if not tokens:
            return cls(name)
        return cls(name, "@%s(%s)" % (name, " ".join(tokens)))

    @classmethod
    def from_exprs(cls, name: str, exprs: Sequence[str]) -> "Annotation":
        """A parsed annotation: expressions (already printed) joined by ', '."""
        if not exprs:
            return cls(name)
        return cls(name, "@%s(%s)" % (name, ", ".join(exprs)))

    @classmethod
    def string(cls, name: str, value: str) -> "Annotation":
        """A parsed annotation with one string literal: ``@name("value")``."""
        return cls(name, '@%s("%s")' % (name, value))


StructuredValue = Union[int, bool, str]


@dataclass(frozen=True)
class StructuredAnnotation:
    """``@name[e1, e2]`` (expressions) or ``@name[k1=v1, k2=v2]`` (kv_pairs)."""

    name: str
    expressions: Optional[tuple[StructuredValue, ...]] = None
    kv_pairs: Optional[tuple[tuple[str, StructuredValue], ...]] = None


@dataclass(kw_only=True)
class Annotated:
    """Annotations, structured annotations and documentation of an object."""

    annotations: list[Annotation] = field(default_factory=list)
    structured_annotations: list[StructuredAnnotation] = field(default_factory=list)
    brief: Optional[str] = None  # @brief("...")
    description: Optional[str] = None  # @description("...")


# --------------------------------------------------------------------------
# Data types (P4DataTypeSpec) and named types (P4TypeInfo)


@dataclass(frozen=True)
class Bits:
    """``bit<W>`` (or ``int<W>`` with ``signed=True``)."""

    width: int
    signed: bool = False


@dataclass(frozen=True)
class Varbit:
    max_width: int


@dataclass(frozen=True)
class Bool:
    pass


@dataclass(frozen=True)
class ErrorRef:
    """The ``error`` type."""


@dataclass(frozen=True)
class TupleOf:
    members: tuple["TypeSpec", ...]


@dataclass(frozen=True)
class StructRef:
    name: str


@dataclass(frozen=True)
class HeaderRef:
    name: str


@dataclass(frozen=True)
class HeaderUnionRef:
    name: str


@dataclass(frozen=True)
class EnumRef:
    name: str


@dataclass(frozen=True)
class SerEnumRef:
    name: str


@dataclass(frozen=True)
class NewTypeRef:
    """A ``type`` declaration (not a typedef: typedefs are resolved away)."""

    name: str


@dataclass(frozen=True)
class HeaderStack:
    header: str
    size: int


@dataclass(frozen=True)
class HeaderUnionStack:
    header_union: str
    size: int


TypeSpec = Union[
    Bits, Varbit, Bool, ErrorRef, TupleOf, StructRef, HeaderRef, HeaderUnionRef,
    EnumRef, SerEnumRef, NewTypeRef, HeaderStack, HeaderUnionStack,
]


@dataclass
class StructDef:
    name: str
    members: list[tuple[str, TypeSpec]]


@dataclass
class HeaderDef:
    """Members are the *flattened* fields (``s.f`` for a nested struct)."""

    name: str
    members: list[tuple[str, Union[Bits, Varbit]]]


@dataclass
class HeaderUnionDef:
    name: str
    members: list[tuple[str, str]]  # (member name, header type name)


@dataclass
class EnumDef:
    name: str
    members: list[str]


@dataclass
class SerEnumDef:
    name: str
    width: int
    members: list[tuple[str, int]]


@dataclass(kw_only=True)
class NewTypeDef(Annotated):
    """``type T NAME``.

    ``original`` is the spec of the type at the end of the chain of ``type``
    declarations (p4c walks through nested new types: ``type Custom1_t
    Custom11_t`` with ``type bit<8> Custom1_t`` has original ``Bits(8)``).
    With ``@p4runtime_translation(uri, W)`` set ``translation_uri`` and
    ``sdn_bitwidth=W`` (``sdn_bitwidth=None`` means ``string``); then
    ``original`` is not emitted.
    """

    name: str
    original: Optional[TypeSpec] = None
    translation_uri: Optional[str] = None
    sdn_bitwidth: Optional[int] = None


@dataclass
class ErrorDef:
    """The program's ``error`` declarations (all members, core.p4's too)."""

    members: list[str]


NamedType = Union[StructDef, HeaderDef, HeaderUnionDef, EnumDef, SerEnumDef, NewTypeDef, ErrorDef]


# --------------------------------------------------------------------------
# Tables and actions


@dataclass(kw_only=True)
class Param(Annotated):
    """An action parameter.  ``type``: None for plain ``bit<W>``/``int<W>``;
    ``NewTypeRef`` (emits ``type_name``), ``SerEnumRef``, ``EnumRef`` (emits
    ``type_name`` and no bitwidth), ``Bool()`` (bitwidth 1)."""

    name: str
    bitwidth: int = 0
    id: Optional[int] = None  # @id
    type: Optional[TypeSpec] = None


@dataclass(kw_only=True)
class Action(Annotated):
    name: str
    params: list[Param] = field(default_factory=list)
    id: Optional[int] = None  # @id (full id or low 24 bits)
    hidden: bool = False


@dataclass(kw_only=True)
class MatchField(Annotated):
    """A key element.  ``match_kind`` is the P4 match_kind identifier:
    ``exact``, ``lpm``, ``ternary``, ``range``, ``optional``, ``selector``
    (dropped from P4Info), or any other (emitted as ``other_match_type``)."""

    name: str
    bitwidth: int
    match_kind: str = "exact"
    id: Optional[int] = None
    type: Optional[TypeSpec] = None  # NewTypeRef emits type_name


@dataclass(kw_only=True)
class ActionRef(Annotated):
    """An entry of a table's ``actions`` list; pass its annotations
    (``@tableonly``/``@defaultonly`` set the scope and are kept)."""

    name: str


@dataclass
class DefaultAction:
    """``[const] default_action = name(args)``; ``args`` are integer values
    (bool -> 0/1, serializable enum member -> its value); an argument that
    is not a compile-time constant is dropped by p4c -- pass None."""

    name: str
    args: Sequence[Optional[int]] = ()
    const: bool = False


@dataclass(kw_only=True)
class Table(Annotated):
    name: str
    key: list[MatchField] = field(default_factory=list)
    actions: list[ActionRef] = field(default_factory=list)
    default_action: Optional[DefaultAction] = None  # None: CreateBuiltins rule
    size: Optional[int] = None  # None or 0 -> 1024
    implementation: Optional[str] = None  # action profile/selector name
    direct_counter: Optional[str] = None  # `counters` property
    direct_meter: Optional[str] = None  # `meters` property
    is_const_table: bool = False  # `const entries` present
    has_initial_entries: bool = False  # at least one entry
    support_timeout: bool = False
    id: Optional[int] = None
    hidden: bool = False


# --------------------------------------------------------------------------
# Externs


@dataclass(kw_only=True)
class ActionProfile(Annotated):
    """``action_profile(size)`` or ``action_selector(algo, size, width)``.

    ``in_place`` is True when constructed in a table's ``implementation``
    property (then ``id`` must be None: p4c ignores ``@id`` there, and the
    instance does not make ``type_info`` appear by itself).
    """

    name: str
    size: int
    with_selector: bool = False
    max_group_size: Optional[int] = None
    selector_size_semantics: Optional[str] = None  # "sum_of_weights"/"sum_of_members"
    max_member_weight: Optional[int] = None
    in_place: bool = False
    id: Optional[int] = None


@dataclass(kw_only=True)
class Counter(Annotated):
    """``counter(size, CounterType.<unit>)``; unit ``packets``, ``bytes`` or
    ``packets_and_bytes``."""

    name: str
    unit: str
    size: int
    id: Optional[int] = None


@dataclass(kw_only=True)
class DirectCounter(Annotated):
    name: str
    unit: str
    in_place: bool = False
    id: Optional[int] = None


@dataclass(kw_only=True)
class Meter(Annotated):
    """``meter(size, MeterType.<unit>)``; unit ``packets`` or ``bytes``."""

    name: str
    unit: str
    size: int
    id: Optional[int] = None


@dataclass(kw_only=True)
class DirectMeter(Annotated):
    name: str
    unit: str
    in_place: bool = False
    id: Optional[int] = None


@dataclass(kw_only=True)
class Register(Annotated):
    """``register<T>(size)``; ``type_spec`` is ``T`` (typedefs resolved)."""

    name: str
    type_spec: TypeSpec
    size: int
    id: Optional[int] = None


@dataclass(kw_only=True)
class Digest:
    """``digest<T>(receiver, data)``: ``name`` is ``T``'s control-plane name."""

    name: str
    type_spec: TypeSpec


@dataclass(kw_only=True)
class PacketMetadata:
    """A field of a ``@controller_header`` header (flattened)."""

    name: str
    bitwidth: int
    id: Optional[int] = None
    type: Optional[TypeSpec] = None  # NewTypeRef emits type_name
    hidden: bool = False
    annotations: list[Annotation] = field(default_factory=list)
    structured_annotations: list[StructuredAnnotation] = field(default_factory=list)


@dataclass(kw_only=True)
class ControllerHeader(Annotated):
    """A header type annotated ``@controller_header("<controller_name>")``.

    ``name`` is the header *type's* control-plane name (hashed for the id).
    If ``annotations`` has no ``controller_header`` entry the builder puts
    ``@controller_header("<controller_name>")`` first.
    """

    name: str
    controller_name: str
    fields: list[PacketMetadata] = field(default_factory=list)
    id: Optional[int] = None
    hidden: bool = False


@dataclass(kw_only=True)
class ValueSetField(Annotated):
    """A field of a struct element type; ``match_kind`` from ``@match``
    (default ``exact``).  Pass the ``@match`` annotation too or not: it is
    never emitted."""

    name: str
    bitwidth: int
    match_kind: str = "exact"
    id: Optional[int] = None


@dataclass(kw_only=True)
class ValueSet(Annotated):
    """``value_set<T>(size)`` in a parser.

    ``element``: an ``int`` W for ``bit<W>`` (one unnamed EXACT match, id 1),
    a list of :class:`ValueSetField` for a struct, or a :class:`SerEnumDef`
    for a serializable enum (one EXACT match per member, ids 1..n).
    """

    name: str
    size: int
    element: Union[int, list[ValueSetField], SerEnumDef]
    id: Optional[int] = None


# --------------------------------------------------------------------------
# The program


@dataclass(kw_only=True)
class PkgInfo(Annotated):
    arch: str = "v1model"
    name: Optional[str] = None
    version: Optional[str] = None
    organization: Optional[str] = None
    contact: Optional[str] = None
    url: Optional[str] = None
    # @platform_property(multicast_group_table_size=..., ...)
    platform_properties: dict[str, int] = field(default_factory=dict)


@dataclass(kw_only=True)
class P4InfoModel:
    """Everything the P4Info of one program is made of (see module docs)."""

    tables: list[Table] = field(default_factory=list)
    actions: list[Action] = field(default_factory=list)
    action_profiles: list[ActionProfile] = field(default_factory=list)
    counters: list[Counter] = field(default_factory=list)
    direct_counters: list[DirectCounter] = field(default_factory=list)
    meters: list[Meter] = field(default_factory=list)
    direct_meters: list[DirectMeter] = field(default_factory=list)
    registers: list[Register] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)
    controller_headers: list[ControllerHeader] = field(default_factory=list)
    value_sets: list[ValueSet] = field(default_factory=list)
    # Named types the specs above may refer to (any superset is fine).
    types: list[NamedType] = field(default_factory=list)
    # None: no `main` (p4c then writes no pkg_info).
    pkg_info: Optional[PkgInfo] = field(default_factory=PkgInfo)
    # An extern function is called in a control (action or apply block).
    calls_extern_functions: bool = False
    # An instance of an extern type not modelled above is declared.
    has_other_extern_instances: bool = False
    # Force type_info presence (None: infer as p4c does).
    type_info_present: Optional[bool] = None


#: v1model's ``NoAction`` as declared in core.p4.
def no_action() -> Action:
    return Action(name="NoAction", annotations=[Annotation.string("noWarn", "unused")])

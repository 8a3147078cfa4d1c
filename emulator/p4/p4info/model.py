"""The P4Info model: a neutral description of a program's control-plane objects.

The front end converts its IR into these dataclasses (:mod:`.from_ir`);
:func:`~.build.build_p4info` turns them into the ``p4.config.v1.P4Info``
message that ``p4c-bm2-ss --arch v1model --p4runtime-files x.p4info.txtpb``
writes for the same program.  The model carries *names, widths, annotations
and order*; the builder computes ids, aliases, scopes, field ids, table_ids
of action profiles, the ``type_info`` section and p4c's omissions.

How p4c names, lists, annotates and orders each object (with the p4c
sources of every rule) is written down in ``RULES.md`` beside this file:
fill the model by those rules.
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
    """Everything the P4Info of one program is made of (see ``RULES.md``)."""

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

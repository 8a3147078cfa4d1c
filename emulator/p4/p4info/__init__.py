"""P4Info generation for the project's P4 toolchain.

A self-contained layer: the front end describes a program's control-plane
objects with the dataclasses of :mod:`.model`; :func:`build_p4info` returns
the ``p4.config.v1.P4Info`` that p4c (``p4c-bm2-ss``, v1model) generates for
the same program; :mod:`.text` writes/reads ``.p4info.txtpb``.  Naming,
ordering and omission rules are documented in ``RULES.md`` beside this
file, the id scheme in :mod:`.ids`.

- :mod:`.model` the dataclasses; :mod:`.ids` ids, aliases, symbol table;
- :mod:`.from_ir` the front end's IR -> model, with :mod:`.ir_walk` (what
  IR code does, blocks inlined), :mod:`.ir_types` (types -> type specs) and
  :mod:`.ir_annotations` (annotations as p4c prints them);
- :mod:`.build` model -> ``P4Info``, with :mod:`.build_types`
  (``type_info``) and :mod:`.build_preamble` (preamble, annotations, doc);
- :mod:`.text` the text format; :mod:`.index` lookups by id and name;
  :mod:`.bytestrings` P4Runtime's canonical byte strings.
"""

from .build import DEFAULT_TABLE_SIZE, build_p4info, collect_symbols
from .from_ir import p4info_for, p4info_model
from .ids import (
    P4Ids,
    P4InfoError,
    SymbolTable,
    allocate_field_ids,
    apply_id_annotation,
    hashed_id,
    jenkins_one_at_a_time,
)
from .ir_annotations import convert_annotations, render_annotation
from .model import (
    Action,
    ActionProfile,
    ActionRef,
    Annotated,
    Annotation,
    Bits,
    Bool,
    ControllerHeader,
    Counter,
    DefaultAction,
    Digest,
    DirectCounter,
    DirectMeter,
    EnumDef,
    EnumRef,
    ErrorDef,
    ErrorRef,
    HeaderDef,
    HeaderRef,
    HeaderStack,
    HeaderUnionDef,
    HeaderUnionRef,
    HeaderUnionStack,
    MatchField,
    Meter,
    NewTypeDef,
    NewTypeRef,
    P4InfoModel,
    PacketMetadata,
    Param,
    PkgInfo,
    Register,
    SerEnumDef,
    SerEnumRef,
    StructDef,
    StructRef,
    StructuredAnnotation,
    Table,
    TupleOf,
    ValueSet,
    ValueSetField,
    Varbit,
    no_action,
)
from .text import from_text, read_text, to_text, write_text

__all__ = [name for name in dir() if not name.startswith("_")]

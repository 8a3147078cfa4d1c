"""Declaration nodes other than parsers, controls and tables: parameters,
constants, variables, instantiations, struct-like, enum, error, match_kind,
typedef and ``type`` declarations, externs, functions, actions, the
parser/control/package *types* and value sets."""

from __future__ import annotations

from typing import Union

from emulator.p4.ast.annotations import Annotations
from emulator.p4.ast.base import Node, syntax_node
from emulator.p4.ast.expressions import Argument, Expression
from emulator.p4.ast.statements import BlockStmt
from emulator.p4.ast.types import Type


@syntax_node
class Declaration(Node):
    """Something with a name; ``loc`` points at the name."""

    name: str


@syntax_node
class TypeParam(Declaration):
    pass


@syntax_node
class Param(Declaration):
    """``direction`` is ``""`` (directionless), ``"in"``, ``"out"`` or ``"inout"``."""

    type: Type
    direction: str = ""
    default: Expression | None = None
    annotations: Annotations = ()


@syntax_node
class ConstantDecl(Declaration):
    type: Type
    value: Expression
    annotations: Annotations = ()


@syntax_node
class VariableDecl(Declaration):
    type: Type
    init: Expression | None = None
    annotations: Annotations = ()


@syntax_node
class Instantiation(Declaration):
    """``Type(args) name;``; ``initializer`` holds the declarations of an
    ``= { ... }`` block (implementations of abstract methods)."""

    type: Type
    args: tuple[Argument, ...]
    annotations: Annotations = ()
    initializer: tuple[Declaration, ...] | None = None


@syntax_node
class StructField(Declaration):
    type: Type
    annotations: Annotations = ()


@syntax_node
class StructLikeDecl(Declaration):
    fields: tuple[StructField, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class HeaderTypeDecl(StructLikeDecl):
    pass


@syntax_node
class HeaderUnionDecl(StructLikeDecl):
    pass


@syntax_node
class StructTypeDecl(StructLikeDecl):
    pass


@syntax_node
class EnumMember(Declaration):
    value: Expression | None = None


@syntax_node
class EnumDecl(Declaration):
    """``enum E { A, B }`` or, with ``underlying`` set, ``enum bit<8> E { A = 1 }``."""

    members: tuple[EnumMember, ...]
    underlying: Type | None = None
    annotations: Annotations = ()


@syntax_node
class DeclaredId(Declaration):
    """A member of an ``error`` or ``match_kind`` declaration."""


@syntax_node
class ErrorDecl(Node):
    members: tuple[DeclaredId, ...]


@syntax_node
class MatchKindDecl(Node):
    members: tuple[DeclaredId, ...]


@syntax_node
class TypedefDecl(Declaration):
    """``typedef type name;``; ``type`` may be a struct-like or enum declaration."""

    type: Union[Type, StructLikeDecl, EnumDecl]
    annotations: Annotations = ()


@syntax_node
class NewTypeDecl(Declaration):
    """``type type name;``."""

    type: Type
    annotations: Annotations = ()


@syntax_node
class MethodDecl(Declaration):
    """An extern method; ``return_type`` is None for a constructor."""

    return_type: Type | None
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    is_abstract: bool = False
    annotations: Annotations = ()

    @property
    def is_constructor(self) -> bool:
        return self.return_type is None


@syntax_node
class ExternDecl(Declaration):
    """``extern Name<T> { methods }``."""

    methods: tuple[MethodDecl, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class ExternFunctionDecl(Declaration):
    return_type: Type
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class FunctionDecl(Declaration):
    return_type: Type
    params: tuple[Param, ...]
    body: BlockStmt
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class ActionDecl(Declaration):
    params: tuple[Param, ...]
    body: BlockStmt
    annotations: Annotations = ()


@syntax_node
class ParserTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class ControlTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class PackageTypeDecl(Declaration):
    params: tuple[Param, ...]
    type_params: tuple[TypeParam, ...] = ()
    annotations: Annotations = ()


@syntax_node
class ValueSetDecl(Declaration):
    """``value_set<element_type>(size) name;``."""

    element_type: Type
    size: Expression
    annotations: Annotations = ()

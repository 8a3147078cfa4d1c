"""The syntax tree of a P4-16 program, as the parser builds it.

Every node is a frozen dataclass with a ``loc`` (the original file, line and
column, mapped back through the preprocessor). Nodes compare and hash by
identity, so a later pass can keep facts about a node (its type, the
declaration a name refers to) in a dict keyed by the node itself; use
:func:`dump` to compare trees by structure.

Names are plain strings; the node's ``loc`` points at the name for
declarations, at the operator for unary and binary expressions and at the
first token otherwise. Sequences are tuples. Nothing here resolves names or
checks types: that is the next pass's job.

This package is the one namespace of the tree (``from emulator.p4 import
ast``, then ``ast.BinaryExpr``); the node classes live in:

- :mod:`.base` the :class:`Node` base, :func:`children`, :func:`walk`,
  :func:`dump` and :func:`parse_integer_text`;
- :mod:`.annotations` annotations and their raw tokens;
- :mod:`.types` types as written;
- :mod:`.expressions` expressions and keysets;
- :mod:`.statements` statements;
- :mod:`.declarations` parameters, constants, variables, instances, type
  declarations, externs, functions and actions;
- :mod:`.blocks` parsers, tables, controls and the :class:`Program`.
"""

from emulator.p4.ast.annotations import (
    Annotation,
    AnnotationToken,
    Annotations,
    find_annotation,
)
from emulator.p4.ast.base import (
    Node,
    children,
    dump,
    parse_integer_text,
    walk,
)
from emulator.p4.ast.blocks import (
    ActionRef,
    ActionsProperty,
    ControlDecl,
    DefaultActionProperty,
    EntriesProperty,
    Entry,
    ExpressionProperty,
    KeyElement,
    KeyProperty,
    ParserDecl,
    ParserState,
    Program,
    SelectCase,
    SelectExpr,
    TableDecl,
    TableProperty,
)
from emulator.p4.ast.declarations import (
    ActionDecl,
    ConstantDecl,
    ControlTypeDecl,
    Declaration,
    DeclaredId,
    EnumDecl,
    EnumMember,
    ErrorDecl,
    ExternDecl,
    ExternFunctionDecl,
    FunctionDecl,
    HeaderTypeDecl,
    HeaderUnionDecl,
    Instantiation,
    MatchKindDecl,
    MethodDecl,
    NewTypeDecl,
    PackageTypeDecl,
    Param,
    ParserTypeDecl,
    StructField,
    StructLikeDecl,
    StructTypeDecl,
    TypeParam,
    TypedefDecl,
    ValueSetDecl,
    VariableDecl,
)
from emulator.p4.ast.expressions import (
    Argument,
    BinaryExpr,
    BoolLiteral,
    CallExpr,
    CastExpr,
    ConstructorCallExpr,
    DefaultExpr,
    DontCareExpr,
    Expression,
    IndexExpr,
    IntLiteral,
    ListExpr,
    MaskExpr,
    MemberExpr,
    NamedExpr,
    PathExpr,
    PlusSliceExpr,
    RangeExpr,
    SliceExpr,
    StringLiteral,
    StructExpr,
    TernaryExpr,
    ThisExpr,
    TypeRefExpr,
    UnaryExpr,
)
from emulator.p4.ast.statements import (
    AssignmentStmt,
    BlockStmt,
    EmptyStmt,
    ExitStmt,
    IfStmt,
    MethodCallStmt,
    ReturnStmt,
    Statement,
    SwitchCase,
    SwitchStmt,
)
from emulator.p4.ast.types import (
    BitsType,
    BoolType,
    DontCareType,
    ErrorType,
    HeaderStackType,
    IntType,
    MatchKindType,
    SpecializedType,
    StringType,
    TupleType,
    Type,
    TypeName,
    VarbitType,
    VoidType,
)

__all__ = [name for name in dir() if not name.startswith("_")]

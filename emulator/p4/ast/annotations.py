"""Annotation nodes: ``@name``, ``@name(tokens)``, ``@name[tokens]``, with the
body kept as raw tokens, and the lookup of an annotation by name."""

from __future__ import annotations

from emulator.p4.ast.base import Node, parse_integer_text, syntax_node


@syntax_node
class AnnotationToken(Node):
    """One token of an unparsed annotation body.

    ``kind`` is ``"string"`` (``text`` without the quotes), ``"integer"``,
    ``"name"`` or ``"symbol"`` (punctuation and keywords, ``text`` as written).
    """

    kind: str
    text: str


@syntax_node
class Annotation(Node):
    """``@name``, ``@name(tokens...)`` or ``@name[tokens...]`` (``structured``).

    The body is kept as raw tokens, as p4c does, because an annotation's
    meaning (and so how to parse its body) depends on its name.
    """

    name: str
    body: tuple[AnnotationToken, ...] = ()
    structured: bool = False

    @property
    def string_value(self) -> str | None:
        """The string of a body made of exactly one string literal."""
        if len(self.body) == 1 and self.body[0].kind == "string":
            return self.body[0].text
        return None

    @property
    def integer_values(self) -> tuple[int, ...] | None:
        """The values of a body of comma-separated integer literals, else None."""
        values: list[int] = []
        expect_value = True
        for tok in self.body:
            if expect_value and tok.kind == "integer":
                value = parse_integer_text(tok.text)
                if value is None:
                    return None
                values.append(value[0])
            elif not expect_value and tok.text == ",":
                pass
            else:
                return None
            expect_value = not expect_value
        if expect_value and values:
            return None  # trailing comma
        return tuple(values)


Annotations = tuple[Annotation, ...]


def find_annotation(annotations: Annotations, name: str) -> Annotation | None:
    for annotation in annotations:
        if annotation.name == name:
            return annotation
    return None

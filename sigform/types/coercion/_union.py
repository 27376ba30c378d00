"""Union node: the best-fitting member wins; a tie between different readings is an error.

Every member tries to read the value. Among those that succeed, the one for which the value
is most natural wins (``fit``: a JSON int for ``int``, ``"3.5"`` for ``float``, a dict with
exactly a model's keys for that model; bare text is only a fallback for ``str``). ``None`` is
read first for ``Optional``: JSON null or the words None/null.
"""

from __future__ import annotations

from pydantic import ValidationError

from sigform.types.coercion._plan import Invalid, Node, adapter_for, plan_for
from sigform.types.coercion._scalars import StrNode
from sigform.types.coercion._text import NULL_WORDS, clean_scalar
from sigform.types.names import type_name

__all__ = ["UnionNode", "pydantic_message"]


def pydantic_message(exc: ValidationError, limit: int = 3) -> str:
    """A short human sentence from a pydantic ``ValidationError``."""
    errors = exc.errors(include_url=False)
    parts = []
    for err in errors[:limit]:
        loc = ""
        for p in err.get("loc", ()):
            loc += f"[{p}]" if isinstance(p, int) else (f".{p}" if loc else str(p))
        parts.append(f"{loc}: {err['msg']}" if loc else err["msg"])
    if len(errors) > limit:
        parts.append(f"and {len(errors) - limit} more")
    return "; ".join(parts)


class UnionNode(Node):
    """``Union[...]`` / ``Optional[...]`` / ``X | Y``."""

    def __init__(self, annotation: object, members: tuple[object, ...], allows_none: bool) -> None:
        super().__init__(annotation)
        self.member_annotations = members
        self.allows_none = allows_none
        self._nodes: list[Node] | None = None

    def nodes(self) -> list[Node]:
        if self._nodes is None:
            self._nodes = [plan_for(m) for m in self.member_annotations]
        return self._nodes

    @property
    def needs_validation(self) -> bool:  # type: ignore[override]
        return any(n.needs_validation for n in self.nodes())

    def _member(self, i: int, value: object, name: str, text: bool) -> object:
        node = self.nodes()[i]
        out = node.convert(value, name, text)
        if node.needs_validation:
            adapter = adapter_for(self.member_annotations[i])
            if adapter is not None:
                try:
                    out = adapter.validate_python(out)
                except ValidationError as exc:
                    raise Invalid(pydantic_message(exc)) from None
        return out

    def convert(self, value: object, name: str, text: bool) -> object:
        if self.allows_none:
            if value is None:
                return None
            if isinstance(value, str) and self._reads_as_null(value, name):
                if text:
                    return None
                try:  # inside JSON a string is explicit: "None" is null only if nothing else reads it
                    return self._pick(value, name, text)
                except Invalid:
                    return None
        return self._pick(value, name, text)

    def _reads_as_null(self, value: str, name: str) -> bool:
        if value.lstrip().startswith('"'):  # a double-quoted "None" is a string literal
            return False
        cleaned = clean_scalar(value, name, punctuation=True)
        return cleaned.lower() in NULL_WORDS or (
            not cleaned and not any(isinstance(n, StrNode) for n in self.nodes())
        )

    def _pick(self, value: object, name: str, text: bool) -> object:
        nodes = self.nodes()
        if len(nodes) == 1:
            return self._member(0, value, name, text)
        found: list[tuple[float, int, object]] = []
        failures: list[tuple[int, Invalid]] = []
        for i, node in enumerate(nodes):
            try:
                out = self._member(i, value, name, text)
            except Invalid as exc:
                failures.append((i, exc))
                continue
            found.append((node.fit(value, text), i, out))
        if not found:
            reasons = "; ".join(
                f"as {type_name(self.member_annotations[i])}: "
                f"{(exc.where() + ': ') if exc.path else ''}{exc.message}"
                for i, exc in failures
            )
            raise Invalid(f"the value fits none of the allowed types ({reasons})")
        best = max(f[0] for f in found)
        top = [f for f in found if f[0] == best]
        first = top[0][2]
        if len(top) == 1 or all(type(f[2]) is type(first) and f[2] == first for f in top):
            return first
        names = ", ".join(type_name(self.member_annotations[f[1]]) for f in top)
        raise Invalid(f"the value is ambiguous: it reads as each of {names}")

    def fit(self, value: object, text: bool) -> float:
        if value is None and self.allows_none:
            return 2.0
        return max((n.fit(value, text) for n in self.nodes()), default=0.0)

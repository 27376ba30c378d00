"""A tolerant XML scanner for LM text (a strict XML parser alone would reject most of it).

LM "XML" has raw ``&`` and ``<`` in text, prose around the elements, mismatched close-tag case,
missing close tags at the end, attributes, comments, CDATA and inline tags inside text. The
scanner tokenises tags with one regular expression, builds a forgiving element tree (a close tag
closes the nearest open element of the same normalised name; a stray close tag is text), and
keeps, for every element, the exact source span of its content so a ``str`` field can be read
as written. Entities are decoded only where text is read, CDATA is unwrapped, comments and
declarations are ignored.
"""

from __future__ import annotations

import html
from collections.abc import Iterator
from dataclasses import dataclass, field

import regex

from sigform.adapters.names import norm_name

__all__ = ["Element", "decode_text", "escape_text", "scan"]

_TOKEN_RE = regex.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<!\[CDATA\[.*?(?:\]\]>|\Z)"
    r"|<[?!][^<>]*>"
    r"|<(?P<close>/)?(?P<name>[A-Za-z_][\w.\-:]{0,80})(?P<attrs>(?:\s+[^<>]*?)?)\s*(?P<self>/)?>",
    regex.DOTALL,
)
_ATTR_RE = regex.compile(r"""([A-Za-z_][\w.\-:]*)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'>/]+))""")
_ENTITY_RE = regex.compile(r"&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
_CDATA_RE = regex.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", regex.DOTALL)
_COMMENT_RE = regex.compile(r"<!--.*?(?:-->|\Z)", regex.DOTALL)
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


@dataclass(eq=False)
class Element:
    """One element: name as written, attributes, children and the span of its content."""

    name: str
    attrs: dict[str, str]
    start: int  # first character of the content
    end: int = -1  # one past the last character of the content
    closed: bool = False
    self_closing: bool = False
    children: list[Element] = field(default_factory=list)

    @property
    def key(self) -> str:
        return norm_name(self.name)

    def walk(self) -> Iterator[Element]:
        yield self
        for child in self.children:
            yield from child.walk()


def escape_text(text: str) -> str:
    """Escape ``&``, ``<`` and ``>`` so user text can never open or close an element."""
    return text.translate(_ESCAPES)


def decode_text(raw: str) -> str:
    """Text content as written: CDATA unwrapped, comments dropped, entities decoded.

    Only complete entities (``&amp;``, ``&#225;``) are decoded; a raw ``&`` stays as it is.
    """
    if "<" in raw:
        pieces: list[str] = []
        pos = 0
        for match in _CDATA_RE.finditer(raw):
            pieces.append(_decode_plain(_COMMENT_RE.sub("", raw[pos : match.start()])))
            pieces.append(match.group(1))
            pos = match.end()
        pieces.append(_decode_plain(_COMMENT_RE.sub("", raw[pos:])))
        return "".join(pieces)
    return _decode_plain(raw)


def _decode_plain(text: str) -> str:
    if "&" not in text:
        return text
    return _ENTITY_RE.sub(lambda m: html.unescape(m.group()), text)


def _attrs(raw: str) -> dict[str, str]:
    if not raw or "=" not in raw:
        return {}
    out: dict[str, str] = {}
    for match in _ATTR_RE.finditer(raw):
        name = match.group(1)
        if name.startswith("xml:") or name.startswith("xmlns"):
            continue
        value = next(v for v in match.groups()[1:] if v is not None)
        out[name] = _decode_plain(value)
    return out


def scan(text: str) -> Element:
    """The element tree of ``text`` under a synthetic root (``root.children`` are top level)."""
    root = Element("", {}, 0)
    stack = [root]
    for match in _TOKEN_RE.finditer(text):
        name = match.group("name")
        if name is None:
            continue  # comment, CDATA, declaration: content, not structure
        if match.group("close"):
            key = norm_name(name)
            for depth in range(len(stack) - 1, 0, -1):
                if stack[depth].key == key:
                    for open_el in stack[depth + 1 :]:  # unclosed inner elements end here
                        open_el.end = match.start()
                    stack[depth].end = match.start()
                    stack[depth].closed = True
                    del stack[depth:]
                    break
            continue  # a close tag with no open element is stray text
        element = Element(name, _attrs(match.group("attrs")), match.end())
        stack[-1].children.append(element)
        if match.group("self"):
            element.end = match.end()
            element.closed = element.self_closing = True
        else:
            stack.append(element)
    for open_el in stack[1:]:
        open_el.end = len(text)
    root.end = len(text)
    root.closed = True
    return root

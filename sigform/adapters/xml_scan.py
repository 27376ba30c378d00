"""A tolerant XML scanner for LM text (a strict XML parser alone would reject most of it).

LM "XML" has raw ``&`` and ``<`` in text, prose around the elements, mismatched close-tag case,
missing close tags at the end, attributes, comments, CDATA and inline tags inside text. The
scanner tokenises tags with one regular expression, builds a forgiving element tree (a close tag
closes the nearest open element of the same normalised name; a stray close tag is text), and
keeps, for every element, the exact source span of its content so a ``str`` field can be read
as written. Entities are decoded only where text is read, CDATA is unwrapped, comments and
declarations are ignored.

Bounds: one pass over the tags; a close tag finds its open element through a per-name stack
(O(1), not a walk down the open elements), so the scan is linear. At most ``MAX_ELEMENTS``
elements are built (and ``2 * MAX_ELEMENTS`` tags read), at most ``MAX_DEPTH`` levels nested, and
a text with over ``MAX_LESS_THAN`` ``<`` is not scanned. Past a bound the scan stops
(``root.complete`` is then False) and the text is not read as XML: a value past the bound could
contradict one before it. This also keeps the readers' recursion shallow.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache

import regex

from sigform.adapters.names import norm_name
from sigform.adapters.recent_scan import RecentScan

__all__ = ["MAX_DEPTH", "MAX_ELEMENTS", "MAX_LESS_THAN", "Element", "decode_text", "escape_text", "scan"]

MAX_ELEMENTS = 10_000  # an answer list of thousands of items fits; a wall of `<a>` stops here
MAX_DEPTH = 64
# a `<` that starts no tag still costs the tag pattern ~0.15 µs (`<!<!<!...`: ~80 ms a MB); a text
# with more than this many is not scanned at all (ten times the tags an answer may have)
MAX_LESS_THAN = 10 * MAX_ELEMENTS

_TOKEN_RE = regex.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<!\[CDATA\[.*?(?:\]\]>|\Z)"
    r"|<[?!][^<>]*>"
    # attributes are taken possessively up to the next `<` or `>` (a lazy attribute part before
    # `\s*/?>` re-scanned a run of blanks once per character: quadratic)
    r"|<(?P<close>/)?(?P<name>[A-Za-z_][\w.\-:]{0,80}+)(?P<attrs>(?:[\s/][^<>]*+)?)>"
    # a `<` that meets another `<` (or the end) before any `>` or `!` starts nothing: a stretch of
    # them (`<<<`, `<a<a<a`) is one step, up to the last `<` before a `>` or `!` (which may start a
    # tag or a comment), not one try and one match per `<`. The backtrack to that last `<` only
    # covers the stretch's last piece, so the scan stays linear
    r"|<[^>!]*(?=<|\Z)",
    regex.DOTALL,
)
# an attribute starts only where a name starts (else every letter of a long word is a start);
# the second branch takes a word that is no attribute in one step, where the scan would otherwise
# try (and the look-behind refuse) each of its letters: no new match, a 1 MB word ~4x faster
_ATTR_RE = regex.compile(
    r"""(?<![\w.\-:])([A-Za-z_][\w.\-:]*+)\s*+=\s*+(?:"([^"]*+)"|'([^']*+)'|([^\s"'>/]++))"""
    r"|[\w.\-:]++"
)
# stdlib engine: literal classes only, and its split is ~2x faster than `regex`'s
_ENTITY_RE = re.compile(r"(&(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});)")
# the five XML entities; `&amp;` last, so that decoding it never makes a new entity
_XML_ENTITIES = (("&lt;", "<"), ("&gt;", ">"), ("&quot;", '"'), ("&apos;", "'"), ("&amp;", "&"))
# an entity that is not one of the five
_OTHER_ENTITY_RE = re.compile(
    r"&(?!(?:lt|gt|quot|apos|amp);)(?:#[0-9]{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});"
)
_CDATA_RE = regex.compile(r"<!\[CDATA\[(.*?)(?:\]\]>|\Z)", regex.DOTALL)
_COMMENT_RE = regex.compile(r"<!--.*?(?:-->|\Z)", regex.DOTALL)
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;"})


@dataclass(eq=False, slots=True)
class Element:
    """One element: name as written, attributes, children and the span of its content."""

    name: str
    attrs: dict[str, str]
    start: int  # first character of the content
    end: int = -1  # one past the last character of the content
    closed: bool = False
    self_closing: bool = False
    children: list[Element] = field(default_factory=list)
    complete: bool = True  # the root only: False when the scan stopped at a bound
    key: str = ""  # the normalised name (worked out once: a wall of tags repeats a few names)

    def __post_init__(self) -> None:
        if not self.key and self.name:
            self.key = norm_name(self.name)

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
    if len(raw) > 4096:  # an answer read twice (an adapter, then its fallback) decodes once
        return _recent_decoded(raw)
    return _decode_text(raw)


def _decode_text(raw: str) -> str:
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
    known = sum(text.count(entity) for entity, _ in _XML_ENTITIES)
    if text.count("&") == known or (known > 64 and _OTHER_ENTITY_RE.search(text) is None):
        # the only entities are the five (each such substring is an entity the pattern would
        # match, and other `&` start none): plain replaces, ~1 ms a MB instead of a Python call
        # per entity (~150 ms a MB)
        for entity, char in _XML_ENTITIES:
            text = text.replace(entity, char)
        return text
    # split, not sub with a function: the entities are decoded by a C-level map over a cache
    parts = _ENTITY_RE.split(text)
    parts[1::2] = map(_entity, parts[1::2])
    return "".join(parts)


@lru_cache(maxsize=1024)
def _entity(raw: str) -> str:
    return html.unescape(raw)


def _attrs(raw: str) -> dict[str, str]:
    if not raw or "=" not in raw:
        return {}
    out: dict[str, str] = {}
    for match in _ATTR_RE.finditer(raw):
        name = match.group(1)
        if name is None:
            continue  # a word that is not an attribute
        if name.startswith("xml:") or name.startswith("xmlns"):
            continue
        value = next(v for v in match.groups()[1:] if v is not None)
        out[name] = _decode_plain(value)
    return out


def scan(text: str) -> Element:
    """The element tree of ``text`` under a synthetic root (``root.children`` are top level).

    The last text's tree is reused for the same text (an answer read twice, by an adapter and its
    fallback): callers read the tree, never change it.
    """
    return _recent(text)


def _scan(text: str) -> Element:
    root = Element("", {}, 0)
    if text.count("<") > MAX_LESS_THAN:
        root.complete = False
        return root
    stack = [root]
    open_by_key: dict[str, list[int]] = {}  # normalised name -> stack depths of open elements
    keys: dict[str, str] = {}  # name as written -> normalised (bounded by MAX_ELEMENTS)
    budget = MAX_ELEMENTS
    tags_left = 2 * MAX_ELEMENTS  # close tags count too: a wall of stray ones stops here
    for match in _TOKEN_RE.finditer(text):
        close, name, attrs = match.groups()  # one call, not one per group: ~1 µs a tag counts here
        if name is None:
            continue  # comment, CDATA, declaration, a run of `<`: content, not structure
        tags_left -= 1
        if not tags_left:
            root.complete = False
            break
        if close:
            key = keys.get(name) or keys.setdefault(name, norm_name(name))
            depths = open_by_key.get(key)
            if depths:  # else a close tag with no open element: stray text
                depth = depths[-1]
                for open_el in stack[depth + 1 :]:  # unclosed inner elements end here
                    open_el.end = match.start()
                    open_by_key[open_el.key].pop()
                stack[depth].end = match.start()
                stack[depth].closed = True
                depths.pop()
                del stack[depth:]
            continue
        if not budget or len(stack) > MAX_DEPTH:
            root.complete = False
            break  # the readers refuse a text past the bounds: the rest need not be scanned
        budget -= 1
        self_closing = bool(attrs) and attrs.rstrip().endswith("/")
        key = keys.get(name) or keys.setdefault(name, norm_name(name))
        element = Element(
            name, _attrs(attrs.rstrip().rstrip("/") if self_closing else attrs), match.end(), key=key
        )
        stack[-1].children.append(element)
        if self_closing:
            element.end = match.end()
            element.closed = element.self_closing = True
        else:
            open_by_key.setdefault(element.key, []).append(len(stack))
            stack.append(element)
    for open_el in stack[1:]:
        open_el.end = len(text)
    root.end = len(text)
    root.closed = True
    return root


_recent: RecentScan[Element] = RecentScan(_scan)
_recent_decoded: RecentScan[str] = RecentScan(_decode_text)

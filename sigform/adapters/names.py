"""Matching what the LM wrote as a field name (``Capital``, ``News Title``, ``reading-minutes``,
``readingMinutes``, ``**Decision**``) to the signature's field names."""

from __future__ import annotations

from collections.abc import Iterable

import regex

__all__ = ["FieldMatcher", "compact_name", "norm_name"]

_SEPARATORS = regex.compile(r"[\s\-.]+")
_NON_ALNUM = regex.compile(r"[\W_]+")
_DECORATION = "*_`'\" \t:"
_SEEN_LIMIT = 1024  # names remembered per matcher (a matcher lives as long as its signature)


def norm_name(name: str) -> str:
    """Canonical form of a field name: decoration stripped, lower case, ``-``/spaces -> ``_``."""
    return _SEPARATORS.sub("_", name.strip(_DECORATION).lower()).strip("_")


class FieldMatcher:
    """Maps written names to declared field names (exact name first, then the normalised form)."""

    __slots__ = ("_by_compact", "_by_norm", "_seen", "exact_header_re", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)
        self._by_norm = {norm_name(n): n for n in self.names}
        # separators dropped (camelCase keys: ``readingMinutes``); a form two fields share is no match
        self._by_compact: dict[str, str | None] = {}
        for n in self.names:
            key = compact_name(n)
            self._by_compact[key] = n if self._by_compact.get(key, n) == n else None
        # the headers a clean chat answer uses; when they are the only "[[" in the text, the
        # lenient scan would find exactly these, so the parser can take this cheaper path
        alternatives = "|".join(regex.escape(n) for n in (*self.names, "completed"))
        self.exact_header_re = regex.compile(
            r"(?:\*\*|__)?\[\[ \#\# (?P<name>" + alternatives + r") \#\# \]\](?:\*\*|__)?[ \t]*:?"
        )
        # answers repeat the same few names (garbled ones thousands of times): remember them
        self._seen: dict[str, str | None] = {}

    def match(self, written: str) -> str | None:
        try:
            return self._seen[written]
        except KeyError:
            pass
        if written in self._by_norm.values():
            found: str | None = written
        else:
            found = self._by_norm.get(norm_name(written)) or self._by_compact.get(compact_name(written))
        if len(self._seen) < _SEEN_LIMIT:
            self._seen[written] = found
        return found


def compact_name(name: str) -> str:
    """A name with case and every separator dropped: ``readingMinutes`` -> ``readingminutes``."""
    return _NON_ALNUM.sub("", name.lower())

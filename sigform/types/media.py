"""The :class:`Media` model the input types (Image, Audio, File) share: content, checks, parts.

Media values are read **once, at construction**: a local path or a download is turned into
base64 data immediately, checked against a size limit and sniffed against its declared type, so
nothing can fail (or silently change) later when the request is sent. Adapters never render media
as text: they ask :meth:`Media.to_content_parts` for structured OpenAI-style content parts (which
litellm translates for every provider), so no text a user types can ever become an image or file.

Reading the bytes (files, downloads, base64, data URIs, MIME sniffing) is
:mod:`sigform.types.media_sources`. Errors: :class:`ValueError` (``pydantic.ValidationError``
included) for invalid content, sizes or types; :class:`OSError` for unreadable paths and failed
downloads.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import os
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from sigform.types.media_sources import (
    b64_size,
    fetch,
    guess_mime_from_name,
    max_bytes_of,
    read_path,
    sniff_mime,
)
from sigform.types.render import PROMPT_CONTEXT

__all__ = ["PROMPT_CONTEXT", "Media", "iter_media", "sniff_mime"]

ContentPart = dict[str, Any]

class Media(BaseModel):
    """Base class of :class:`~sigform.types.Image`, :class:`~sigform.types.Audio` and
    :class:`~sigform.types.File`: immutable, validated at construction, serialisable with
    ``model_dump()`` / ``model_validate()`` (base64 inside), and turned into message content parts
    with :meth:`to_content_parts`. ``repr`` and ``str`` never include the base64 payload."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    KIND: ClassVar[str] = "media"
    MAX_BYTES: ClassVar[int] = 20_000_000
    # the constructors a "not from a plain string" error points to
    BUILT_WITH: ClassVar[tuple[str, ...]] = ("from_path", "from_bytes", "from_data_uri")

    @model_validator(mode="before")
    @classmethod
    def _validate(cls, value: object, info: ValidationInfo) -> object:
        # every way of building media (constructors, model_validate, a typed field) passes here
        if isinstance(value, str):
            article = "an" if cls.__name__[0] in "AEIOU" else "a"
            ways = [f"{cls.__name__}.{name}(...)" for name in cls.BUILT_WITH]
            raise ValueError(
                f"{article} {cls.__name__} is built explicitly, not from a plain string: "
                f"use {', '.join(ways[:-1])} or {ways[-1]}"
            )
        if not isinstance(value, Mapping):
            return value  # an instance, or something pydantic will reject with its own error
        return cls._check_fields(dict(value), max_bytes_of(info, cls.MAX_BYTES))

    @classmethod
    def _check_fields(cls, fields: dict[str, object], max_bytes: int) -> dict[str, object]:
        """Check and normalise the given fields (each media type's own rules); ``max_bytes`` is
        the size limit for inline content."""
        raise NotImplementedError

    # -- helpers of the subclasses' constructors ----------------------------------------------

    @classmethod
    def _base64_of(cls, data: bytes) -> str:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TypeError(f"{cls.__name__}.from_bytes expects bytes, got {type(data).__name__}")
        return base64.b64encode(bytes(data)).decode("ascii")

    @classmethod
    def _read_file(
        cls, path: str | os.PathLike[str], declared: str | None, max_bytes: int | None, name: str
    ) -> tuple[bytes, str | None]:
        """Read a local file now. Returns its bytes and type: the declared one, else -- only when
        the bytes do not tell -- the one ``name``'s extension suggests."""
        raw = read_path(path, max_bytes or cls.MAX_BYTES, cls.__name__)
        if declared is None and sniff_mime(raw[:2048]) is None:
            declared = guess_mime_from_name(name)
        return raw, declared

    @classmethod
    def _download(cls, url: str, max_bytes: int | None, timeout: float) -> tuple[bytes, str | None]:
        """Fetch ``url`` now; its bytes and the server's Content-Type."""
        return fetch(url, max_bytes or cls.MAX_BYTES, timeout, cls.__name__)

    def to_content_parts(self) -> list[ContentPart]:
        """OpenAI-style content parts for a user message (litellm translates them per provider)."""
        raise NotImplementedError

    @property
    def size(self) -> int | None:
        """Size of the inline content in bytes (``None`` for remote references)."""
        data = getattr(self, "data", None)
        return None if data is None else b64_size(data)

    def to_bytes(self) -> bytes:
        """The inline content as bytes (raises ValueError for remote references)."""
        data = getattr(self, "data", None)
        if data is None:
            raise ValueError(f"{self!r} refers to remote content; it holds no bytes")
        return base64.b64decode(data)

    @property
    def sha256(self) -> str | None:
        """Hex SHA-256 of the inline content (``None`` for remote references)."""
        data = getattr(self, "data", None)
        return None if data is None else hashlib.sha256(base64.b64decode(data)).hexdigest()

    @property
    def data_uri(self) -> str | None:
        """The inline content as a ``data:<mime>;base64,...`` URI (``None`` for remote references)."""
        data, mime = getattr(self, "data", None), getattr(self, "mime_type", None)
        return None if data is None or mime is None else f"data:{mime};base64,{data}"

    def _describe(self) -> str:
        raise NotImplementedError

    # -- value-engine hooks (see sigform.types): media are structure, never text --------------

    @classmethod
    def __sigform_coerce__(cls, value: object) -> Media:
        """Accept an instance, or a dict as made by ``model_dump()``; never a string."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(value)
        if isinstance(value, str):
            raise TypeError(
                f"{cls.__name__} values are never made from text; build one with "
                f"{cls.__name__}.from_path(...), .from_url(...) or .from_bytes(...)"
            )
        raise TypeError(f"expected {cls.__name__}, got {type(value).__name__}")

    def __sigform_render__(self) -> str:
        """A short placeholder (adapters send the content itself as content parts)."""
        return str(self)

    @model_serializer(mode="wrap")
    def _serialize(self, handler: Any, info: SerializationInfo) -> object:  # pydantic reads this annotation
        # in prompt text (render_value of a dict or model holding media) only the placeholder is
        # written, never the base64; every other dump keeps the full content
        context = info.context
        if isinstance(context, Mapping) and context.get("sigform_prompt"):
            return str(self)
        return handler(self)

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: object, handler: Any) -> Any:
        # the prompt serializer above does not change what a dump looks like: schema it as the model
        if isinstance(schema, dict) and "serialization" in schema:
            schema = {k: v for k, v in schema.items() if k != "serialization"}
        return handler(schema)

    @classmethod
    def __sigform_describe__(cls) -> Any:
        from sigform.types.describe import TypeDescription

        return TypeDescription("custom", cls.__name__)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._describe()})"

    def __str__(self) -> str:
        return f"<{type(self).__name__} {self._describe()}>"

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:  # pydantic's rich/devtools repr
        yield None, self._describe()


_SCALARS = (str, bytes, int, float, bool, type(None))


def iter_media(value: object, _depth: int = 0) -> Iterator[Media]:
    """Every :class:`Media` inside ``value`` (itself, or nested in lists, tuples, sets, dict
    values, pydantic models and dataclasses), in order -- for adapters that turn an input field's
    value into content parts."""
    if isinstance(value, Media):
        yield value
        return
    if isinstance(value, _SCALARS) or _depth > 64:
        return
    items: object
    if isinstance(value, (list, tuple, set, frozenset)):
        items = value
    elif isinstance(value, Mapping):
        items = value.values()
    elif isinstance(value, BaseModel):
        items = (getattr(value, name) for name in type(value).model_fields)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = (getattr(value, f.name) for f in dataclasses.fields(value))
    else:
        return
    for item in items:
        yield from iter_media(item, _depth + 1)

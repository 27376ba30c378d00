"""What the media input types (Image, Audio, File) share: byte sources, checks, content parts.

Media values are read **once, at construction**: a local path or a download is turned into
base64 data immediately, checked against a size limit and sniffed against its declared type, so
nothing can fail (or silently change) later when the request is sent. Adapters never render media
as text: they ask :meth:`Media.to_content_parts` for structured OpenAI-style content parts (which
litellm translates for every provider), so no text a user types can ever become an image or file.

Errors: :class:`ValueError` (``pydantic.ValidationError`` included) for invalid content, sizes or
types; :class:`OSError` for unreadable paths and failed downloads.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import unquote_to_bytes, urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializationInfo,
    ValidationInfo,
    model_serializer,
    model_validator,
)

from sigform.types.render import PROMPT_CONTEXT

__all__ = ["PROMPT_CONTEXT", "Media", "iter_media", "sniff_mime"]

ContentPart = dict[str, Any]

_MIME_RE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_ALIASES = {
    "image/jpg": "image/jpeg",
    "image/pjpeg": "image/jpeg",
    "audio/x-wav": "audio/wav",
    "audio/wave": "audio/wav",
    "audio/vnd.wave": "audio/wav",
    "audio/mp3": "audio/mpeg",
    "audio/mpeg3": "audio/mpeg",
    "audio/x-mpeg-3": "audio/mpeg",
}
# Types we can recognise from their first bytes; a declared type in this set must match them.
_SNIFFABLE = frozenset(
    {"image/png", "image/jpeg", "image/gif", "image/webp", "audio/wav", "audio/mpeg", "application/pdf"}
)


def normalize_mime(mime: str) -> str:
    """Lower-case ``mime``, drop parameters (``; charset=...``) and map common aliases."""
    base = mime.split(";", 1)[0].strip().lower()
    return _ALIASES.get(base, base)


def check_mime_syntax(mime: str) -> str:
    m = normalize_mime(mime)
    if not _MIME_RE.match(m):
        raise ValueError(f"{mime!r} is not a MIME type (expected 'type/subtype', e.g. 'image/png')")
    return m


def sniff_mime(head: bytes) -> str | None:
    """The MIME type that ``head`` (the first bytes of some content) starts like, if recognised."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head[:4] == b"RIFF" and head[8:12] == b"WAVE":
        return "audio/wav"
    if head.startswith(b"ID3") or (len(head) > 1 and head[0] == 0xFF and head[1] & 0xE6 == 0xE2):
        return "audio/mpeg"  # ID3 tag, or an MPEG audio layer III frame header
    if b"%PDF-" in head[:1024]:
        return "application/pdf"
    return None


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "kB", "MB", "GB"):
        if size < 1000 or unit == "GB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1000
    raise AssertionError("unreachable")


def decode_base64(data: str, what: str) -> tuple[str, bytes]:
    """Validate base64 text; return it without whitespace plus the decoded bytes."""
    data = "".join(data.split())  # base64 wrapped over lines is common and harmless
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise ValueError(f"{what}: data is not valid base64 ({exc})") from exc
    return data, raw


def parse_data_uri(uri: str) -> tuple[str | None, str]:
    """Split ``data:<mime>[;...][;base64],<payload>`` into (mime or None, base64 payload)."""
    header, sep, payload = uri.partition(",")
    if not uri.startswith("data:") or not sep:
        raise ValueError(f"not a data URI: {uri[:40]!r}... (expected 'data:<mime>;base64,<data>')")
    params = header[5:].split(";")
    mime = params[0].strip() or None
    if "base64" in (p.strip().lower() for p in params[1:]):
        return mime, payload
    return mime, base64.b64encode(unquote_to_bytes(payload)).decode("ascii")


def check_size(n: int, limit: int, what: str) -> None:
    if n > limit:
        raise ValueError(
            f"{what} is {human_size(n)}; the limit is {human_size(limit)} (pass max_bytes=... to change it)"
        )
    if n == 0:
        raise ValueError(f"{what} is empty")


def read_path(path: str | os.PathLike[str], limit: int, what: str) -> bytes:
    """Read a whole local file now, refusing files over ``limit`` before reading them."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise FileNotFoundError(f"{what}: no such file: {str(p)!r}")
    check_size(p.stat().st_size, limit, f"{what} {str(p)!r}")
    data = p.read_bytes()
    check_size(len(data), limit, f"{what} {str(p)!r}")
    return data


def check_http_url(url: str, what: str) -> str:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"{what}: {url[:80]!r} is not an http(s) URL")
    return url


def fetch(url: str, limit: int, timeout: float, what: str) -> tuple[bytes, str | None]:
    """Fetch ``url`` now (streamed, stopped as soon as it exceeds ``limit``); return bytes and the
    server's Content-Type, if any."""
    import httpx  # only media downloads need it

    check_http_url(url, what)
    try:
        with httpx.stream("GET", url, follow_redirects=True, timeout=timeout) as response:
            response.raise_for_status()
            declared = response.headers.get("content-length")
            if declared and declared.isdigit():
                check_size(int(declared), limit, f"{what} at {url!r}")
            chunks, total = [], 0
            for chunk in response.iter_bytes():
                total += len(chunk)
                check_size(total, limit, f"{what} at {url!r}")
                chunks.append(chunk)
            content_type = response.headers.get("content-type")
    except httpx.HTTPError as exc:
        raise OSError(f"{what}: could not download {url!r}: {exc}") from exc
    data = b"".join(chunks)
    check_size(len(data), limit, f"{what} at {url!r}")
    return data, content_type


def guess_mime_from_name(name: str) -> str | None:
    import mimetypes

    guessed, _ = mimetypes.guess_type(name, strict=False)
    return normalize_mime(guessed) if guessed else None


def resolve_mime(declared: str | None, raw: bytes, what: str) -> str | None:
    """The content's MIME type: the declared one checked against the bytes, else the sniffed one."""
    sniffed = sniff_mime(raw[:2048])
    if declared is None:
        return sniffed
    mime = check_mime_syntax(declared)
    if mime in _SNIFFABLE and sniffed != mime:
        seen = f"looks like {sniffed}" if sniffed else "does not look like it"
        raise ValueError(f"{what}: declared as {mime} but the content {seen}")
    return mime


def inline_content(data: str, declared: str | None, limit: int, what: str) -> tuple[str, str | None]:
    """Check inline base64 content now: valid base64, within ``limit``, type matching the bytes.
    Returns the cleaned base64 text and the resolved MIME type (``None`` if unknown)."""
    b64, raw = decode_base64(data, what)
    check_size(len(raw), limit, what)
    return b64, resolve_mime(declared, raw, what)


def max_bytes_of(info: ValidationInfo, default: int) -> int:
    ctx = info.context
    if isinstance(ctx, Mapping) and ctx.get("max_bytes") is not None:
        return int(ctx["max_bytes"])
    return default


def b64_size(data: str) -> int:
    """Decoded length of (whitespace-free) base64 text, without decoding it."""
    return len(data) * 3 // 4 - data[-2:].count("=")


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
    def _validate(cls, value: Any, info: ValidationInfo) -> Any:
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
    def _check_fields(cls, fields: dict[str, Any], max_bytes: int) -> dict[str, Any]:
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
    def __sigform_coerce__(cls, value: Any) -> Media:
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
    def _serialize(self, handler: Any, info: SerializationInfo) -> Any:
        # in prompt text (render_value of a dict or model holding media) only the placeholder is
        # written, never the base64; every other dump keeps the full content
        context = info.context
        if isinstance(context, Mapping) and context.get("sigform_prompt"):
            return str(self)
        return handler(self)

    @classmethod
    def __get_pydantic_json_schema__(cls, schema: Any, handler: Any) -> Any:
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


def iter_media(value: Any, _depth: int = 0) -> Iterator[Media]:
    """Every :class:`Media` inside ``value`` (itself, or nested in lists, tuples, sets, dict
    values, pydantic models and dataclasses), in order -- for adapters that turn an input field's
    value into content parts."""
    if isinstance(value, Media):
        yield value
        return
    if isinstance(value, _SCALARS) or _depth > 64:
        return
    items: Any
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

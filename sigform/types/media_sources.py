"""Where media bytes come from, checked once: local files, downloads, base64 and data URIs, and
the MIME type they really have (sniffed from their first bytes).

Every reader enforces a size limit *before* it holds the whole content (a file's size is checked
before reading, a download is stopped as soon as it passes the limit) and names what it read in
its errors (:class:`ValueError` for content, :class:`OSError` for paths and downloads). The
:class:`~sigform.types.media.Media` model and its subclasses call these at construction.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import unquote_to_bytes, urlsplit

from pydantic import ValidationInfo

__all__ = [
    "b64_size",
    "check_http_url",
    "check_mime_syntax",
    "check_size",
    "decode_base64",
    "fetch",
    "guess_mime_from_name",
    "human_size",
    "inline_content",
    "max_bytes_of",
    "normalize_mime",
    "parse_data_uri",
    "read_path",
    "resolve_mime",
    "sniff_mime",
]

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

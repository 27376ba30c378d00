"""Audio: an audio clip input, sent to the model as an ``input_audio`` content part."""

from __future__ import annotations

import os
from typing import ClassVar, Literal

from sigform.types.media import ContentPart, Media
from sigform.types.media_sources import (
    check_mime_syntax,
    human_size,
    inline_content,
    parse_data_uri,
)

__all__ = ["Audio"]

AudioFormat = Literal["wav", "mp3"]
_FORMAT_MIME = {"wav": "audio/wav", "mp3": "audio/mpeg"}
_MIME_FORMAT = {mime: fmt for fmt, mime in _FORMAT_MIME.items()}


def _as_mime(fmt: str) -> str:
    """Accept a format name ("wav", "mp3") or a MIME type and return the MIME type."""
    lowered = fmt.strip().lower()
    if lowered in _FORMAT_MIME:
        return _FORMAT_MIME[lowered]
    if "/" in lowered:
        return check_mime_syntax(lowered)
    raise ValueError(f"Audio: unknown audio format {fmt!r}; supported: 'wav', 'mp3'")


class Audio(Media):
    """An audio input for a signature field (``clip: sf.Audio = sf.InputField()``).

    Holds the clip inline as base64 ``data`` plus its ``format`` ("wav" or "mp3", the formats
    chat-completions audio input accepts), checked against the bytes. Build one with
    :meth:`from_path`, :meth:`from_bytes`, :meth:`from_base64`, :meth:`from_data_uri` or
    :meth:`from_url` (downloaded at construction, since providers take audio inline only).
    """

    KIND: ClassVar[str] = "audio"
    MAX_BYTES: ClassVar[int] = 25_000_000

    data: str
    format: AudioFormat

    @classmethod
    def _check_fields(cls, fields: dict[str, object], max_bytes: int) -> dict[str, object]:
        data, fmt = fields.get("data"), fields.get("format")
        if data is None:
            raise ValueError("Audio needs data (base64) and a format ('wav' or 'mp3')")
        if not isinstance(data, str) or not (fmt is None or isinstance(fmt, str)):
            return fields  # pydantic reports the wrong types
        declared = None if fmt is None else _as_mime(fmt)
        data, mime = inline_content(data, declared, max_bytes, "Audio")
        if mime is None:
            raise ValueError("Audio: cannot tell the audio format from its bytes; pass format='wav' or 'mp3'")
        if mime not in _MIME_FORMAT:
            raise ValueError(f"Audio: {mime} is not supported; supported formats: 'wav', 'mp3'")
        fields.update(data=data, format=_MIME_FORMAT[mime])
        return fields

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_path(
        cls, path: str | os.PathLike[str], *, format: str | None = None, max_bytes: int | None = None
    ) -> Audio:
        """A .wav or .mp3 file on disk, read now (format from the bytes, else the extension)."""
        raw, format = cls._read_file(path, format, max_bytes, os.fspath(path))
        return cls.from_bytes(raw, format, max_bytes=max_bytes)

    @classmethod
    def from_bytes(cls, data: bytes, format: str | None = None, *, max_bytes: int | None = None) -> Audio:
        """Audio bytes; ``format`` ("wav", "mp3" or a MIME type) is detected when omitted."""
        return cls.from_base64(cls._base64_of(data), format, max_bytes=max_bytes)

    @classmethod
    def from_base64(cls, data: str, format: str | None = None, *, max_bytes: int | None = None) -> Audio:
        """Base64-encoded audio (or a data URI)."""
        if data.startswith("data:"):
            return cls.from_data_uri(data, max_bytes=max_bytes)
        return cls.model_validate({"data": data, "format": format}, context={"max_bytes": max_bytes})

    @classmethod
    def from_data_uri(cls, uri: str, *, max_bytes: int | None = None) -> Audio:
        """A ``data:audio/wav;base64,...`` (or ``audio/mpeg``) URI."""
        mime, b64 = parse_data_uri(uri)
        return cls.model_validate({"data": b64, "format": mime}, context={"max_bytes": max_bytes})

    @classmethod
    def from_url(
        cls, url: str, *, format: str | None = None, max_bytes: int | None = None, timeout: float = 30.0
    ) -> Audio:
        """Download an audio file now (http/https) and hold it inline."""
        if url.startswith("data:"):
            return cls.from_data_uri(url, max_bytes=max_bytes)
        raw, content_type = cls._download(url, max_bytes, timeout)
        if format is None and content_type and content_type.lower().startswith("audio/"):
            format = content_type
        return cls.from_bytes(raw, format, max_bytes=max_bytes)

    # -- output -------------------------------------------------------------------------------

    @property
    def mime_type(self) -> str:
        """``audio/wav`` or ``audio/mpeg``."""
        return _FORMAT_MIME[self.format]

    def to_content_parts(self) -> list[ContentPart]:
        """``[{"type": "input_audio", "input_audio": {"data": <base64>, "format": "wav"|"mp3"}}]``."""
        return [{"type": "input_audio", "input_audio": {"data": self.data, "format": self.format}}]

    def _describe(self) -> str:
        return f"{self.format}, {human_size(self.size or 0)}"

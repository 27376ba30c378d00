"""File: a document input (PDF and friends), sent to the model as a ``file`` content part."""

from __future__ import annotations

import mimetypes
import os
from pathlib import PurePath
from typing import ClassVar

from sigform.types.media import ContentPart, Media
from sigform.types.media_sources import (
    check_mime_syntax,
    guess_mime_from_name,
    human_size,
    inline_content,
    parse_data_uri,
)

__all__ = ["File"]


def _default_filename(mime: str) -> str:
    ext = mimetypes.guess_extension(mime, strict=False) or ""
    return f"file{ext}"


class File(Media):
    """A document input for a signature field (``report: sf.File = sf.InputField()``).

    Either inline ``data`` (base64) with its ``mime_type`` and a ``filename`` (PDFs are checked
    against their bytes; other types are taken as declared or guessed from the filename), or a
    ``file_id`` of a file already uploaded to the provider. Build one with :meth:`from_path`,
    :meth:`from_bytes`, :meth:`from_base64`, :meth:`from_data_uri`, :meth:`from_url` (downloaded
    at construction) or :meth:`from_id`. Which file types a model accepts is the provider's call
    (PDF is the common one).
    """

    KIND: ClassVar[str] = "file"
    MAX_BYTES: ClassVar[int] = 32_000_000
    BUILT_WITH: ClassVar[tuple[str, ...]] = ("from_path", "from_bytes", "from_data_uri", "from_id")

    data: str | None = None
    file_id: str | None = None
    mime_type: str | None = None
    filename: str | None = None

    @classmethod
    def _check_fields(cls, fields: dict[str, object], max_bytes: int) -> dict[str, object]:
        data, file_id = fields.get("data"), fields.get("file_id")
        mime, filename = fields.get("mime_type"), fields.get("filename")
        if isinstance(data, str) and data.startswith("data:"):
            uri_mime, data = parse_data_uri(data)
            mime = mime or uri_mime
        if (data is None) == (file_id is None):
            raise ValueError("File needs exactly one of data (base64) or file_id")
        if isinstance(filename, str):
            filename = PurePath(filename.replace("\\", "/")).name  # a name, never a path
            if not filename:
                raise ValueError("File: filename is empty")
        if isinstance(file_id, str) and not file_id.strip():
            raise ValueError("File: file_id is empty")
        if isinstance(data, str) and (mime is None or isinstance(mime, str)):
            data, mime = inline_content(data, mime, max_bytes, "File")
            if mime is None and isinstance(filename, str):
                mime = guess_mime_from_name(filename)
            if mime is None:
                raise ValueError("File: cannot tell the file type; pass mime_type (e.g. 'application/pdf')")
            filename = filename or _default_filename(mime)
        elif isinstance(mime, str):
            mime = check_mime_syntax(mime)
        fields.update(data=data, mime_type=mime, filename=filename)
        return fields

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        *,
        mime_type: str | None = None,
        filename: str | None = None,
        max_bytes: int | None = None,
    ) -> File:
        """A file on disk, read now; the filename defaults to the file's base name."""
        name = filename or PurePath(os.fspath(path)).name
        raw, mime_type = cls._read_file(path, mime_type, max_bytes, name)
        return cls.from_bytes(raw, mime_type, filename=name, max_bytes=max_bytes)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        mime_type: str | None = None,
        *,
        filename: str | None = None,
        max_bytes: int | None = None,
    ) -> File:
        """File bytes; ``mime_type`` is detected (PDF) or guessed from ``filename`` when omitted."""
        return cls.from_base64(cls._base64_of(data), mime_type, filename=filename, max_bytes=max_bytes)

    @classmethod
    def from_base64(
        cls,
        data: str,
        mime_type: str | None = None,
        *,
        filename: str | None = None,
        max_bytes: int | None = None,
    ) -> File:
        """Base64-encoded file content (or a data URI)."""
        return cls.model_validate(
            {"data": data, "mime_type": mime_type, "filename": filename}, context={"max_bytes": max_bytes}
        )

    @classmethod
    def from_data_uri(cls, uri: str, *, filename: str | None = None, max_bytes: int | None = None) -> File:
        """A ``data:<mime>;base64,...`` URI."""
        mime, b64 = parse_data_uri(uri)
        return cls.from_base64(b64, mime, filename=filename, max_bytes=max_bytes)

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        mime_type: str | None = None,
        filename: str | None = None,
        max_bytes: int | None = None,
        timeout: float = 30.0,
    ) -> File:
        """Download a file now (http/https) and hold it inline."""
        raw, content_type = cls._download(url, max_bytes, timeout)
        name = filename or PurePath(url.split("?", 1)[0]).name or None
        if (
            mime_type is None
            and content_type
            and content_type.split(";")[0].strip() != "application/octet-stream"
        ):
            mime_type = content_type
        return cls.from_bytes(raw, mime_type, filename=name, max_bytes=max_bytes)

    @classmethod
    def from_id(cls, file_id: str, *, filename: str | None = None, mime_type: str | None = None) -> File:
        """A file already uploaded to the provider (e.g. an OpenAI ``file-...`` id)."""
        return cls.model_validate({"file_id": file_id, "filename": filename, "mime_type": mime_type})

    # -- output -------------------------------------------------------------------------------

    def to_content_parts(self) -> list[ContentPart]:
        """``[{"type": "file", "file": {"file_data": <data URI>, "filename": ...}}]``, or
        ``{"file_id": ...}`` inside for uploaded files."""
        if self.file_id is not None:
            ref: dict[str, object] = {"file_id": self.file_id}
            if self.filename is not None:
                ref["filename"] = self.filename
            return [{"type": "file", "file": ref}]
        return [{"type": "file", "file": {"file_data": self.data_uri, "filename": self.filename}}]

    def _describe(self) -> str:
        if self.file_id is not None:
            name = "" if self.filename is None else f", filename={self.filename!r}"
            return f"file_id={self.file_id!r}{name}"
        return f"{self.filename!r}, {self.mime_type}, {human_size(self.size or 0)}"

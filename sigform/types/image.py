"""Image: an image input, sent to the model as an ``image_url`` content part."""

from __future__ import annotations

import io
import os
from typing import Any, ClassVar, Literal

from sigform.types.media import ContentPart, Media
from sigform.types.media_sources import (
    check_http_url,
    check_mime_syntax,
    guess_mime_from_name,
    human_size,
    inline_content,
    parse_data_uri,
)

__all__ = ["Image"]

Detail = Literal["auto", "low", "high"]


class Image(Media):
    """An image input for a signature field (``photo: sf.Image = sf.InputField()``).

    Either a remote ``url`` the provider fetches itself, or inline ``data`` (base64) with its
    ``mime_type`` (PNG, JPEG, GIF or WebP; checked against the bytes). ``detail`` ("auto", "low",
    "high") is passed to providers that support it. Build one with :meth:`from_url`,
    :meth:`from_path`, :meth:`from_bytes`, :meth:`from_base64`, :meth:`from_data_uri` or
    :meth:`from_pil`; a data URI given as ``url`` is stored inline. Local files are read at
    construction, never at send time. Plain strings are not accepted where an ``Image`` is
    expected, so text can never turn into an image.
    """

    KIND: ClassVar[str] = "image"
    MAX_BYTES: ClassVar[int] = 20_000_000
    BUILT_WITH: ClassVar[tuple[str, ...]] = ("from_url", "from_path", "from_data_uri")
    SUPPORTED_MIME_TYPES: ClassVar[frozenset[str]] = frozenset(
        {"image/png", "image/jpeg", "image/gif", "image/webp"}
    )

    url: str | None = None
    data: str | None = None
    mime_type: str | None = None
    detail: Detail | None = None

    @classmethod
    def _check_fields(cls, fields: dict[str, Any], max_bytes: int) -> dict[str, object]:
        url, data, mime = fields.get("url"), fields.get("data"), fields.get("mime_type")
        if isinstance(url, str) and url.startswith("data:"):
            if data is not None:
                raise ValueError("Image: give either url or data, not both")
            uri_mime, data = parse_data_uri(url)
            url, mime = None, mime or uri_mime
        if (url is None) == (data is None):
            raise ValueError("Image needs exactly one of url (http/https) or data (base64)")
        if isinstance(url, str):
            check_http_url(url, "Image")
            guessed = mime if mime is not None else guess_mime_from_name(url.split("?", 1)[0])
            if guessed is not None and (mime is not None or guessed.startswith("image/")):
                mime = cls._check_supported(check_mime_syntax(guessed), url)
        if isinstance(data, str):
            data, mime = inline_content(data, mime, max_bytes, "Image")
            if mime is None:
                raise ValueError(
                    "Image: cannot tell the image type from its bytes; pass mime_type "
                    f"(one of {sorted(cls.SUPPORTED_MIME_TYPES)})"
                )
            cls._check_supported(mime, "the image data")
        fields.update(url=url, data=data, mime_type=mime)
        return fields

    @classmethod
    def _check_supported(cls, mime: str, where: str) -> str:
        if mime not in cls.SUPPORTED_MIME_TYPES:
            raise ValueError(
                f"Image: {mime} ({where}) is not an image type chat models accept; "
                f"supported: {', '.join(sorted(cls.SUPPORTED_MIME_TYPES))}"
            )
        return mime

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        detail: Detail | None = None,
        download: bool = False,
        max_bytes: int | None = None,
        timeout: float = 30.0,
    ) -> Image:
        """An image at an http(s) URL (or a data URI). By default the provider fetches the URL;
        ``download=True`` fetches it now and sends the bytes inline (for private URLs or
        providers that cannot fetch)."""
        if not download or url.startswith("data:"):
            return cls.model_validate({"url": url, "detail": detail}, context={"max_bytes": max_bytes})
        raw, content_type = cls._download(url, max_bytes, timeout)
        declared = content_type if content_type and content_type.lower().startswith("image/") else None
        return cls.from_bytes(raw, declared, detail=detail, max_bytes=max_bytes)

    @classmethod
    def from_path(
        cls,
        path: str | os.PathLike[str],
        *,
        mime_type: str | None = None,
        detail: Detail | None = None,
        max_bytes: int | None = None,
    ) -> Image:
        """An image file on disk, read now (type from the bytes, else from the file extension)."""
        raw, mime_type = cls._read_file(path, mime_type, max_bytes, os.fspath(path))
        return cls.from_bytes(raw, mime_type, detail=detail, max_bytes=max_bytes)

    @classmethod
    def from_bytes(
        cls,
        data: bytes,
        mime_type: str | None = None,
        *,
        detail: Detail | None = None,
        max_bytes: int | None = None,
    ) -> Image:
        """Image bytes; ``mime_type`` is detected from the bytes when omitted."""
        return cls.from_base64(cls._base64_of(data), mime_type, detail=detail, max_bytes=max_bytes)

    @classmethod
    def from_base64(
        cls,
        data: str,
        mime_type: str | None = None,
        *,
        detail: Detail | None = None,
        max_bytes: int | None = None,
    ) -> Image:
        """Base64-encoded image bytes (or a data URI)."""
        if data.startswith("data:"):
            return cls.from_data_uri(data, detail=detail, max_bytes=max_bytes)
        return cls.model_validate(
            {"data": data, "mime_type": mime_type, "detail": detail}, context={"max_bytes": max_bytes}
        )

    @classmethod
    def from_data_uri(cls, uri: str, *, detail: Detail | None = None, max_bytes: int | None = None) -> Image:
        """A ``data:image/...;base64,...`` URI."""
        mime, b64 = parse_data_uri(uri)
        return cls.from_base64(b64, mime, detail=detail, max_bytes=max_bytes)

    @classmethod
    def from_pil(
        cls,
        image: Any,
        *,
        format: str = "PNG",
        detail: Detail | None = None,
        max_bytes: int | None = None,
    ) -> Image:
        """A Pillow image (anything with ``save(fp, format=...)``), encoded now as ``format``.
        Pillow itself is not a dependency of sigform."""
        if not callable(getattr(image, "save", None)):
            raise TypeError(f"Image.from_pil expects a PIL.Image.Image, got {type(image).__name__}")
        buffer = io.BytesIO()
        image.save(buffer, format=format)
        return cls.from_bytes(buffer.getvalue(), detail=detail, max_bytes=max_bytes)

    # -- output -------------------------------------------------------------------------------

    def to_content_parts(self) -> list[ContentPart]:
        """``[{"type": "image_url", "image_url": {"url": <url or data URI>, "detail": ...}}]``."""
        image_url: dict[str, object] = {"url": self.url if self.url is not None else self.data_uri}
        if self.detail is not None:
            image_url["detail"] = self.detail
        return [{"type": "image_url", "image_url": image_url}]

    def _describe(self) -> str:
        detail = "" if self.detail is None else f", detail={self.detail!r}"
        if self.url is not None:
            url = self.url if len(self.url) <= 80 else self.url[:60] + "..." + self.url[-15:]
            return f"url={url!r}{detail}"
        return f"{self.mime_type}, {human_size(self.size or 0)}{detail}"

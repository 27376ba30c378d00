"""Tests for the special types: Image, Audio, File, History, Reasoning, ToolCalls."""

from __future__ import annotations

import base64
import json
import pickle
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from sigform.errors import FieldValueError
from sigform.lm.interface import Completion, ToolCall
from sigform.types.audio import Audio
from sigform.types.file import File
from sigform.types.history import History
from sigform.types.image import Image
from sigform.types.media import Media, iter_media, sniff_mime
from sigform.types.reasoning import Reasoning
from sigform.types.tool_calls import ToolCalls

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 64
GIF = b"GIF89a" + b"\x00" * 32
WEBP = b"RIFF\x00\x00\x00\x00WEBPVP8 " + b"\x00" * 32
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + b"\x00" * 64
MP3_ID3 = b"ID3\x03\x00\x00\x00\x00\x00\x00" + b"\x00" * 64
MP3_FRAME = b"\xff\xfb\x90\x64" + b"\x00" * 64
PDF = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


# -- a loopback server for download constructors ------------------------------------------------

ROUTES: dict[str, tuple[int, str, bytes]] = {
    "/cat.png": (200, "image/png", PNG),
    "/cat-octet": (200, "application/octet-stream", PNG),
    "/clip.wav": (200, "audio/wav", WAV),
    "/docs/report.pdf": (200, "application/pdf", PDF),
    "/big.png": (200, "image/png", PNG * 50),
    "/missing.png": (404, "text/plain", b"not found"),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status, ctype, body = ROUTES.get(self.path.split("?")[0], (404, "text/plain", b"nope"))
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


# -- sniffing -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "mime"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (GIF, "image/gif"),
        (WEBP, "image/webp"),
        (WAV, "audio/wav"),
        (MP3_ID3, "audio/mpeg"),
        (MP3_FRAME, "audio/mpeg"),
        (PDF, "application/pdf"),
        (b"hello world", None),
        (b"\xff\xf1\x50\x80", None),  # AAC ADTS header, not MP3
    ],
)
def test_sniff_mime(data: bytes, mime: str | None) -> None:
    assert sniff_mime(data) == mime


# -- Image --------------------------------------------------------------------------------------


def test_image_from_bytes_detects_type_and_builds_data_uri_part() -> None:
    img = Image.from_bytes(PNG)
    assert img.mime_type == "image/png" and img.url is None
    assert img.size == len(PNG)
    assert img.to_bytes() == PNG
    assert img.to_content_parts() == [
        {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(PNG)}"}}
    ]


@pytest.mark.parametrize(("data", "mime"), [(JPEG, "image/jpeg"), (GIF, "image/gif"), (WEBP, "image/webp")])
def test_image_other_formats(data: bytes, mime: str) -> None:
    assert Image.from_bytes(data).mime_type == mime


def test_image_from_url_is_a_remote_reference_with_detail() -> None:
    img = Image.from_url("https://example.com/cat.jpg?size=large", detail="high")
    assert img.data is None and img.size is None and img.sha256 is None
    assert img.mime_type == "image/jpeg"  # guessed from the URL path
    assert img.to_content_parts() == [
        {
            "type": "image_url",
            "image_url": {"url": "https://example.com/cat.jpg?size=large", "detail": "high"},
        }
    ]
    with pytest.raises(ValueError, match="remote"):
        img.to_bytes()


def test_image_url_without_extension_has_no_mime() -> None:
    img = Image(url="https://example.com/render?id=3")
    assert img.mime_type is None
    assert img.to_content_parts()[0]["image_url"] == {"url": "https://example.com/render?id=3"}


def test_image_data_uri_given_as_url_is_stored_inline() -> None:
    uri = f"data:image/png;base64,{b64(PNG)}"
    for img in (Image(url=uri), Image.from_url(uri), Image.from_data_uri(uri), Image.from_base64(uri)):
        assert img.url is None and img.data == b64(PNG) and img.mime_type == "image/png"
        assert img.data_uri == uri


def test_image_from_base64_accepts_wrapped_lines() -> None:
    text = b64(PNG)
    wrapped = "\n".join(text[i : i + 76] for i in range(0, len(text), 76))
    assert Image.from_base64(wrapped).to_bytes() == PNG


def test_image_from_path_reads_at_construction(tmp_path: Path) -> None:
    path = tmp_path / "photo.png"
    path.write_bytes(PNG)
    img = Image.from_path(path, detail="low")
    path.unlink()  # nothing is read later
    assert img.to_bytes() == PNG
    assert img.to_content_parts()[0]["image_url"]["detail"] == "low"


def test_image_from_path_checks_extension_against_bytes(tmp_path: Path) -> None:
    path = tmp_path / "fake.png"
    path.write_bytes(b"this is text, not an image")
    with pytest.raises(ValueError, match=r"declared as image/png but the content does not look like it"):
        Image.from_path(path)


def test_image_from_missing_path() -> None:
    with pytest.raises(FileNotFoundError, match="no such file"):
        Image.from_path("/definitely/not/here.png")


def test_image_size_limit_and_override(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"Image is 1\.0 kB; the limit is 100 B \(pass max_bytes"):
        Image.from_bytes(PNG, max_bytes=100)
    path = tmp_path / "p.png"
    path.write_bytes(PNG)
    with pytest.raises(ValueError, match="the limit is 10 B"):
        Image.from_path(path, max_bytes=10)
    assert Image.from_path(path, max_bytes=len(PNG)).size == len(PNG)


def test_image_empty_bytes_rejected() -> None:
    with pytest.raises(ValueError, match="empty"):
        Image.from_bytes(b"", "image/png")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Image.from_bytes(b"plain text bytes"), "cannot tell the image type"),
        (
            lambda: Image.from_bytes(PNG, "image/jpeg"),
            "declared as image/jpeg but the content looks like image/png",
        ),
        (lambda: Image.from_bytes(b"BM\x00\x00", "image/bmp"), "image/bmp .* is not an image type"),
        (lambda: Image.from_bytes(PNG, "not a mime"), "is not a MIME type"),
        (lambda: Image.from_url("ftp://example.com/a.png"), "is not an http"),
        (lambda: Image.from_url("https://example.com/logo.svg"), "image/svg\\+xml"),
        (lambda: Image(data="@@not base64@@", mime_type="image/png"), "not valid base64"),
        (lambda: Image(), "exactly one of url"),
        (lambda: Image(url="https://x.org/a.png", data=b64(PNG)), "exactly one of url"),
        (lambda: Image(url="https://x.org/a.png", detail="ultra"), "detail"),
        (lambda: Image(url="https://x.org/a.png", colour="red"), "colour"),
    ],
)
def test_image_validation_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_image_jpg_alias_normalised() -> None:
    assert Image.from_bytes(JPEG, "image/jpg").mime_type == "image/jpeg"


def test_plain_strings_never_become_images() -> None:
    class Inputs(BaseModel):
        photo: Image

    with pytest.raises(ValidationError, match=r"Image\.from_url"):
        Inputs(photo="https://example.com/a.png")
    with pytest.raises(ValidationError, match="plain string"):
        Inputs(photo=f"data:image/png;base64,{b64(PNG)}")
    ok = Inputs(photo=Image.from_bytes(PNG))
    assert ok.photo.mime_type == "image/png"


def test_image_from_pil_duck_typed() -> None:
    class FakePil:
        def save(self, fp, format: str) -> None:
            assert format == "PNG"
            fp.write(PNG)

    assert Image.from_pil(FakePil()).to_bytes() == PNG
    with pytest.raises(TypeError, match="PIL"):
        Image.from_pil(object())


def test_image_repr_and_str_hold_no_base64() -> None:
    big = PNG * 100
    img = Image.from_bytes(big, detail="low")
    payload = b64(big)
    for text in (repr(img), str(img), repr([img]), repr({"x": img})):
        assert payload[:40] not in text and len(text) < 80
    assert repr(img) == "Image(image/png, 103.2 kB, detail='low')"

    class Holder(BaseModel):
        img: Image

    assert payload[:40] not in repr(Holder(img=img))
    long_url = "https://example.com/" + "a" * 300 + ".png"
    assert len(repr(Image.from_url(long_url))) < 110


def test_image_serialisation_round_trip() -> None:
    for img in (Image.from_bytes(PNG, detail="auto"), Image.from_url("https://example.com/x.webp")):
        assert Image.model_validate(img.model_dump()) == img
        assert Image.model_validate_json(img.model_dump_json()) == img
        assert pickle.loads(pickle.dumps(img)) == img


def test_image_is_frozen() -> None:
    img = Image.from_bytes(PNG)
    with pytest.raises(ValidationError):
        img.detail = "high"  # type: ignore[misc]


def test_image_download(server: str) -> None:
    remote = Image.from_url(f"{server}/cat.png")
    assert remote.url == f"{server}/cat.png" and remote.data is None  # not fetched by default
    img = Image.from_url(f"{server}/cat.png", download=True, detail="low")
    assert img.to_bytes() == PNG and img.url is None and img.detail == "low"
    # a generic content type falls back to sniffing
    assert Image.from_url(f"{server}/cat-octet", download=True).mime_type == "image/png"


def test_image_download_limits_and_failures(server: str) -> None:
    with pytest.raises(ValueError, match=r"the limit is 2\.0 kB"):
        Image.from_url(f"{server}/big.png", download=True, max_bytes=2000)
    with pytest.raises(OSError, match="could not download"):
        Image.from_url(f"{server}/missing.png", download=True)


# -- Audio --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "fmt"), [(WAV, "wav"), (MP3_ID3, "mp3"), (MP3_FRAME, "mp3")])
def test_audio_from_bytes_detects_format(data: bytes, fmt: str) -> None:
    clip = Audio.from_bytes(data)
    assert clip.format == fmt
    assert clip.to_content_parts() == [
        {"type": "input_audio", "input_audio": {"data": b64(data), "format": fmt}}
    ]


def test_audio_format_may_be_named_or_mime() -> None:
    assert Audio.from_bytes(WAV, "audio/x-wav").format == "wav"
    assert Audio.from_bytes(MP3_ID3, "MP3").mime_type == "audio/mpeg"
    assert Audio.from_data_uri(f"data:audio/mpeg;base64,{b64(MP3_FRAME)}").format == "mp3"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Audio.from_bytes(WAV, "mp3"), "declared as audio/mpeg but the content looks like audio/wav"),
        (lambda: Audio.from_bytes(b"OggS\x00\x02" + b"\x00" * 30), "cannot tell the audio format"),
        (lambda: Audio.from_bytes(b"OggS\x00\x02", "audio/ogg"), "audio/ogg is not supported"),
        (lambda: Audio.from_bytes(WAV, "flac"), "unknown audio format 'flac'"),
        (lambda: Audio.from_bytes(PNG), "image/png is not supported"),
        (lambda: Audio(format="wav"), "needs data"),
        (lambda: Audio.from_bytes(WAV, max_bytes=10), "the limit is 10 B"),
    ],
)
def test_audio_validation_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_audio_from_path_repr_and_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "clip.wav"
    path.write_bytes(WAV * 20)
    clip = Audio.from_path(path)
    assert repr(clip) == "Audio(wav, 1.6 kB)"
    assert b64(WAV)[:30] not in str(clip)
    assert Audio.model_validate(clip.model_dump()) == clip
    assert Audio.model_validate_json(clip.model_dump_json()) == clip


def test_audio_download(server: str) -> None:
    assert Audio.from_url(f"{server}/clip.wav").to_bytes() == WAV


# -- File ---------------------------------------------------------------------------------------


def test_file_pdf_from_bytes_gets_default_filename() -> None:
    doc = File.from_bytes(PDF)
    assert doc.mime_type == "application/pdf" and doc.filename == "file.pdf"
    assert doc.to_content_parts() == [
        {
            "type": "file",
            "file": {"file_data": f"data:application/pdf;base64,{b64(PDF)}", "filename": "file.pdf"},
        }
    ]


def test_file_from_path_uses_base_name_and_extension(tmp_path: Path) -> None:
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "notes.txt").write_text("hello")
    doc = File.from_path(tmp_path / "report.pdf")
    assert doc.filename == "report.pdf"
    notes = File.from_path(tmp_path / "notes.txt")
    assert notes.mime_type == "text/plain" and notes.to_bytes() == b"hello"


def test_file_from_id() -> None:
    doc = File.from_id("file-abc123", filename="q3.pdf")
    assert doc.to_content_parts() == [
        {"type": "file", "file": {"file_id": "file-abc123", "filename": "q3.pdf"}}
    ]
    assert File.from_id("file-x").to_content_parts() == [{"type": "file", "file": {"file_id": "file-x"}}]
    assert repr(doc) == "File(file_id='file-abc123', filename='q3.pdf')"


def test_file_filename_is_a_name_never_a_path() -> None:
    assert File.from_bytes(PDF, filename="../../etc/report.pdf").filename == "report.pdf"
    assert File.from_bytes(PDF, filename="C:\\docs\\a.pdf").filename == "a.pdf"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: File.from_bytes(b"\x00\x01binary"), "cannot tell the file type"),
        (lambda: File.from_bytes(b"not a pdf", "application/pdf"), "declared as application/pdf"),
        (lambda: File(), "exactly one of data"),
        (lambda: File(data=b64(PDF), file_id="file-1"), "exactly one of data"),
        (lambda: File.from_id("  "), "file_id is empty"),
        (lambda: File.from_id("f", mime_type="pdf"), "is not a MIME type"),
        (lambda: File.from_bytes(PDF, max_bytes=5), "the limit is 5 B"),
    ],
)
def test_file_validation_errors(make, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        make()


def test_file_text_with_declared_type() -> None:
    doc = File.from_bytes(b"a,b\n1,2\n", "text/csv", filename="t.csv")
    assert doc.to_content_parts()[0]["file"]["file_data"].startswith("data:text/csv;base64,")


def test_file_repr_and_round_trip() -> None:
    doc = File.from_bytes(PDF * 30, filename="big.pdf")
    assert repr(doc) == "File('big.pdf', application/pdf, 1.1 kB)"
    assert File.model_validate(doc.model_dump()) == doc
    assert File.model_validate_json(doc.model_dump_json()) == doc


def test_file_download(server: str) -> None:
    doc = File.from_url(f"{server}/docs/report.pdf")
    assert doc.filename == "report.pdf" and doc.mime_type == "application/pdf" and doc.to_bytes() == PDF


def test_iter_media_finds_nested_values() -> None:
    a, b, c = Image.from_bytes(PNG), Audio.from_bytes(WAV), File.from_bytes(PDF)
    assert list(iter_media([a, {"x": (b, "text")}, 3, [[c]]])) == [a, b, c]
    assert list(iter_media("just text")) == []
    assert all(isinstance(m, Media) for m in (a, b, c))


# -- History ------------------------------------------------------------------------------------


def test_history_field_values() -> None:
    h = History(messages=[{"question": "2+2?", "answer": "4"}, {"question": "3+3?", "answer": "6"}])
    assert not h.is_raw_turns and len(h) == 2
    assert h.entries[1] == {"question": "3+3?", "answer": "6"}
    h.entries[0]["question"] = "changed"  # entries are copies
    assert h.entries[0]["question"] == "2+2?"
    h.check_fields(["question", "answer", "context"])
    with pytest.raises(ValueError, match=r"unknown field\(s\) \['answr'\]"):
        History(messages=[{"question": "q", "answr": "a"}]).check_fields(["question", "answer"])


def test_history_chat_like_entries_get_a_hint() -> None:
    h = History(messages=[{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match=r"History\.from_turns"):
        h.check_fields(["question", "answer"])


def test_history_field_value_errors() -> None:
    with pytest.raises(ValueError, match="message 1 is empty"):
        History(messages=[{"q": 1}, {}])
    with pytest.raises(ValueError, match="expected a dict of field values"):
        History(messages=["hello"])
    with pytest.raises(ValueError, match="must be a list of dicts"):
        History(messages="hello")
    with pytest.raises(ValueError, match="raw_turns must be True or False"):
        History(messages=[], raw_turns="yes")


def test_history_add_is_immutable_and_validates() -> None:
    h = History(messages=[{"question": "a", "answer": "b"}])
    h2 = h.add({"question": "c", "answer": "d"})
    assert len(h) == 1 and len(h2) == 2
    with pytest.raises(ValidationError):
        h.messages = ()  # type: ignore[misc]
    turns = History.from_turns([{"role": "user", "content": "hi"}])
    with pytest.raises(ValueError, match="answers tool_call_id"):
        turns.add({"role": "tool", "tool_call_id": "nope", "content": "x"})


TOOL_TURNS = [
    {"role": "system", "content": "be brief"},
    {"role": "user", "content": "weather in Paris and Rome?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "name": "weather", "arguments": {"city": "Paris"}},
            ToolCall("weather", {"city": "Rome"}, "c2"),
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    {"role": "tool", "tool_call_id": "c2", "content": "24C"},
    {"role": "assistant", "content": "Paris 18C, Rome 24C."},
    {
        "role": "user",
        "content": [{"type": "text", "text": "and this?"}, {"type": "image_url", "image_url": {"url": "u"}}],
    },
]


def test_history_raw_turns_normalise_tool_calls() -> None:
    h = History.from_turns(TOOL_TURNS)
    assert h.is_raw_turns and len(h) == 7
    calls = h.entries[2]["tool_calls"]
    assert calls[0] == {
        "id": "c1",
        "type": "function",
        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
    }
    assert calls[1]["function"] == {"name": "weather", "arguments": '{"city": "Rome"}'}
    assert h.groups() == [[0], [1], [2, 3, 4], [5], [6]]
    h.entries[2]["tool_calls"][0]["function"]["name"] = "x"  # entries are deep enough copies
    assert h.entries[2]["tool_calls"][0]["function"]["name"] == "weather"


def test_history_openai_shape_and_tool_calls_model_accepted() -> None:
    call = ToolCalls.Call(name="f", args={"a": 1}, id="k")
    h = History.from_turns(
        [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "o1", "type": "function", "function": {"name": "g", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "o1", "content": "ok"},
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "k", "content": "ok"},
        ]
    )
    assert h.entries[2]["tool_calls"][0]["function"] == {"name": "f", "arguments": '{"a": 1}'}


def test_history_serialisation_round_trip() -> None:
    for h in (History.from_turns(TOOL_TURNS), History(messages=[{"question": "q", "answer": 1.5}])):
        assert History.model_validate(h.model_dump()) == h
        assert History.model_validate_json(h.model_dump_json()) == h


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            [{"role": "tool", "tool_call_id": "c9", "content": "x"}],
            "turn 0 \\(tool\\) answers tool_call_id 'c9'",
        ),
        (
            [
                {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}]},
                {"role": "user", "content": "hm"},
            ],
            r"turn 0 \(assistant\) calls a tool \(id 'c1'\) that no tool turn answers before turn 1 \(user\)",
        ),
        ([{"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}]}], "is never answered"),
        (
            [
                {"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}]},
                {"role": "tool", "tool_call_id": "c1", "content": "a"},
                {"role": "tool", "tool_call_id": "c1", "content": "b"},
            ],
            "already answered",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "name": "f"}, {"id": "c1", "name": "g"}]}],
            "duplicate tool call id 'c1'",
        ),
        ([{"role": "assistant", "tool_calls": [{"name": "f"}]}], "needs an 'id'"),
        ([{"role": "assistant", "tool_calls": [{"id": "c1"}]}], "tool call has no name"),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": "{oops"}]}],
            "arguments are not valid JSON",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"id": "c1", "name": "f", "arguments": "[1]"}]}],
            "JSON object",
        ),
        ([{"role": "user", "content": "x", "tool_call_id": "c1"}], "only tool turns have a tool_call_id"),
        ([{"role": "user", "content": "x", "tool_calls": []}], "only assistant turns can have tool_calls"),
        ([{"role": "tool", "content": "x"}], "needs the tool_call_id"),
        ([{"role": "bot", "content": "x"}], "role must be one of"),
        ([{"role": "user"}], "turn 0 \\(user\\): content is required"),
        ([{"role": "assistant", "content": None}], "content is required"),
        ([{"role": "user", "content": 42}], "content must be a string or a list of content parts"),
        ([{"role": "user", "content": "x", "extra": 1}], "unknown keys \\['extra'\\]"),
        (["hello"], "expected a chat message dict"),
    ],
)
def test_history_turn_validation(turns: list, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        History.from_turns(turns)


def test_history_repr_is_short() -> None:
    big = "x" * 10_000
    h = History.from_turns([{"role": "user", "content": big}])
    assert repr(h) == "History(1 turn)" and str(h) == "History(1 turn)"
    assert repr(History(messages=[{"a": 1}, {"a": 2}])) == "History(2 messages)"


# -- Reasoning ----------------------------------------------------------------------------------


def test_reasoning_is_its_text() -> None:
    r = Reasoning("Step 1: think.")
    assert r == "Step 1: think." and isinstance(r, str) and not r.native
    assert r.text == "Step 1: think." and type(r.text) is str
    assert hash(r) == hash("Step 1: think.")
    assert repr(r) == "Reasoning('Step 1: think.')"
    assert json.dumps({"r": r}) == '{"r": "Step 1: think."}'
    with pytest.raises(TypeError, match="must be a str"):
        Reasoning(3)  # type: ignore[arg-type]


def test_reasoning_from_completion() -> None:
    native = Reasoning.from_completion(Completion(text="answer", reasoning="I considered X"))
    assert native == "I considered X" and native is not None and native.native
    assert repr(native) == "Reasoning('I considered X', native=True)"
    assert Reasoning.from_completion(Completion(text="answer")) is None
    assert Reasoning.from_completion(Completion(text="answer", reasoning="")) is None


def test_reasoning_in_pydantic_models() -> None:
    class Out(BaseModel):
        reasoning: Reasoning

    out = Out(reasoning="because")
    assert type(out.reasoning) is Reasoning and out.reasoning == "because"
    assert out.model_dump() == {"reasoning": "because"} and type(out.model_dump()["reasoning"]) is str
    assert Out.model_validate_json(out.model_dump_json()) == out
    assert Out.model_json_schema()["properties"]["reasoning"]["type"] == "string"
    kept = Out(reasoning=Reasoning("n", native=True))
    assert kept.reasoning.native  # an existing Reasoning is kept, flag included
    with pytest.raises(ValidationError):
        Out(reasoning=5)


def test_reasoning_pickles_with_flag() -> None:
    r = pickle.loads(pickle.dumps(Reasoning("t", native=True)))
    assert r == "t" and r.native and type(r) is Reasoning


# -- ToolCalls ----------------------------------------------------------------------------------


def test_tool_calls_from_completion_calls() -> None:
    tc = ToolCalls.from_completion_calls(
        [
            ToolCall("search", {"q": "paris"}, "c1"),
            ToolCall("add", '{"a": 1, "b": 2}', "c2"),
            ToolCall("noop", ""),
        ]
    )
    assert [c.name for c in tc.tool_calls] == ["search", "add", "noop"]
    assert tc.tool_calls[1].args == {"a": 1, "b": 2} and tc.tool_calls[1].id == "c2"
    assert tc.tool_calls[2].args == {}
    assert len(tc) == 3
    assert tc.to_tool_calls()[0] == ToolCall("search", {"q": "paris"}, "c1")


def test_tool_calls_from_completion_bad_arguments_report_every_call() -> None:
    with pytest.raises(FieldValueError) as info:
        ToolCalls.from_completion_calls([ToolCall("a", "{bad"), ToolCall("b", "[1, 2]"), ToolCall("c", {})])
    err = info.value
    assert err.fields == ["tool_calls", "tool_calls"]
    assert "tool 'a'" in str(err) and "tool 'b'" in str(err) and "{bad" in str(err)


def test_tool_calls_accepts_shapes_models_write() -> None:
    expected = ToolCalls(tool_calls=[ToolCalls.Call(name="f", args={"x": 1})])
    assert ToolCalls.model_validate({"tool_calls": [{"name": "f", "args": {"x": 1}}]}) == expected
    assert ToolCalls.model_validate([{"name": "f", "arguments": {"x": 1}}]) == expected
    assert ToolCalls.model_validate([{"name": "f", "arguments": '{"x": 1}'}]) == expected
    shaped = ToolCalls.model_validate(
        {"tool_calls": [{"id": "i", "type": "function", "function": {"name": "f", "arguments": '{"x": 1}'}}]}
    )
    assert shaped.tool_calls[0].args == {"x": 1} and shaped.tool_calls[0].id == "i"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ([{"name": "f", "args": "{not json"}], "not valid JSON"),
        ([{"name": "f", "args": "[1]"}], "must be a JSON object"),
        ([{"name": "", "args": {}}], "at least 1 character"),
        ([{"args": {}}], "name"),
        ([{"name": "f", "args": {}, "extra": 1}], "extra"),
        ({"calls": []}, "calls"),
    ],
)
def test_tool_calls_validation_errors(value, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        ToolCalls.model_validate(value)


def test_tool_calls_round_trip_keeps_ids() -> None:
    tc = ToolCalls.from_completion_calls([ToolCall("f", {"a": [1, 2]}, "id-1")])
    assert ToolCalls.model_validate(tc.model_dump()) == tc
    assert ToolCalls.model_validate_json(tc.model_dump_json()) == tc
    assert "id-1" in repr(tc)


def test_tool_calls_schema_for_models_has_no_ids_or_docstrings() -> None:
    schema = ToolCalls.model_json_schema()
    call = schema["$defs"]["Call"]
    assert set(call["properties"]) == {"name", "args"} and call["required"] == ["name", "args"]
    assert "description" not in schema and "description" not in call


def test_tool_calls_prompt_schema_variants() -> None:
    generic = ToolCalls.prompt_schema()
    assert "$defs" not in json.dumps(generic)
    item = generic["properties"]["tool_calls"]["items"]
    assert item["required"] == ["name", "args"] and item["properties"]["name"]["type"] == "string"
    named = ToolCalls.prompt_schema(["search", "add"])
    assert named["properties"]["tool_calls"]["items"]["properties"]["name"]["enum"] == ["search", "add"]
    args_schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    per_tool = ToolCalls.prompt_schema({"search": args_schema, "add": {"type": "object"}})
    alts = per_tool["properties"]["tool_calls"]["items"]["anyOf"]
    assert alts[0]["properties"] == {"name": {"const": "search"}, "args": args_schema}
    single = ToolCalls.prompt_schema({"search": args_schema})
    assert single["properties"]["tool_calls"]["items"]["properties"]["name"] == {"const": "search"}


# -- value-engine hooks -------------------------------------------------------------------------


def test_media_hooks_never_accept_text() -> None:
    img = Image.from_bytes(PNG)
    assert Image.__sigform_coerce__(img) is img
    assert Image.__sigform_coerce__(img.model_dump()) == img
    for text in ("https://example.com/a.png", f"data:image/png;base64,{b64(PNG)}", "/etc/passwd"):
        with pytest.raises(TypeError, match="never made from text"):
            Image.__sigform_coerce__(text)
    with pytest.raises(TypeError, match="never made from text"):
        File.__sigform_coerce__("/etc/passwd")
    with pytest.raises(TypeError, match="expected Audio, got int"):
        Audio.__sigform_coerce__(3)
    assert img.__sigform_render__() == "<Image image/png, 1.0 kB>"
    assert Image.__sigform_describe__().kind == "custom"


def test_reasoning_hooks() -> None:
    assert Reasoning.__sigform_coerce__("why") == "why"
    assert type(Reasoning.__sigform_coerce__("why")) is Reasoning
    with pytest.raises(TypeError, match="must be text"):
        Reasoning.__sigform_coerce__(["a"])
    assert Reasoning("t").__sigform_render__() == "t"
    assert Reasoning.__sigform_describe__().kind == "str"


def test_history_hooks() -> None:
    h = History.__sigform_coerce__([{"question": "q", "answer": "a"}])
    assert h.entries == [{"question": "q", "answer": "a"}] and not h.is_raw_turns
    turns = History.from_turns([{"role": "user", "content": "hi"}])
    assert History.__sigform_coerce__(turns.model_dump()) == turns
    with pytest.raises(TypeError, match=r"History\.from_turns"):
        History.__sigform_coerce__('[{"role": "user", "content": "hi"}]')


def test_tool_calls_hook_reads_json_text_and_refuses_prose() -> None:
    expected = ToolCalls(tool_calls=[ToolCalls.Call(name="f", args={"x": 1})])
    assert ToolCalls.__sigform_coerce__('{"tool_calls": [{"name": "f", "args": {"x": 1}}]}') == expected
    assert (
        ToolCalls.__sigform_coerce__('```json\n[{"name": "f", "arguments": "{\\"x\\": 1}"}]\n```') == expected
    )
    assert ToolCalls.__sigform_coerce__([{"name": "f", "args": {"x": 1}}]) == expected
    with pytest.raises(ValueError, match="tool calls must be JSON"):
        ToolCalls.__sigform_coerce__("call f with x=1")

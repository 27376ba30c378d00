"""An answer parsed twice (Chat, then its JSON fallback on the same text) is scanned once."""

from __future__ import annotations

import sigform as sf
from sigform.adapters import brace_scan, xml_scan
from sigform.adapters.brace_scan import object_spans
from sigform.adapters.recent_scan import RecentScan, forget_recent_scans
from sigform.signatures import InputField, OutputField, make_signature
from sigform.testing import ScriptedLM


def test_the_same_text_is_scanned_once_and_a_different_text_again() -> None:
    calls: list[str] = []
    recent = RecentScan(lambda text: calls.append(text) or len(text))
    text = "x" * 1000
    assert recent(text) == recent("".join(["x"] * 1000)) == 1000  # equal, not the same object
    assert recent("y") == 1 and recent(text) == 1000
    assert len(calls) == 3
    forget_recent_scans()
    assert recent(text) == 1000 and len(calls) == 4


def test_object_spans_hands_out_a_new_list_each_time() -> None:
    text = 'a {"x": 1} b {"y": {"z": 2}} ' + "{ " * 30_000  # over the step bound: incomplete
    first = object_spans(text)
    first.append((0, 0))
    again = object_spans(text)
    assert again == [(2, 10), (13, 28)] and again is not first and again.complete is False


def test_predict_with_a_repeated_garbled_answer_scans_it_once_per_format(monkeypatch) -> None:
    seen: dict[str, int] = {"json": 0, "xml": 0}
    real_json, real_xml = brace_scan._scan, xml_scan._scan

    def json_scan(text: str, *, loose: bool) -> brace_scan.Spans:
        seen["json"] += 1
        return real_json(text, loose=loose)

    def xml_scan_(text: str) -> xml_scan.Element:
        seen["xml"] += 1
        return real_xml(text)

    monkeypatch.setattr(brace_scan._recent_strict, "_scan", lambda text: json_scan(text, loose=False))
    monkeypatch.setattr(brace_scan._recent_loose, "_scan", lambda text: json_scan(text, loose=True))
    monkeypatch.setattr(xml_scan._recent, "_scan", xml_scan_)
    forget_recent_scans()
    sig = make_signature({"text": (str, InputField()), "answer": (str, OutputField())})
    garbled = '"{' * 5000 + "<a>" * 100
    lm = ScriptedLM(lambda *args, **kwargs: garbled, features={"stop"})
    program = sf.Predict(sig, lm=lm, adapter=sf.ChatAdapter())
    try:
        program(text="t")
    except sf.ParseError:
        pass
    assert len(lm.calls) >= 2  # the Chat request and its JSON fallback got the same text
    assert seen == {"json": 2, "xml": 1}  # strict + loose brace scans, one XML scan: not twice each


def test_predict_with_a_run_of_brackets_reads_headers_once(monkeypatch) -> None:
    from sigform.adapters import chat_scan

    calls: list[int] = []
    real = chat_scan._find_headers
    monkeypatch.setattr(chat_scan._recent_headers, "_scan", lambda text: calls.append(1) or real(text))
    forget_recent_scans()
    sig = make_signature({"text": (str, InputField()), "answer": (str, OutputField())})
    lm = ScriptedLM(lambda *args, **kwargs: "[" * 20_000, features={"stop"})
    try:
        sf.Predict(sig, lm=lm, adapter=sf.ChatAdapter())(text="t")
    except sf.ParseError:
        pass
    assert len(lm.calls) >= 2 and calls == [1]  # sections, label check, fallback: one header scan

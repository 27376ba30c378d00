"""10. Field streaming: the stream parser's CPU time over one long answer, per format.

``Predict.stream`` feeds every text delta of the answer to a
:class:`~sigform.adapters.streaming.StreamParser`, which reports each field's text so far. Here one
answer (one long field, then a short one) is fed in 4-character deltas, as a server streams small
tokens, at 10 KB, 100 KB, 400 KB and 1 MB, in the chat, JSON and XML formats (and XML whose field holds
`<`: comments, CDATA, a bare `a < b`). The events are consumed as a printer of deltas would: their
``text_so_far`` is never read, so it is never built. Linear reading shows as time growing with the
size (10x the text, ~10x the time); the parser used to read the whole text again on every delta
(x100 for 10x the text: 40 KB of chat took ~5 s, of JSON longer), and then to copy the field's
text into every event (400 KB of chat ~1.5 s, 1 MB ~16 s).
"""

from __future__ import annotations

import time

from benchmarks.common import Row, Section

SIZES = (10_000, 100_000, 400_000, 1_000_000)
DELTA = 4


def answers(size: int) -> dict[str, str]:
    """format -> an answer of about ``size`` characters: a long ``answer`` field, then ``note``."""
    return {
        "chat": "[[ ## answer ## ]]\n" + "lorem ipsum " * (size // 12) + "\n[[ ## note ## ]]\nok",
        "json": '{"answer": "' + "lorem \\u00e9 ipsum \\n " * (size // 24) + '", "note": "ok"}',
        "xml": "<answer>" + "lorem &amp; ipsum " * (size // 18) + "</answer><note>ok</note>",
        # `<` inside the field: comments, CDATA and a bare `a < b` (decoded whole per delta before)
        "xml <": "<answer>" + "a < b <!-- c --> <![CDATA[d]]> " * (size // 32) + "</answer><note>ok</note>",
    }


def time_stream(fmt: str, text: str) -> float:
    """CPU seconds to feed ``text`` in ``DELTA``-character pieces and finish."""
    from sigform.adapters.streaming import StreamParser
    from sigform.signatures import make_signature

    parser = StreamParser(make_signature("question -> answer, note"), fmt.split()[0])
    t0 = time.process_time()
    for i in range(0, len(text), DELTA):
        parser.feed(text[i : i + DELTA])
    parser.finish()
    return time.process_time() - t0


def run(sizes: tuple[int, ...] = SIZES) -> Section:
    section = Section("stream_parse")
    for size in sizes:
        for fmt, text in answers(size).items():
            section.rows.append(Row(
                "10 stream parse", f"{fmt} {size // 1000} KB in {DELTA}-char deltas", "ms",
                round(time_stream(fmt, text) * 1000, 1), note=f"{len(text) // DELTA:,} deltas",
            ))
    return section


def main() -> None:
    for row in run().rows:
        print(f"{row.metric:38} {row.sigform:10.1f} {row.unit:3} {row.note}")


if __name__ == "__main__":
    main()

"""Pruning long conversations: properties over random conversations with interleaved tool calls,
and the options and errors around it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sigform.conversation import DEFAULT_MARKER, Layout, Pruning, prune, tool_units
from sigform.conversation.report import PruneReport
from sigform.errors import ContextWindowError
from sigform.types import History

Message = dict[str, Any]


# -- random conversations ------------------------------------------------------------------
@st.composite
def conversations(draw: Any) -> tuple[list[Message], Layout, list[int]]:
    demos = draw(st.integers(0, 3))
    messages: list[Message] = [{"role": "system", "content": "You answer questions."}]
    for d in range(demos):
        messages.append({"role": "user", "content": f"demo q{d}"})
        messages.append({"role": "assistant", "content": f"demo a{d}"})
    prefix = len(messages)
    n_units = draw(st.integers(0, 25))
    call_no = 0
    for u in range(n_units):
        kind = draw(st.sampled_from(["user", "assistant", "pair", "tools"]))
        if kind in ("user", "pair"):
            messages.append({"role": "user", "content": f"turn {u} " + "x" * draw(st.integers(0, 40))})
        if kind in ("assistant", "pair"):
            messages.append({"role": "assistant", "content": f"reply {u}"})
        if kind == "tools":
            k = draw(st.integers(1, 3))
            ids = [f"call_{call_no + i}" for i in range(k)]
            call_no += k
            messages.append(
                {
                    "role": "assistant",
                    "content": draw(st.sampled_from([None, "let me look"])),
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
                        for i in ids
                    ],
                }
            )
            order = draw(st.permutations(ids))
            messages += [{"role": "tool", "tool_call_id": i, "content": f"result of {i}"} for i in order]
    end = len(messages)
    messages.append({"role": "user", "content": "the current question"})
    layout = Layout(prefix, tool_units(messages, prefix, end))
    counts = [draw(st.integers(1, 60)) for _ in messages]
    return messages, layout, counts


def _calls(messages: list[Message]) -> list[str]:
    return [c["id"] for m in messages for c in m.get("tool_calls") or ()]


def _results(messages: list[Message]) -> list[str]:
    return [m["tool_call_id"] for m in messages if m["role"] == "tool"]


@settings(max_examples=150, deadline=None)
@given(
    conversations(),
    st.one_of(st.none(), st.integers(0, 1500)),
    st.one_of(st.none(), st.integers(0, 30)),
)
def test_pruning_properties(
    case: tuple[list[Message], Layout, list[int]], budget: int | None, keep_last: int | None
) -> None:
    messages, layout, counts = case
    original = [dict(m) for m in messages]
    marker_tokens = 10
    fixed = sum(counts) - sum(counts[i] for u in layout.units for i in u)
    try:
        result = prune(
            messages, layout, counts, budget=budget, keep_last=keep_last, marker_tokens=marker_tokens
        )
    except ContextWindowError as exc:
        # only when the prefix and the current request alone exceed the budget
        assert budget is not None and fixed + marker_tokens > budget
        assert f"budget of {budget}" in str(exc)
        return
    out, report = result.messages, result.report
    assert messages == original  # the input is not modified
    p = layout.prefix
    # system message and demos untouched, current request kept last
    assert out[:p] == messages[:p]
    assert out[-1] == messages[-1]
    # marker present iff something was dropped
    tail = "omitted to fit the model's context window.]"
    has_marker = len(out) > p and str(out[p]["content"]).endswith(tail)
    assert has_marker == (report is not None)
    kept = out[p + 1 : -1] if has_marker else out[p:-1]
    # the kept turns are the most recent ones, in order, unchanged
    start, end = layout.region
    assert kept == messages[end - len(kept) : end]
    # every kept tool call is still paired with its result, ids consistent
    assert sorted(_calls(kept)) == sorted(_results(kept))
    History.from_turns(out[p:])  # validates pairing and order the way providers require
    n_units = len(layout.units)
    kept_units = n_units - (report.dropped_units if report else 0)
    if keep_last is not None:
        assert kept_units <= keep_last
    if report is not None:
        assert report.kept_units == kept_units
        dropped_idx = [i for u in report.dropped for i in u]
        assert dropped_idx == list(range(start, end - len(kept)))
        assert sorted(report.dropped_tool_calls) == sorted(
            set(_calls(messages[start:end])) - set(_calls(kept))
        )
        assert f"{report.dropped_units} earlier turn(s)" in out[p]["content"]
    if budget is not None:
        cost = fixed + sum(counts[i] for u in layout.units[n_units - kept_units :] for i in u)
        cost += marker_tokens if report else 0
        assert cost <= budget
        # maximal: one more (older) unit would not have fitted, or keep_last forbade it
        if report is not None and (keep_last is None or kept_units < keep_last):
            older = layout.units[n_units - kept_units - 1]
            assert cost + sum(counts[i] for i in older) > budget
    else:
        assert kept_units == (n_units if keep_last is None else min(n_units, keep_last))
    # deterministic
    again = prune(messages, layout, counts, budget=budget, keep_last=keep_last, marker_tokens=marker_tokens)
    assert again.messages == out and again.report == report


def _chat(turns: int) -> tuple[list[Message], Layout]:
    messages: list[Message] = [{"role": "system", "content": "sys"}]
    for i in range(turns):
        messages += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
    messages.append({"role": "user", "content": "now"})
    return messages, Layout.from_region(messages, 1, len(messages) - 1)


def test_nothing_dropped_means_the_same_messages_and_no_report() -> None:
    messages, layout = _chat(3)
    result = prune(messages, layout, [5] * len(messages), budget=1000)
    assert result.messages == messages and result.report is None


def test_keep_last_keeps_exactly_the_newest_turns_with_a_marker() -> None:
    messages, layout = _chat(5)
    result = prune(messages, layout, [5] * len(messages), keep_last=2)
    marker = DEFAULT_MARKER.format(dropped=8, messages=8)
    assert [m["content"] for m in result.messages] == ["sys", marker, "q4", "a4", "now"]
    assert result.messages[1]["role"] == "user"
    assert "8 earlier turn(s)" in result.messages[1]["content"]
    assert result.report is not None and result.report.reason == "keep_last"
    assert result.report.dropped_messages == 8


def test_a_tool_call_is_dropped_together_with_all_its_results() -> None:
    messages: list[Message] = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "weather?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "w", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "w", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "a", "content": "1"},
        {"role": "tool", "tool_call_id": "b", "content": "2"},
        {"role": "assistant", "content": "done"},
        {"role": "user", "content": "now"},
    ]
    layout = Layout.from_region(messages, 1, 6)
    assert layout.units == ((1,), (2, 3, 4), (5,))
    counts = [1, 1, 10, 10, 10, 1, 1]
    result = prune(messages, layout, counts, budget=20, marker_tokens=1)
    assert [m.get("tool_call_id") for m in result.messages if m["role"] == "tool"] == []
    assert result.report is not None and result.report.dropped_tool_calls == ("a", "b")
    assert result.report.dropped == ((1,), (2, 3, 4))


def test_prefix_and_request_too_big_is_a_clear_context_window_error() -> None:
    messages, layout = _chat(2)
    counts = [500] + [1] * (len(messages) - 2) + [600]
    with pytest.raises(ContextWindowError, match=r"alone take 1100 tokens.*all 4 earlier turn"):
        prune(messages, layout, counts, budget=1000)


def test_layout_must_be_contiguous_after_the_prefix() -> None:
    with pytest.raises(ValueError, match="expected message 1, got 2"):
        Layout(1, ((2,),))
    with pytest.raises(ValueError, match="covers 5 messages"):
        Layout(1, ((1, 2, 3, 4),)).check([{"role": "user", "content": "x"}] * 3)


def test_pruning_options_are_checked() -> None:
    with pytest.raises(ValueError, match="keep_last must be a non-negative integer"):
        Pruning(keep_last=-1)
    with pytest.raises(ValueError, match="may only use"):
        Pruning(marker="{turns} dropped")
    assert Pruning(marker="{dropped} turns / {messages} messages gone").marker


def test_report_summary_names_what_was_dropped() -> None:
    report = PruneReport(
        reason="token budget",
        dropped=((1, 2), (3,)),
        kept_units=4,
        tokens_before=900,
        tokens_after=300,
        budget=400,
        dropped_tool_calls=("call_1",),
        exact=True,
    )
    text = report.summary()
    assert "2 oldest turn(s) (3 message(s), 1 tool call(s)" in text
    assert "900 -> 300 tokens (budget 400)" in text and "token budget" in text


def test_keep_last_drop_counts_the_marker_against_the_budget() -> None:
    # found by hypothesis: keep_last=0 dropped the one earlier turn and added the marker, but the
    # marker's tokens were not checked against the budget, so the request exceeded it
    messages: list[Message] = [
        {"role": "system", "content": "sys"},
        {"role": "assistant", "content": "reply 0"},
        {"role": "user", "content": "the current question"},
    ]
    layout = Layout.from_region(messages, 1, 2)
    with pytest.raises(ContextWindowError, match="budget of 2"):
        prune(messages, layout, [1, 1, 1], budget=2, keep_last=0, marker_tokens=10)
    fits = prune(messages, layout, [1, 1, 1], budget=12, keep_last=0, marker_tokens=10)
    assert fits.report is not None and fits.report.tokens_after == 12

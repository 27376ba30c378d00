"""Property tests: format_assistant -> parse round trips for random signatures over all
supported types, fuzzed completions raise nothing but ParseError, and the streaming parser gives
the same fields whatever the chunking."""

from __future__ import annotations

import itertools
import string
from enum import Enum
from typing import Any, Literal, Optional

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from sigform.adapters import ChatAdapter, JSONAdapter, TwoStepAdapter, XMLAdapter
from sigform.errors import ParseError
from sigform.signatures import InputField, OutputField, make_signature

ADAPTERS = [ChatAdapter(), JSONAdapter(), XMLAdapter(), TwoStepAdapter()]
SETTINGS = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


class Shade(Enum):
    LIGHT = "light"
    DARK = "dark tone"


class Rank(Enum):
    LOW = 1
    HIGH = 2


class Part(BaseModel):
    name: str
    count: int
    tags: list[str] = []


ALPHABET = string.ascii_letters + string.digits + " .,!?&<>-_()[]#*/'"
text = (
    st.text(ALPHABET, min_size=1, max_size=30)
    .map(str.strip)
    .filter(lambda s: bool(s) and s[0] not in "'\"-*#" and s.lower() not in ("none", "null"))
)
names = st.sampled_from(["alpha", "beta_two", "gamma", "delta_x", "epsilon", "zeta_9", "eta"])
TYPES: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (str, text),
    (int, st.integers(-(10**9), 10**9)),
    (float, st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)),
    (bool, st.booleans()),
    (Literal["yes", "no", "maybe"], st.sampled_from(["yes", "no", "maybe"])),
    (Literal[1, 2, 3], st.sampled_from([1, 2, 3])),
    (Shade, st.sampled_from(list(Shade))),
    (Rank, st.sampled_from(list(Rank))),
    (Optional[int], st.none() | st.integers(-1000, 1000)),
    (list[str], st.lists(text, max_size=4)),
    (list[int], st.lists(st.integers(-100, 100), max_size=4)),
    (
        dict[str, int],
        st.dictionaries(
            st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True), st.integers(0, 99), max_size=3
        ),
    ),
    (Part, st.builds(Part, name=text, count=st.integers(0, 50), tags=st.lists(text, max_size=3))),
    (list[Part], st.lists(st.builds(Part, name=text, count=st.integers(0, 50)), max_size=3)),
]


@st.composite
def signature_and_outputs(draw: st.DrawFn) -> tuple[Any, dict[str, Any]]:
    field_names = draw(st.lists(names, min_size=1, max_size=4, unique=True))
    fields: dict[str, Any] = {"question": (str, InputField())}
    values: dict[str, Any] = {}
    for name in field_names:
        annotation, strategy = TYPES[draw(st.integers(0, len(TYPES) - 1))]
        fields[name] = (annotation, OutputField())
        values[name] = draw(strategy)
    return make_signature(fields), values


@SETTINGS
@given(signature_and_outputs(), st.sampled_from(ADAPTERS))
def test_format_assistant_then_parse_round_trips(case: tuple[Any, dict[str, Any]], adapter: Any) -> None:
    signature, outputs = case
    text = adapter.format_assistant(signature, outputs)
    assert adapter.parse(signature, text) == outputs


def _mutate(text: str, data: st.DataObject) -> str:
    for _ in range(data.draw(st.integers(1, 4))):
        op = data.draw(st.sampled_from(["cut", "drop", "insert", "dup"]))
        i = data.draw(st.integers(0, max(len(text) - 1, 0)))
        if op == "cut":
            text = text[:i]
        elif op == "drop":
            text = text[:i] + text[i + data.draw(st.integers(1, 5)) :]
        elif op == "insert":
            text = (
                text[:i]
                + data.draw(st.sampled_from(["{", "}", "<", ">", '"', "[[", "## ]]", "\n", "<item>", ","]))
                + text[i:]
            )
        else:
            text = text + text[i:]
    return text


@SETTINGS
@given(signature_and_outputs(), st.sampled_from(ADAPTERS), st.data())
def test_mutated_completions_raise_only_parse_errors(
    case: tuple[Any, dict[str, Any]], adapter: Any, data: st.DataObject
) -> None:
    signature, outputs = case
    text = _mutate(adapter.format_assistant(signature, outputs), data)
    try:
        result = adapter.parse(signature, text)
    except ParseError:
        return
    assert set(result) == set(signature.output_fields)


@SETTINGS
@given(signature_and_outputs(), st.text(max_size=200), st.sampled_from(ADAPTERS))
def test_random_text_raises_only_parse_errors(
    case: tuple[Any, dict[str, Any]], junk: str, adapter: Any
) -> None:
    try:
        adapter.parse(case[0], junk)
    except ParseError:
        pass


def _chunks(text: str, cuts: list[int]) -> list[str]:
    points = sorted({c % (len(text) + 1) for c in cuts} | {0, len(text)})
    return [text[a:b] for a, b in itertools.pairwise(points) if b > a]


@SETTINGS
@given(signature_and_outputs(), st.sampled_from(ADAPTERS[:3]), st.lists(st.integers(0, 10_000), max_size=30))
def test_stream_parser_is_chunking_independent(
    case: tuple[Any, dict[str, Any]], adapter: Any, cuts: list[int]
) -> None:
    signature, outputs = case
    text = adapter.format_assistant(signature, outputs)

    def run(chunks: list[str]) -> dict[str, tuple[str, bool]]:
        parser = adapter.stream_parser(signature)
        state: dict[str, tuple[str, bool]] = {}
        for chunk in chunks:
            for delta in [*parser.feed(chunk)]:
                old = state.get(delta.field, ("", False))
                assert delta.text_so_far.startswith(old[0]), (old, delta)  # text only grows
                assert not old[1]  # nothing after done
                state[delta.field] = (delta.text_so_far, delta.done)
        for delta in parser.finish():
            state[delta.field] = (delta.text_so_far, delta.done)
        return state

    whole = run([text])
    assert run(_chunks(text, cuts)) == whole
    assert set(whole) == set(outputs) and all(done for _, done in whole.values())
    for name, value in outputs.items():
        if isinstance(value, str):
            assert whole[name][0] == value

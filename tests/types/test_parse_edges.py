"""Parse edges of issue 27, finding 16: `- null` items, lone surrogates in answers, big dicts.

* A bare ``null`` / ``None`` item of a text list (or value of a ``key: value`` dict) is no value,
  as JSON's ``null`` is: ``None`` for Optional items, an error for text items. It was the
  string ``'null'``, a silently wrong value.
* A lone surrogate in the model's answer (a JSON ``"\\ud83d"`` escape from a cut-off emoji) was
  passed into the output while inputs with one are refused; now a field error, whose message is
  itself printable.
* A dict of 10k ``key: value`` lines is read in one pass per line (speed: benchmarks, not here).
"""

from __future__ import annotations

import time
from typing import Optional

import pytest
from pydantic import BaseModel

import sigform as sf
from sigform.errors import FieldValueError, ParseError
from sigform.types import coerce


@pytest.mark.parametrize(
    "text, annotation",
    [
        ("- null\n- apples", list[str]),
        ("- None\n- apples", list[str]),
        ("1. NULL\n2. apples", list[str]),
        ("apples, null", list[str]),
        ("- null\n- apples", set[str]),
        ("(null, apples)", tuple[str, str]),
        ("fruit: null\nveg: kale", dict[str, str]),
    ],
)
def test_a_null_item_of_a_text_collection_is_no_text(text: str, annotation: object) -> None:
    with pytest.raises(FieldValueError, match=r"'(?i:null|none)' is no value: expected text"):
        coerce(text, annotation, field="items")


def test_a_null_item_is_none_where_items_may_be_missing_and_quoted_null_is_text() -> None:
    assert coerce("- null\n- apples", list[Optional[str]], field="items") == [None, "apples"]
    assert coerce("- null\n- 3", list[Optional[int]], field="items") == [None, 3]
    assert coerce("fruit: null\nveg: kale", dict[str, Optional[str]], field="f") == {
        "fruit": None,
        "veg": "kale",
    }
    assert coerce('- "null"\n- apples', list[str], field="items") == ["null", "apples"]
    assert coerce("- nullable\n- apples", list[str], field="items") == ["nullable", "apples"]


def test_the_adapters_read_a_null_bullet_as_no_value() -> None:
    sig = sf.make_signature({"q": (str, sf.InputField()), "items": (list[str], sf.OutputField())})
    with pytest.raises(ParseError, match="is no value"):
        sf.ChatAdapter().parse(sig, "[[ ## items ## ]]\n- null\n- apples\n\n[[ ## completed ## ]]")


class Pet(BaseModel):
    name: str


SURROGATE_ANSWERS = {
    "json escape": ('{"answer": "party \\ud83d"}', str),
    "raw in chat": ("[[ ## answer ## ]]\nparty \ud83d\n\n[[ ## completed ## ]]", str),
    "list item": ('{"answer": ["ok", "party \\ud83d"]}', list[str]),
    "model field": ('{"answer": {"name": "\\udc00rex"}}', Pet),
    "dict key": ('{"answer": {"\\ud83d": 1}}', dict[str, int]),
}


@pytest.mark.parametrize("name", sorted(SURROGATE_ANSWERS))
def test_a_lone_surrogate_in_an_answer_is_a_field_error(name: str) -> None:
    completion, annotation = SURROGATE_ANSWERS[name]
    sig = sf.make_signature({"q": (str, sf.InputField()), "answer": (annotation, sf.OutputField())})
    for adapter in (sf.JSONAdapter(), sf.ChatAdapter()):
        with pytest.raises(FieldValueError) as info:
            adapter.parse(sig, completion)
        message = str(info.value)
        assert "lone surrogate" in message and "answer" in message
        message.encode("utf-8")  # the error itself can be printed and logged


def test_a_whole_emoji_in_an_answer_is_kept() -> None:
    sig = sf.make_signature({"q": (str, sf.InputField()), "answer": (str, sf.OutputField())})
    assert sf.JSONAdapter().parse(sig, '{"answer": "party \\ud83c\\udf89"}') == {"answer": "party \U0001f389"}


def test_a_dict_of_100k_lines_is_read_in_bounded_time() -> None:
    text = "\n".join(f"key{i}: {i}" for i in range(100_000))  # 1.6 MB
    t0 = time.process_time()
    assert len(coerce(text, dict[str, int], field="counts")) == 100_000
    assert time.process_time() - t0 < 20  # ~0.5 s here; a quadratic reading would take hours


@pytest.mark.parametrize("depth", [1, 33, 60])
def test_a_lone_surrogate_nested_deep_in_an_answer_is_found(depth: int) -> None:
    from typing import Any

    # the first walker stopped at 32 levels: a 33-deep list under dict[str, Any] passed it through
    text = '{"a": ' + "[" * depth + '"\\ud800"' + "]" * depth + "}"
    with pytest.raises(FieldValueError, match="lone surrogate"):
        coerce(text, dict[str, Any], field="f")

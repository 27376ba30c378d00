"""The real-model suite (benchmarks/real_suite): its data, its grading, and its harness.

The harness runs here against a loopback OpenAI-compatible fake; the figures themselves come from
``python -m benchmarks.real_suite`` on a real model (nothing about speed or accuracy of a model is
asserted here).
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from pydantic import TypeAdapter

from benchmarks.real_suite import grammar_script, report
from benchmarks.real_suite.run import run_all, run_program
from benchmarks.real_suite.scoring import fields_right, value_right
from benchmarks.real_suite.tasks import TASKS, select, to_plain
from sigform.testing.providers import ErrorReply, OpenAIChatFake, Reply
from sigform.testing.providers.server import RecordedRequest


def test_every_task_has_three_demos_and_the_suite_has_80_test_examples() -> None:
    assert len(TASKS) >= 4
    assert all(len(task.examples("demos")) == 3 for task in TASKS.values())
    assert sum(len(task.examples("test")) for task in TASKS.values()) >= 80
    assert all(len(task.examples("dev")) >= 10 for task in TASKS.values())


def test_ids_and_texts_are_unique_across_splits() -> None:
    # a dev or demo text reappearing in test would let tuning leak into the held-out figures
    ids, texts = [], []
    for task in TASKS.values():
        for split in ("demos", "dev", "test"):
            for example in task.examples(split):
                ids.append(example["id"])
                texts.append(example["text"].casefold())
    assert len(ids) == len(set(ids))
    assert len(texts) == len(set(texts))


@pytest.mark.parametrize("name", sorted(TASKS))
def test_labels_are_canonical_typed_values(name: str) -> None:
    task = TASKS[name]
    not_stated = 0
    for split in ("demos", "dev", "test"):
        for example in task.examples(split):
            assert list(example["expect"]) == list(task.output_names), example["id"]
            typed = task.typed(example["expect"])
            assert to_plain(typed) == example["expect"], example["id"]  # plain JSON, round-trips
            for field, alternatives in (example.get("also") or {}).items():
                assert all(isinstance(a, str) for a in alternatives), example["id"]
                assert field in example["expect"], example["id"]
            if split == "test":
                not_stated += json.dumps(example["expect"]).count("null")
    assert not_stated >= 2, f"{name}: the test split needs inputs whose right answer is 'not stated'"


DECIMAL_COMMA = re.compile(r"\d,\d{2}(?!\d)|\d\.\d{3}(?!\d)")


def test_money_in_the_inputs_is_never_ambiguous() -> None:
    assert DECIMAL_COMMA.search("€1.299,00") and DECIMAL_COMMA.search("EUR 1.299")
    assert not DECIMAL_COMMA.search("¥52,000 and $18,900.00")
    # a decimal comma (`1.299,00`) would make the label a matter of locale
    for task in TASKS.values():
        for split in ("demos", "dev", "test"):
            for example in task.examples(split):
                assert not DECIMAL_COMMA.search(example["text"]), example["id"]


@pytest.mark.parametrize(
    ("got", "want", "right"),
    [
        ("The Lindenhof Inn", "Lindenhof Inn", True),
        ("  harbor tech supplies. ", "Harbor Tech Supplies", True),
        ("Harbor Tech", "Harbor Tech Supplies", False),
        (2450.004, 2450.0, True),
        (2450.01, 2450.0, False),
        (True, 1, False),
        (1, True, False),
        (None, None, True),
        ("", None, False),
        (None, 3, False),
        ("2025-05-01", "2025-05-01", True),
        ("2025-05-02", "2025-05-01", False),
        (["Eggs", "flour"], ["flour", "egg"], True),
        (["tomato", "olive"], ["tomatoes", "olives"], True),
        (["flour"], ["flour", "eggs"], False),
        (["flour", "flour"], ["flour"], False),
        ("flour, eggs", ["flour", "eggs"], False),
        ({"name": "Hall", "city": "Cork", "extra": 1}, {"name": "hall", "city": "Cork"}, True),
        ({"name": "Hall"}, {"name": "Hall", "city": "Cork"}, False),
    ],
)
def test_value_grading(got: Any, want: Any, right: bool) -> None:
    assert value_right(got, want) is right


def test_alternative_answers_apply_to_their_field_only() -> None:
    example = {
        "expect": {"vendor": "Hotel Bellavista", "total": 10.0},
        "also": {"vendor": ["Hotel Bellavista, Florence"]},
    }
    assert fields_right({"vendor": "Hotel Bellavista, Florence", "total": 10.0}, example) == {
        "vendor": True,
        "total": True,
    }
    assert fields_right({"vendor": "Florence", "total": 10.0}, example)["vendor"] is False


def _chat_answer(values: dict[str, Any], task_name: str) -> str:
    task = TASKS[task_name]
    parts = []
    for out in task.outputs:
        value = values[out.name]
        text = (
            json.dumps(value)
            if isinstance(value, (dict, list))
            else ("None" if value is None else str(value))
        )
        parts.append(f"[[ ## {out.name} ## ]]\n{text}")
    return "\n\n".join(parts) + "\n\n[[ ## completed ## ]]"


def _answering(task_name: str, wrong_id: str, broken_id: str) -> Any:
    """A fake model that answers every people example right, except one wrong and one unparseable."""
    by_text = {e["text"]: e for e in TASKS[task_name].examples("dev")}

    def responder(request: RecordedRequest) -> Reply:
        last = request.json["messages"][-1]["content"]
        example = next(e for text, e in by_text.items() if text in last)
        values = dict(example["expect"])
        if example["id"] == wrong_id:
            values["name"] = "Somebody Else"
        if example["id"] == broken_id:
            return Reply("I am not sure what you mean.")
        return Reply(_chat_answer(values, task_name))

    return responder


def test_sigform_program_is_scored_per_example_against_a_fake_server() -> None:
    task = TASKS["people"]
    examples = task.examples("dev")[:4]
    wrong, broken = examples[1]["id"], examples[2]["id"]
    with OpenAIChatFake(responder=_answering("people", wrong, broken)) as fake:
        result = run_program(
            "sigform:chat",
            [task],
            {"people": examples},
            api_base=fake.api_base,
            model="openai/fake-model",
            max_tokens=64,
        )
    records = result["tasks"]["people"]["records"]
    assert [r["right"] for r in records] == [True, False, False, True]
    assert records[1]["fields"] == {"name": False, "age": True, "city": True}
    assert "error" in records[2] and "raw" in records[2]  # a parse failure keeps what the model said
    total = result["total"]
    assert (total["examples"], total["right"], total["parse_failures"]) == (4, 2, 1)
    # the broken answer cost more than one call (sigform's fallback); every call's usage is counted
    assert total["calls"] > 4 and records[2]["calls"] > 1
    assert total["completion_tokens"] == 8 * total["calls"]
    assert total["prompt_tokens"] == 12 * total["calls"]
    body = fake.requests[0].json
    assert body["temperature"] == 0.0 and body["max_tokens"] == 64
    assert "Tomasz Wójcik" in json.dumps(body["messages"], ensure_ascii=False)  # the task's demos are sent


def test_grammar_script_steps_down_once_to_json_object_with_the_schema() -> None:
    task = TASKS["invoice"]
    examples = task.examples("dev")[:3]
    seen: list[dict[str, Any]] = []

    def responder(request: RecordedRequest) -> Reply | ErrorReply:
        seen.append(request.json["response_format"])
        if request.json["response_format"]["type"] == "json_schema":
            return ErrorReply(500, {"detail": "Input should be 'text' or 'json_object'"})
        example = next(e for e in examples if e["text"] == request.json["messages"][-1]["content"])
        return Reply(json.dumps(example["expect"]))

    with OpenAIChatFake(responder=responder) as fake:
        records = grammar_script.run_task(
            task, examples, api_base=fake.api_base, model="openai/m", max_tokens=32
        )
    assert [r["calls"] for r in records] == [2, 1, 1]
    assert [f["type"] for f in seen] == ["json_schema", "json_object", "json_object", "json_object"]
    assert seen[1]["schema"]["properties"]["currency"]["enum"] == ["USD", "EUR", "GBP", "JPY"]
    assert all(r["value"] == e["expect"] for r, e in zip(records, examples, strict=True))


def test_run_all_and_the_tables(tmp_path: Any) -> None:
    task = TASKS["people"]
    with OpenAIChatFake(responder=_answering("people", "none", "none")) as fake:
        run = run_all(
            ["sigform:chat", "sigform:json"],
            [task],
            split="dev",
            limit=2,
            api_base=fake.api_base,
            model="openai/fake-model",
            log=lambda _msg: None,
        )
    assert [r["program"] for r in run["results"]] == ["sigform:chat", "sigform:json"]
    chat = run["results"][0]["total"]
    assert chat["right"] == 2 and chat["accuracy"] == 1.0
    table = report.markdown(run)
    assert "| sigform:chat | 100.0% (2/2) |" in table
    assert "| program | people |" in table
    assert "sigform:chat: 0 not right" in report.failures(run)


def test_unknown_names_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown task"):
        select("people,recipes")
    with pytest.raises(ValueError, match="unknown program"):
        run_program(
            "dspy:two-step", [TASKS["people"]], {"people": []}, api_base="http://127.0.0.1:9", model="m"
        )


def test_event_labels_validate_as_the_nested_model() -> None:
    example = TASKS["event"].examples("test")[0]
    event = TypeAdapter(TASKS["event"].outputs[0].annotation).validate_python(example["expect"]["event"])
    assert event.venue.city == example["expect"]["event"]["venue"]["city"]


def test_runs_of_single_programs_merge_into_one_table_in_suite_order(tmp_path: Any) -> None:
    from benchmarks.real_suite.__main__ import main

    def run_of(program: str, split: str = "test") -> dict[str, Any]:
        summary = {
            "examples": 1,
            "right": 1,
            "parse_failures": 0,
            "calls": 1,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "seconds": 1.0,
            "fields_right": 3,
            "fields_total": 3,
            "accuracy": 1.0,
            "field_accuracy": 1.0,
            "seconds_per_example": 1.0,
            "prompt_tokens_per_call": 10.0,
        }
        result = {
            "program": program,
            "tasks": {"people": {"summary": summary, "records": []}},
            "total": summary,
        }
        return {
            "split": split,
            "limit": None,
            "model": "openai/m",
            "max_tokens": 256,
            "tasks": ["people"],
            "results": [result],
        }

    paths = []
    for name, program in (("a", "dspy:json"), ("b", "grammar"), ("c", "sigform:chat")):
        paths.append(tmp_path / f"{name}.json")
        paths[-1].write_text(json.dumps(run_of(program)))
    out = tmp_path / "merged.json"
    assert main(["--merge", *map(str, paths), "--out", str(out)]) == 0
    merged = json.loads(out.read_text())
    assert [r["program"] for r in merged["results"]] == ["sigform:chat", "grammar", "dspy:json"]
    assert "| sigform:chat | 100.0% (1/1) |" in out.with_suffix(".md").read_text()
    paths[0].write_text(json.dumps(run_of("dspy:json", split="dev")))
    with pytest.raises(ValueError, match="differ in"):
        main(["--merge", *map(str, paths), "--out", str(out)])


def _text_completion_fake(examples: list[dict[str, Any]]) -> Any:
    """A loopback server answering text completions: the JSON of the example whose text ends the prompt."""
    from lm_fake_openai import FakeOpenAIServer
    from lm_fake_openai import Reply as RawReply

    fake = FakeOpenAIServer()

    def reply(body: dict[str, Any], headers: dict[str, str]) -> RawReply:
        example = next(e for e in examples if f"Text: {e['text']}\n" in body["prompt"].rsplit("\n\n", 1)[-1])
        return RawReply(
            body={
                "object": "text_completion",
                "model": "m",
                "choices": [{"index": 0, "text": " " + json.dumps(example["expect"]), "finish_reason": None}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20},
            }
        )

    fake.reply = reply
    return fake


@pytest.mark.parametrize("program", ["completion", "sigform:json@text", "sigform:auto@text"])
def test_base_model_programs_send_one_document_to_completions(program: str) -> None:
    task = TASKS["invoice"]
    examples = task.examples("dev")[:2]
    with _text_completion_fake(examples) as fake:
        result = run_program(
            program, [task], {"invoice": examples}, api_base=fake.api_base, model="openai/m", max_tokens=32
        )
    assert result["total"]["right"] == 2 and result["total"]["calls"] == 2
    assert set(fake.paths) == {"/v1/completions"}
    prompt = fake.requests[0]["prompt"]
    assert prompt.startswith(task.instructions) and prompt.endswith("\nJSON:")
    assert 'JSON: {"vendor": "Brightline Printing"' in prompt  # the demos are records


def test_the_local_benchmark_runs_every_adapter_in_both_modes_and_dspys_rows(monkeypatch: Any) -> None:
    from benchmarks import real_model
    from benchmarks.real_suite import run as run_module

    asked: list[str] = []

    def fake_run_all(programs: list[str], tasks: Any, *, split: str) -> dict[str, Any]:
        asked.extend(programs)
        total = {
            "examples": 88,
            "right": 44,
            "accuracy": 0.5,
            "parse_failures": 0,
            "calls": 88,
            "prompt_tokens_per_call": 240,
            "completion_tokens": 3000,
            "seconds_per_example": 10.0,
        }
        return {"results": [{"program": p, "total": total} for p in programs], "split": split, "tasks": []}

    monkeypatch.setattr(run_module, "run_all", fake_run_all)
    monkeypatch.setattr("benchmarks.real_suite.report.markdown", lambda suite: "")
    section = real_model.run(with_dspy=True)
    for adapter in ("chat", "json", "xml", "two-step"):
        assert {f"sigform:{adapter}@text", f"sigform:{adapter}@chat"} <= set(asked)
    assert {"sigform:auto", "sigform:auto@chat", "completion", "grammar"} <= set(asked)
    assert {"dspy:xml", "dspy:xml@text"} <= set(asked)
    rows = {row.metric: row for row in section.rows}
    assert rows["xml@text: all fields right (88 examples)"].dspy == 50  # against DSPy's text-mode XML
    assert "completion 50.0%" in rows["auto: all fields right (88 examples)"].note
    assert "completion script (no framework): all fields right" in rows

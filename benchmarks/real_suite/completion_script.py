"""The reference a user could write in 40 lines for a base model: a few-shot plain-text
completion prompt (``Text: ...`` / ``JSON: {...}`` records, then the new text and ``JSON:``) sent
to ``/v1/completions`` with the output schema as a GBNF grammar (llama-cpp-python's server; the
grammar is made by llama-cpp-python's own converter). The answer is validated by pydantic;
anything that does not validate is a parse failure. One call per example, no retry.
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
from pydantic import Field, create_model

from benchmarks.real_suite.tasks import Task, to_plain


def run_task(
    task: Task, examples: list[dict[str, Any]], *, api_base: str, model: str, max_tokens: int
) -> list[dict[str, Any]]:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    fields: dict[str, Any] = {o.name: (o.annotation, Field(description=o.desc or None)) for o in task.outputs}
    answer = create_model("Answer", **fields)
    grammar = json_schema_to_gbnf(json.dumps(answer.model_json_schema()))
    head = task.instructions + "\n\n"
    for demo in task.examples("demos"):
        head += f"Text: {demo['text']}\nJSON: {json.dumps(demo['expect'], ensure_ascii=False)}\n\n"
    records = []
    with httpx.Client(base_url=api_base, timeout=600) as http:
        for example in examples:
            record: dict[str, Any] = {"id": example["id"], "calls": 1}
            start = time.perf_counter()
            body = {
                "model": model.removeprefix("openai/"),
                "prompt": f"{head}Text: {example['text']}\nJSON:",
                "temperature": 0.0,
                "max_tokens": max_tokens,
                "grammar": grammar,
                "stop": ["\n\n"],
            }
            try:
                reply = http.post("/completions", json=body)
                reply.raise_for_status()
                data = reply.json()
                usage = data.get("usage") or {}
                record["prompt_tokens"] = usage.get("prompt_tokens", 0)
                record["completion_tokens"] = usage.get("completion_tokens", 0)
                text = data["choices"][0]["text"] or ""
                record["raw"] = text[:1500]
                record["value"] = to_plain(answer.model_validate_json(text).model_dump())
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
            record["seconds"] = time.perf_counter() - start
            records.append(record)
    return records

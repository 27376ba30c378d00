"""The baseline a user could write in 40 lines: few-shot chat turns plus the server's JSON-schema
grammar (no framework). Demos are user/assistant turns with JSON answers; the request asks for
``json_schema`` structured output and, if the server rejects that, ``json_object`` carrying the
schema (llama-cpp-python's server constrains generation with it). The answer is validated by
pydantic; anything that does not validate is a parse failure. One call per example, no retry.
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
    fields: dict[str, Any] = {o.name: (o.annotation, Field(description=o.desc or None)) for o in task.outputs}
    answer = create_model("Answer", **fields)
    schema = answer.model_json_schema()
    formats = [
        {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema, "strict": True}},
        {"type": "json_object", "schema": schema},
    ]
    system = f"{task.instructions} Reply with a JSON object with the keys {', '.join(task.output_names)}."
    turns: list[dict[str, str]] = [{"role": "system", "content": system}]
    for demo in task.examples("demos"):
        turns += [
            {"role": "user", "content": demo["text"]},
            {"role": "assistant", "content": json.dumps(demo["expect"], ensure_ascii=False)},
        ]
    records = []
    with httpx.Client(base_url=api_base, timeout=600) as http:
        for example in examples:
            record: dict[str, Any] = {
                "id": example["id"],
                "calls": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
            }
            start = time.perf_counter()
            body = {
                "model": model.removeprefix("openai/"),
                "temperature": 0.0,
                "max_tokens": max_tokens,
                "messages": [*turns, {"role": "user", "content": example["text"]}],
            }
            while True:
                reply = http.post("/chat/completions", json={**body, "response_format": formats[0]})
                record["calls"] += 1
                if reply.status_code < 400 or len(formats) == 1:
                    break
                formats.pop(0)  # the server rejected this mode: use the next one from now on
            try:
                reply.raise_for_status()
                data = reply.json()
                usage = data.get("usage") or {}
                record["prompt_tokens"] += usage.get("prompt_tokens", 0)
                record["completion_tokens"] += usage.get("completion_tokens", 0)
                text = data["choices"][0]["message"]["content"] or ""
                record["raw"] = text[:1500]
                record["value"] = to_plain(answer.model_validate_json(text).model_dump())
            except Exception as exc:
                record["error"] = f"{type(exc).__name__}: {str(exc)[:600]}"
            record["seconds"] = time.perf_counter() - start
            records.append(record)
    return records

"""DSPy side of 7. parse robustness on the shared parse corpus (run with the DSPy venv's python).

For each case, a DSPy signature ``text -> <the case's typed outputs>`` and the adapter the case
names (chat -> ChatAdapter without its JSON fallback, json -> JSONAdapter, xml -> XMLAdapter)
parse the raw completion. Prints, per case id, the parsed values as plain JSON (enums by value,
models dumped) or the error; the parent grades both frameworks with the same rules.

    python corpus.py CORPUS_DIR
"""

from __future__ import annotations

import enum
import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import dspy
from pydantic import BaseModel


def plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, BaseModel):
        return plain(value.model_dump())
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def main() -> None:
    corpus = Path(sys.argv[1])
    spec = importlib.util.spec_from_file_location("parse_corpus_types", corpus / "types.py")
    types_module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = types_module
    spec.loader.exec_module(types_module)
    adapters = {
        "chat": dspy.ChatAdapter(use_json_adapter_fallback=False),
        "json": dspy.JSONAdapter(),
        "xml": dspy.XMLAdapter(),
    }
    results = {}
    with open(corpus / "cases.jsonl", encoding="utf-8") as fh:
        cases = [json.loads(line) for line in fh if line.strip()]
    for case in cases:
        outputs = types_module.outputs_spec(case)
        fields = {"text": (str, dspy.InputField())}
        fields.update({name: (ann, dspy.OutputField()) for name, ann in outputs.items()})
        try:
            signature = dspy.make_signature(fields)
            got = adapters[case["format"]].parse(signature, case["completion"])
            results[case["id"]] = {"value": json.loads(json.dumps(plain(dict(got)), default=str))}
        except Exception as exc:  # every failure to produce a value counts as an error
            results[case["id"]] = {"error": f"{type(exc).__name__}: {str(exc)[:200]}"}
    print(json.dumps(results))


if __name__ == "__main__":
    main()

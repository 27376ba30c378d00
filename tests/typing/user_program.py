"""A user's program, written the way the README shows: `mypy --strict` must find 0 errors in it.

It is type-checked by tests/test_typing.py, never run (nothing here calls a model at import).
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel
from typing_extensions import assert_type

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.tools import ApprovalRequest, Decision, ScriptedApprover, TerminalApprover, auto_approve


class Answer(sf.Signature):
    """Answer with a short factoid."""

    question: str = sf.InputField()
    answer: str = sf.OutputField(desc="1-5 words")
    confidence: float = sf.OutputField(ge=0, le=1)


class Person(BaseModel):
    name: str
    age: int


class ExtractPeople(sf.Signature):
    """List the people mentioned in the text."""

    text: str = sf.InputField()
    people: list[Person] = sf.OutputField(max_length=10)
    tone: Literal["formal", "casual"] = sf.OutputField()


def signatures() -> list[str]:
    same: type[sf.Signature] = sf.make_signature(
        "text -> people: list[Person], tone: Literal['formal', 'casual']", types={"Person": Person}
    )
    also = sf.make_signature({"text": (str, sf.InputField()), "people": (list[Person], sf.OutputField())})
    longer = also.append("sources", sf.OutputField(desc="where the answer comes from"), list[str])
    restored = longer.load_state(longer.dump_state())
    assert restored == longer
    return [same.signature, longer.with_instructions("Cite.").instructions, *ExtractPeople.input_fields]


def values() -> tuple[int, bool, str, str | None]:
    number: int = sf.coerce("1,048,576", int)
    flag: bool = sf.coerce("`Yes`", bool)
    try:
        sf.coerce("somewhere between 300 and 400", int, field="population")
    except sf.FieldValueError as err:
        print(err.errors[0].field)
    return number, flag, sf.render_value(["a", "b"], list[str]), sf.type_hint(bool)


def adapters() -> dict[str, object]:
    sig = sf.make_signature("question -> answer, year: int")
    adapter = sf.ChatAdapter()
    for message in adapter.format(sig, demos=[], inputs={"question": "When?"}):
        print(message["role"])
    parsed: dict[str, object] = adapter.parse(sig, "[[ ## answer ## ]]\nx\n[[ ## year ## ]]\n1969")
    json_adapter: sf.Adapter = sf.JSONAdapter()
    json_adapter.parse(sig, '{"answer": "x", "year": 1969}')
    sf.XMLAdapter().parse(sig, "<answer>x</answer><year>1969</year>")
    sf.ChatAdapter(templates={"user": "{% include 'inputs.jinja' %}\nAnswer now."})
    return parsed


def language_model() -> sf.LM:
    lm = sf.LM("openai/gpt-4o-mini", api_key="env:OPENAI_API_KEY", temperature=0.2, max_tokens=400)
    sf.configure(lm=lm)
    with sf.context(lm=lm.copy(temperature=0)):
        pass
    completions: list[sf.Completion] = lm([{"role": "user", "content": "hi"}])
    print(completions[0].text, completions[0].usage)
    sf.inspect_history(1)
    sf.Predict("question -> answer", lm=lm, adapter=sf.XMLAdapter(), temperature=0)
    sf.configure(adapter=sf.JSONAdapter())
    return lm


async def async_call(lm: sf.LM) -> str:
    completions = await lm.acall([{"role": "user", "content": "hi"}])
    return completions[0].text


def programs() -> tuple[str, float]:
    lm = ScriptedLM(["[[ ## answer ## ]]\nParis\n\n[[ ## confidence ## ]]\n0.93\n\n[[ ## completed ## ]]"])
    qa = sf.Predict("question -> answer, confidence: float", lm=lm)
    pred = qa(question="Capital of France?")
    assert_type(pred, sf.Prediction)
    answer: str = pred.answer
    confidence: float = pred["confidence"]
    print(pred.to_dict())
    typed = sf.Predict(Answer, demos=[{"question": "Capital of Italy?", "answer": "Rome", "confidence": 0.9}])
    typed(question="?", lm=lm)
    from_dict = sf.Predict({"question": (str, sf.InputField()), "answer": (str, sf.OutputField())})
    from_dict.demos = []
    try:
        qa(questoin="typo")
    except sf.InputError as err:
        print(err)
    cot = sf.ChainOfThought("question -> answer", adapter=sf.JSONAdapter())
    assert_type(cot(question="?"), sf.Prediction)
    assert_type(asyncio.run(cot.acall(question="?")), sf.Prediction)
    return answer, confidence


class Summarise(sf.Module):
    def __init__(self) -> None:
        super().__init__()
        self.outline = sf.Predict("text -> points: list[str]")
        self.write = sf.ChainOfThought("points: list[str] -> summary")

    def forward(self, text: str) -> sf.Prediction:
        points: list[str] = self.outline(text=text).points
        return self.write(points=points)


def modules() -> list[str]:
    program = Summarise()
    assert_type(program(text="..."), sf.Prediction)
    summary: str = program(text="...").summary
    print(summary)
    best = sf.BestOfN(program, 3, lambda inputs, pred: float(len(pred.summary)))
    best(text="...")
    refined = sf.Refine(program, 3, lambda inputs, pred: 1.0, threshold=0.5)
    refined(text="...")
    print(sf.majority([program(text="a"), program(text="b")], "summary"))
    program.save("program.json")
    program.load("program.json")
    return [name for name, _ in program.named_predictors()]


def batches() -> list[object]:
    lm = ScriptedLM.by_input({"2+2": "[[ ## answer ## ]]\n4\n[[ ## completed ## ]]"})
    add = sf.Predict("question -> answer: int", lm=lm)
    results = add.batch([{"question": "2+2"}, sf.Example(question="3+3")], num_threads=2, progress=False)
    answers: list[object] = [r.answer for r in results if r is not None]  # None: a failed example
    assert_type(results, list[sf.Prediction | None])
    asyncio.run(add.abatch([{"question": "2+2"}], concurrency=4))
    for event in add.stream(question="2+2"):
        print(event)
    return answers


Op = Literal["add", "subtract", "multiply", "divide"]


def calculate(a: float, b: float, op: Op) -> float | sf.ToolResult:
    """Do arithmetic."""
    if op == "divide" and b == 0:
        return sf.ToolResult.error("cannot divide by zero")
    return {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b if b else 0.0}[op]


class PathArgs(BaseModel):
    path: str


def agents() -> str:
    lm = ScriptedLM(
        [
            Completion(text="", tool_calls=(ToolCall("calculate", {"a": 12, "b": 30, "op": "add"}, "c1"),)),
            Completion(text="", tool_calls=(ToolCall("finish", {"answer": 42}, "c2"),)),
        ],
        features={"tools", "stop", "json_object"},
    )
    run_tests = sf.CommandTool(
        "run_tests", "Run pytest on a path.", commands=[["pytest", "-q", "${path}"]], args=PathArgs,
        timeout=300,
    )

    def delete_file(path: str) -> str:
        """Delete a file in the workspace."""
        return f"deleted {path}"

    delete = sf.Tool(delete_file, requires_approval=True, describe=lambda args: f"Delete {args['path']}?")
    approver = ScriptedApprover([Decision.APPROVE])
    request = ApprovalRequest(tool=delete, args={"path": "x"}, description="Delete x?")
    assert approver(request) is Decision.APPROVE and auto_approve(request) is Decision.APPROVE
    agent = sf.Agent(
        "question -> answer: float", tools=[sf.Tool(calculate), run_tests, delete], max_steps=6, lm=lm,
        approver=TerminalApprover(),
    )
    plain = sf.Agent("question -> answer: float", tools=[calculate, run_tests], lm=lm)  # functions too
    assert_type(plain(question="?"), sf.Prediction)
    pred = agent(question="What is 12 + 30?")
    for call in pred.trajectory.calls:
        print(call.tool, call.args, call.result.status)
    result: sf.ToolResult = delete.run({"path": "x"})
    return str(result.value)


def errors(lm: sf.LM) -> None:
    try:
        sf.Predict("question -> answer: int", lm=lm)(question="?")
    except sf.ParseError as err:
        print(err.raw, err.completions, err.fields)
    except sf.LMError as err:
        print(type(err).__name__)

"""Tool: schema from type hints and docstrings, validation, results, hooks, chains, sync/async."""

from __future__ import annotations

import asyncio
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel, Field

import sigform as sf
from sigform.errors import ToolArgumentsError, ToolError
from sigform.tools import Chain, Tool, ToolResult, as_tool


def add(a: int, b: Annotated[int, Field(ge=0)] = 1) -> int:
    """Add two integers.

    Args:
        a: the first
            number
        b: the second number

    Returns:
        the sum
    """
    return a + b


async def slow_upper(text: str) -> str:
    """Upper-case a text, asynchronously."""
    await asyncio.sleep(0)
    return text.upper()


def test_public_names():
    assert sf.Tool is Tool
    assert sf.ToolResult is ToolResult


def test_schema_from_hints_and_docstring():
    tool = Tool(add)
    assert tool.name == "add"
    assert tool.description == "Add two integers."
    params = tool.parameters
    assert params["type"] == "object"
    assert params["required"] == ["a"]
    assert params["properties"]["a"] == {"type": "integer", "description": "the first number"}
    assert params["properties"]["b"]["minimum"] == 0
    assert params["properties"]["b"]["default"] == 1
    assert params["additionalProperties"] is False
    spec = tool.to_openai()
    assert spec["type"] == "function"
    assert spec["function"]["name"] == "add"
    assert spec["function"]["description"] == "Add two integers."


def test_name_and_description_overrides():
    tool = Tool(add, name="plus", description="Adds.")
    assert (tool.name, tool.description) == ("plus", "Adds.")
    assert tool.to_openai()["function"]["name"] == "plus"


def test_bad_names_and_signatures_are_refused():
    with pytest.raises(ToolError, match="not usable"):
        Tool(lambda x: x)
    with pytest.raises(ToolError, match="not usable"):
        Tool(add, name="has space")

    def star(*args: int) -> int:
        return 0

    with pytest.raises(ToolError, match=r"\*args"):
        Tool(star)
    with pytest.raises(ToolError, match="callable"):
        Tool(42)  # type: ignore[arg-type]
    with pytest.raises(ToolError, match="requires_approval"):
        Tool(add, requires_approval="yes")  # type: ignore[arg-type]


def test_run_validates_and_coerces():
    result = Tool(add).run({"a": "2", "b": 3})
    assert result.ok and result.value == 5
    assert result.for_llm == "5"


def test_invalid_arguments_are_an_error_result_naming_each_argument():
    tool = Tool(add)
    result = tool.run({"a": "x", "b": -1, "c": 1})
    assert result.status == "error"
    text = result.for_llm
    assert "`a`" in text and "expected int" in text and "saw x" in text
    assert "`b`" in text and "greater than or equal to 0" in text
    assert "`c`" in text and "no such argument" in text
    missing = tool.run({})
    assert "`a`" in missing.for_llm and "saw nothing" in missing.for_llm


def test_invalid_json_arguments():
    result = Tool(add).run('{"a": 1,')
    assert result.status == "error"
    assert "not valid JSON" in result.message
    with pytest.raises(ToolArgumentsError) as info:
        Tool(add).validate("[1, 2]")
    assert "must be a JSON object" in str(info.value)
    assert Tool(add).validate('{"a": 4}') == {"a": 4, "b": 1}


def test_exceptions_become_error_results():
    def boom(x: int) -> int:
        raise ValueError(f"no good: {x}")

    result = Tool(boom).run({"x": 3})
    assert result.status == "error"
    assert result.for_llm == "Error: ValueError: no good: 3"


def test_async_tool_and_direct_call():
    tool = Tool(slow_upper)
    assert tool.run(text="abc").value == "ABC"
    assert asyncio.run(tool.arun({"text": "x"})).value == "X"
    assert Tool(add)(2, b=5) == 7  # still callable as the plain function


def test_run_inside_a_running_loop():
    async def main() -> ToolResult:
        return Tool(add).run({"a": 1})  # sync API from async code: runs on a helper thread

    assert asyncio.run(main()).value == 2


def test_explicit_args_model_and_nested_values():
    class Point(BaseModel):
        x: float
        y: float

    class Args(BaseModel):
        points: list[Point]
        mode: Literal["sum", "max"] = "sum"

    def total(points: list[Point], mode: str = "sum") -> float:
        values = [p.x + p.y for p in points]
        return sum(values) if mode == "sum" else max(values)

    tool = Tool(total, args=Args)
    assert tool.parameters["properties"]["mode"]["enum"] == ["sum", "max"]
    assert tool.run({"points": [{"x": 1, "y": 2}, {"x": 3, "y": 4}], "mode": "max"}).value == 7
    assert "mode" in tool.run({"points": [], "mode": "avg"}).for_llm


def test_result_values_are_rendered_as_json():
    class Out(BaseModel):
        name: str
        n: int

    def info() -> Out:
        return Out(name="é", n=2)

    assert Tool(info).run().for_llm == '{"name": "é", "n": 2}'
    assert ToolResult.success(None).for_llm == "null"
    assert ToolResult.success([1, "a"]).for_llm == '[1, "a"]'


def test_result_separate_texts_for_llm_and_user():
    def lookup(key: str) -> ToolResult:
        return ToolResult.success({"k": key}, for_llm="value=42", for_user="Looked up 42 for you")

    result = Tool(lookup).run(key="x")
    assert result.for_llm == "value=42"
    assert result.for_user == "Looked up 42 for you"
    assert result.value == {"k": "x"}
    err = ToolResult.error("disk full", for_user="Sorry, no space")
    assert (err.for_llm, err.for_user, err.ok) == ("Error: disk full", "Sorry, no space", False)
    with pytest.raises(ValueError):
        ToolResult("error")
    with pytest.raises(ValueError):
        ToolResult("weird", message="x")  # type: ignore[arg-type]


def test_hooks_run_around_a_call_and_setup_failure_is_an_error():
    seen: list[str] = []

    def work(n: int) -> int:
        seen.append(f"run {n}")
        return n

    tool = Tool(work, setup=lambda t: seen.append(f"setup {t.name}"), on_exit=lambda t: seen.append("exit"))
    assert tool.run(n=1).value == 1
    assert seen == ["setup work", "run 1", "exit"]

    def bad_setup(t: Tool) -> None:
        raise RuntimeError("no db")

    failing = Tool(work, setup=bad_setup)
    result = failing.run(n=2)
    assert result.status == "error" and "setup step failed" in result.message and "no db" in result.message
    assert "run 2" not in seen


def test_async_hooks():
    seen: list[str] = []

    async def setup(t: Tool) -> None:
        seen.append("setup")

    async def on_exit(t: Tool) -> None:
        seen.append("exit")

    assert Tool(slow_upper, setup=setup, on_exit=on_exit).run(text="a").value == "A"
    assert seen == ["setup", "exit"]


def test_chain_passes_each_output_to_the_next_step():
    def fetch(url: str) -> str:
        """Fetch a page."""
        return f"<title>{url}</title>"

    async def title(html: str) -> str:
        return html.removeprefix("<title>").removesuffix("</title>")

    def shout(text: str) -> str:
        return text.upper() + "!"

    tool = Tool([fetch, title, shout])
    assert tool.name == "fetch" and tool.description == "Fetch a page."
    assert list(tool.parameters["properties"]) == ["url"]
    assert tool.run(url="a.b").value == "A.B!"
    assert tool(url="x") == "X!"
    assert repr(Chain([fetch, title])) == "Chain(fetch -> title)"


def test_chain_stops_at_an_error_step():
    calls: list[str] = []

    def first(n: int) -> ToolResult:
        return ToolResult.error("n too big") if n > 3 else ToolResult.success(n)

    def second(n: int) -> int:
        calls.append("second")
        return n * 10

    tool = Tool([first, second], name="guarded")
    assert tool.run(n=2).value == 20
    bad = tool.run(n=9)
    assert bad.status == "error" and bad.message == "n too big"
    assert calls == ["second"]

    def explode(n: int) -> int:
        raise KeyError("gone")

    assert "KeyError" in Tool([first, explode], name="x").run(n=1).message
    with pytest.raises(ToolError):
        Chain([])


def test_describe_call_default_and_custom():
    assert Tool(add).describe_call({"a": 1, "b": 2}) == "add(a=1, b=2)"
    custom = Tool(add, describe=lambda args: f"Compute {args['a']} + {args['b']}?")
    assert custom.describe_call({"a": 1, "b": 2}) == "Compute 1 + 2?"


def test_requires_approval_rule():
    never = Tool(add)
    always = Tool(add, requires_approval=True)
    big = Tool(add, requires_approval=lambda tool, args: args["a"] > 100)

    def broken(tool: Tool, args: dict) -> bool:
        raise RuntimeError("oops")

    unsure = Tool(add, requires_approval=broken)
    assert asyncio.run(never.needs_approval({"a": 1})) is False
    assert asyncio.run(always.needs_approval({"a": 1})) is True
    assert asyncio.run(big.needs_approval({"a": 1})) is False
    assert asyncio.run(big.needs_approval({"a": 101})) is True
    assert asyncio.run(unsure.needs_approval({"a": 1})) is True  # a failing rule asks


def test_as_tool():
    tool = Tool(add)
    assert as_tool(tool) is tool
    assert as_tool(add).name == "add"
    with pytest.raises(ToolError):
        as_tool("add")

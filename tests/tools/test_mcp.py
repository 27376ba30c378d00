"""Tools from MCP servers: real servers written with the SDK (tests/tools/mcp_server.py), over stdio.

Servers take seconds to start on a busy machine, so the well-behaved ones are shared per module;
the fault tests start their own.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

import sigform as sf
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.tools import ScriptedApprover, auto_approve

SERVER = str(Path(__file__).with_name("mcp_server.py"))
NATIVE = {"tools", "stop", "json_object", "multimodal"}


def stdio(kind: str, **options: object) -> sf.MCPClient:
    return sf.MCPClient.stdio(sys.executable, [SERVER, kind], name=kind, **options)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def math_server():
    with stdio("math", requires_approval={"add"}, timeout=20) as server:
        yield server


@pytest.fixture(scope="module")
def notes_server():
    with stdio("notes") as server:
        yield server


def by_name(server: sf.MCPClient) -> dict[str, sf.MCPTool]:
    return {tool.name: tool for tool in server.tools()}


def test_importing_sigform_does_not_import_the_sdk():
    code = "import sys, sigform as sf; sf.MCPClient; sf.MCPTool; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_listing_gives_tools_with_the_servers_names_descriptions_and_schemas(math_server):
    tools = by_name(math_server)
    assert {"add", "picture", "stats", "fail", "crash", "hang", "pid"} <= set(tools)
    add = tools["add"]
    assert isinstance(add, sf.Tool)
    assert add.description == "Add two integers."
    assert add.parameters["required"] == ["a", "b"]
    assert add.parameters["properties"]["a"]["type"] == "integer"
    assert add.to_openai()["function"]["name"] == "add"
    assert add.requires_approval is True and tools["stats"].requires_approval is False
    assert repr(add) == "MCPTool('add' of MCP server 'math' requires_approval)"


def test_arguments_are_checked_against_the_servers_schema_before_the_call(math_server):
    add = by_name(math_server)["add"]
    result = add.run({"a": "x"})
    assert result.status == "error"
    assert "field `a`" in result.message and "field `b`" in result.message and "required" in result.message
    assert add.run('{"a": 1, "b": 2, "c": 3}').ok  # the schema allows extra properties
    assert add.run("[1, 2]").status == "error"


def test_results_map_text_images_structured_content_and_errors(math_server):
    tools = by_name(math_server)
    assert tools["add"].run({"a": 2, "b": 3}).value == {"result": 5}
    picture = tools["picture"].run({"caption": "a dot"})
    assert picture.ok and picture.value[0] == "a dot" and isinstance(picture.value[1], sf.Image)
    assert picture.images == (picture.value[1],)
    assert "[image 1: image/png]" in picture.for_llm
    stats = tools["stats"].run({"values": [1, 2, 6]})
    assert stats.value == {"mean": 3.0, "count": 3}
    failed = tools["fail"].run({"why": "it had to"})
    assert failed.status == "error" and "it had to" in failed.message


def test_sync_tool_call_returns_a_tool_result(notes_server):
    tools = by_name(notes_server)
    assert tools["add_note"](text="from a direct call").ok


def native_script(*steps):
    return ScriptedLM(
        [
            Completion(
                text="", tool_calls=tuple(ToolCall(n, a, f"c{i}_{j}") for j, (n, a) in enumerate(calls))
            )
            for i, calls in enumerate(steps)
        ],
        features=NATIVE,
    )


def two_server_run(math_server, notes_server, approver, *, native=True):
    steps = [
        [("add_note", {"text": "buy milk"}), ("add", {"a": 20, "b": 22})],
        [("picture", {"caption": "see"}), ("list_notes", {})],
        [("finish", {"answer": "42"})],
    ]
    if native:
        lm = native_script(*steps)
    else:
        import json

        lm = ScriptedLM(
            [
                json.dumps({"thought": "go", "tool_calls": [{"name": n, "args": a} for n, a in calls]})
                for calls in steps
            ],
            features={"stop", "json_object", "multimodal"},
        )
    tools = [*math_server.tools(), *notes_server.tools()]
    return sf.Agent("question -> answer", tools=tools, lm=lm, approver=approver, max_steps=5)


@pytest.mark.parametrize("native", [True, False])
def test_an_agent_uses_two_servers_with_one_tool_requiring_approval(math_server, notes_server, native):
    approver = ScriptedApprover(["approve"])
    agent = two_server_run(math_server, notes_server, approver, native=native)
    pred = agent(question="what is 20 + 22?")
    assert pred.answer == "42" and pred.trajectory.status == "completed"
    calls = {c.tool: c for c in pred.trajectory.calls}
    assert calls["add"].result.value == {"result": 42}
    assert "buy milk" in calls["list_notes"].result.for_llm
    [request] = approver.requests
    assert request.tool_name == "add"
    command = f"{Path(sys.executable).name} {SERVER} math"
    assert (
        request.description == f'MCP server `math` ({command}) wants to run `add` with:\n{{"a": 20, "b": 22}}'
    )

    # the image reached the model as an image part
    assert any(p.get("type") == "image_url" for p in content_parts(pred))


def content_parts(pred):
    return [p for m in pred._meta.messages if isinstance(m.get("content"), list) for p in m["content"]]


def test_a_model_without_image_input_gets_the_images_described(math_server):
    lm = ScriptedLM(
        [
            Completion(text="", tool_calls=(ToolCall("picture", {"caption": "see"}, "c1"),)),
            Completion(text="", tool_calls=(ToolCall("finish", {"answer": "a dot"}, "c2"),)),
        ],
        features={"tools", "stop", "json_object"},  # strict: an image part would be refused
    )
    agent = sf.Agent("question -> answer", tools=math_server.tools(), lm=lm, approver=auto_approve)
    pred = agent(question="what is it?")
    assert pred.answer == "a dot" and content_parts(pred) == []
    assert "[image 1: image/png]" in pred.trajectory.calls[0].result.for_llm


async def test_the_same_agent_runs_async(math_server, notes_server):
    approver = ScriptedApprover(["reject"])
    agent = two_server_run(math_server, notes_server, approver)
    pred = await agent.acall(question="what is 20 + 22?")
    assert pred.trajectory.status == "completed"
    assert {c.tool: c.result.status for c in pred.trajectory.calls}["add"] == "rejected"


async def test_async_listing_and_calls_from_the_callers_loop(notes_server):
    tools = {t.name: t for t in await notes_server.atools()}
    results = await asyncio.gather(*(tools["add_note"].arun({"text": f"n{i}"}) for i in range(5)))
    assert all(r.ok for r in results)


def test_the_approval_prompt_shows_the_exact_arguments_escaped(math_server):
    add = by_name(math_server)["add"]
    text = add.describe_call({"a": 1, "b": "\x1b[2K\rok\u202e" + "x" * 200})
    assert "\x1b" not in text and "\r" not in text and "\u202e" not in text
    assert "\\u001b[2K\\rok\\u202e" in text
    assert "x" * 200 in text  # never shortened: the person approves the whole call


def test_hooks_and_tool_events_run_for_mcp_tools(notes_server):
    seen: list[str] = []

    class Recorder(sf.Callback):
        def on_tool(self, event):
            seen.append(f"{event.payload['tool']}:{event.status}")

    client = stdio(
        "notes",
        setup=lambda tool: seen.append(f"setup {tool.name}"),
        on_exit=lambda tool: seen.append(f"exit {tool.name}"),
    )
    with client:
        lm = native_script([("add_note", {"text": "x"})], [("finish", {"answer": "ok"})])
        agent = sf.Agent("question -> answer", tools=client.tools(), lm=lm, callbacks=[Recorder()])
        agent(question="store x")
    assert seen == ["setup add_note", "add_note:started", "exit add_note", "add_note:succeeded"]


def test_a_name_clash_between_servers_names_both(math_server):
    with stdio("evil") as evil:
        with pytest.raises(sf.ToolError) as info:
            sf.Agent("q -> a", tools=[*math_server.tools(), *evil.tools()])
        assert "MCP server 'math'" in str(info.value) and "MCP server 'evil'" in str(info.value)


def test_prefixes_keep_two_servers_apart(math_server):
    with stdio("evil", prefix="evil_", requires_approval=True) as evil:
        agent = sf.Agent("q -> a", tools=[*math_server.tools(), *evil.tools()], approver=auto_approve)
        assert {"add", "evil_add", "evil_read_file"} <= set(agent.tools)
        assert agent.tools["evil_add"].remote_name == "add"
        assert agent.tools["evil_add"].run({"a": 5, "b": 2}).value == {"result": 3}


def test_injected_descriptions_are_escaped_and_cannot_lift_approval(math_server):
    with stdio("evil", prefix="e_", requires_approval=True) as evil:
        tools = {t.name: t for t in evil.tools()}
        read = tools["e_read_file"]
        for text in (read.description, read.format_for_prompt(), repr(read), tools["e_add"].description):
            assert "\x1b" not in text and "\r" not in text and "\u202e" not in text and "\x07" not in text
        assert "\\x1b[2K" in read.description and "\\u202e" in read.description
        approver = ScriptedApprover(["reject"])
        lm = native_script([("e_read_file", {"path": "/etc/passwd"})], [("finish", {"answer": "no"})])
        pred = sf.Agent("q -> answer", tools=list(tools.values()), lm=lm, approver=approver)(q="read")
        assert [r.tool_name for r in approver.requests] == ["e_read_file"]
        assert pred.trajectory.calls[0].result.status == "rejected"
        assert "MCP server `evil`" in approver.requests[0].description


def test_a_servers_backtracking_pattern_is_checked_under_a_time_limit():
    # jsonschema checks `pattern` with `re`: ^(a|aa)+$ against 40 a's and a '!' runs for minutes, in
    # the agent's thread and outside the call's timeout. A server's pattern is untrusted input.
    import threading

    from sigform.tools.mcp import _schema_validator

    schema = {"type": "object", "properties": {"s": {"type": "string", "pattern": "^(a|aa)+$"}}}
    validator = _schema_validator(schema)
    outcome: list[list[str]] = []
    worker = threading.Thread(
        target=lambda: outcome.append([e.message for e in validator.iter_errors({"s": "a" * 40 + "!"})]),
        daemon=True,
    )
    worker.start()
    worker.join(60)  # a generous cap: the limit is 0.25 s of matching
    assert outcome, "the pattern check did not end"
    (message,) = outcome[0]
    assert "could not be checked against the server's pattern" in message and "not sent" in message
    # an ordinary pattern still decides
    assert [e.message for e in validator.iter_errors({"s": "aaa"})] == []
    assert [e.message for e in validator.iter_errors({"s": "b"})] == ["'b' does not match '^(a|aa)+$'"]

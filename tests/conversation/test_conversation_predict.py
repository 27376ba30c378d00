"""Pruning and prompt caching end to end: programs with a History input and agents, through
sigform.LM and litellm to the loopback provider fakes (and ScriptedLM for the agent loop)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map in tests

import sigform as sf
from sigform.adapters.output_limit import default_output_limit
from sigform.conversation import Pruning
from sigform.errors import ContextWindowError
from sigform.lm.interface import Completion, ToolCall
from sigform.testing import ScriptedLM
from sigform.testing.providers import AnthropicFake, ErrorReply, OpenAIChatFake, Reply
from sigform.testing.providers.caching import PromptCacheBilling
from sigform.testing.providers.server import RecordedRequest
from sigform.tools import Agent
from sigform.types import History

API_KEY = "sk-test-secret-0123456789"
ANSWER = "[[ ## answer ## ]]\nNo umbrella needed.\n\n[[ ## completed ## ]]"
WINDOW = 6000  # the "model" of these tests has a tiny context window


class Chat(sf.Signature):
    """Answer the user, using the conversation so far."""

    history: History = sf.InputField()
    question: str = sf.InputField()
    answer: str = sf.OutputField()


DEMOS = [
    {"question": f"demo question {i}?", "answer": f"demo answer {i}", "history": History()} for i in range(3)
]


def long_conversation(turns: int = 200) -> History:
    """``turns`` turns: user questions, assistant answers and, every third turn, an assistant
    turn with two tool calls and their results."""
    out: list[dict[str, Any]] = []
    for t in range(turns):
        out.append({"role": "user", "content": f"Turn {t}: what about city number {t}? " + "details " * 8})
        if t % 3 == 0:
            ids = [f"call_{t}_w", f"call_{t}_t"]
            out.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": ids[0],
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": json.dumps({"city": t})},
                        },
                        {
                            "id": ids[1],
                            "type": "function",
                            "function": {"name": "get_time", "arguments": json.dumps({"city": t})},
                        },
                    ],
                }
            )
            out.append({"role": "tool", "tool_call_id": ids[1], "content": f"{t % 24}:00"})
            out.append({"role": "tool", "tool_call_id": ids[0], "content": f"{t % 30}C and dry"})
        out.append({"role": "assistant", "content": f"City {t} is lovely this time of year."})
    return History.from_turns(out)


def _tokens(body: dict[str, Any]) -> int:
    """The prompt's tokens as the model's tokenizer counts them (text, tool calls and results)."""
    import litellm

    texts: list[str] = []
    system = body.get("system") or []
    texts += [system] if isinstance(system, str) else [b.get("text", "") for b in system]
    for message in body.get("messages") or []:
        content = message["content"]
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content:
            if block["type"] == "text":
                texts.append(block["text"])
            elif block["type"] == "tool_use":
                texts.append(block["name"] + json.dumps(block["input"]))
            elif block["type"] == "tool_result":
                texts.append(json.dumps(block["content"]))
    text = "\n".join(texts)
    return len(litellm.encode(model="anthropic/claude-sonnet-4-5", text=text))


def refuse_over(limit: int, answer: str = ANSWER) -> Any:
    """A responder that refuses prompts over ``limit`` tokens the way Anthropic does."""

    def respond(request: RecordedRequest) -> Any:
        size = _tokens({k: request.json.get(k) for k in ("system", "messages")})
        if size > limit:
            return ErrorReply(400, f"prompt is too long: {size} tokens > {limit} maximum")
        return Reply(answer)

    return respond


def _anthropic_lm(fake: AnthropicFake, **options: Any) -> sf.LM:
    return sf.LM(
        fake.model("claude-sonnet-4-5"),
        api_base=fake.api_base,
        api_key=API_KEY,
        cache=False,
        num_retries=0,
        **options,
    )


def _wire_pairs(body: dict[str, Any]) -> tuple[list[str], list[str]]:
    blocks = [b for m in body["messages"] for b in m["content"]]
    uses = [b["id"] for b in blocks if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
    return uses, results


def _wire_text(body: dict[str, Any]) -> str:
    return "\n".join(b.get("text", "") for m in body["messages"] for b in m["content"] if b["type"] == "text")


def test_200_turn_conversation_with_tool_calls_fits_a_tiny_context_window() -> None:
    history = long_conversation(200)
    program = sf.Predict(Chat, demos=DEMOS, prune=Pruning(context_window=WINDOW, reserve_output=1000))
    with AnthropicFake(responder=refuse_over(WINDOW)) as fake:
        lm = _anthropic_lm(fake)
        pred = program(history=history, question="Do I need an umbrella?", lm=lm)
    fake.check()
    assert pred.answer == "No umbrella needed."
    assert len(fake.requests) == 1  # pruned before sending: the provider never refused it
    body = fake.requests[0].json
    assert _tokens({k: body[k] for k in ("system", "messages")}) <= WINDOW
    uses, results = _wire_pairs(body)
    assert uses and sorted(uses) == sorted(results)  # every kept tool call still has its result
    # the kept calls are the most recent ones, results in call order
    assert uses == results
    text = _wire_text(body)
    assert "earlier turn(s) of this conversation were omitted" in text
    assert all(f"demo question {i}?" in text for i in range(3))  # demos are never pruned
    assert "Turn 199:" in text and "Turn 0:" not in text
    assert "Do I need an umbrella?" in text
    assert body["system"][0]["text"].startswith("Answer the user, using the conversation so far.")
    # what was pruned is visible in the LM's history entry
    entry = lm.history[-1]
    report = entry.prune_report
    assert report is not None and report.reason == "token budget"
    assert report.dropped_units > 100 and report.kept_units > 5
    assert report.budget == WINDOW - 1000
    dropped_ids = set(report.dropped_tool_calls)
    assert dropped_ids and not dropped_ids & set(uses)
    assert entry.messages[len(DEMOS) * 2 + 1]["content"].startswith(
        f"[{report.dropped_units} earlier turn(s)"
    )


def test_the_context_window_comes_from_the_model_map() -> None:
    import litellm

    litellm.register_model(
        {
            "openai/sigform-tiny-window": {
                "max_input_tokens": 3000,
                "max_output_tokens": 500,
                "litellm_provider": "openai",
                "mode": "chat",
                "input_cost_per_token": 0.0,
                "output_cost_per_token": 0.0,
            }
        }
    )
    history = long_conversation(60)
    with OpenAIChatFake(Reply(ANSWER)) as fake:
        lm = sf.LM("openai/sigform-tiny-window", api_base=fake.api_base + "/v1", api_key=API_KEY, cache=False)
        pred = sf.Predict(Chat)(history=history, question="Umbrella?", lm=lm)
    fake.check()
    assert pred.answer == "No umbrella needed."
    messages = fake.last_request.json["messages"]
    # the reserve is the request's max_tokens: with none set, the default derived from Chat's outputs
    reserve = default_output_limit(Chat)
    assert fake.last_request.json["max_tokens"] == reserve < 500
    assert litellm.token_counter(model="gpt-4o", messages=messages) <= 3000 - reserve
    report = lm.history[-1].prune_report
    assert report is not None and report.budget == 3000 - reserve and report.exact
    calls = {c["id"] for m in messages for c in m.get("tool_calls") or ()}
    assert calls == {m["tool_call_id"] for m in messages if m["role"] == "tool"}


def test_a_context_window_error_prunes_further_and_retries_once() -> None:
    history = long_conversation(120)
    # the provider's real window is smaller than the configured one: the first request is refused
    program = sf.Predict(Chat, prune=Pruning(context_window=WINDOW, reserve_output=0))
    with AnthropicFake(responder=refuse_over(2500)) as fake:
        lm = _anthropic_lm(fake)
        pred = program(history=history, question="Umbrella?", lm=lm)
    assert pred.answer == "No umbrella needed."
    assert len(fake.requests) == 2
    first, second = (e.prune_report for e in lm.history)
    assert lm.history[0].error is not None and "ContextWindowError" in lm.history[0].error
    assert second.reason == "context window error"
    assert second.kept_units == first.kept_units // 2
    assert second.dropped_units > first.dropped_units
    uses, results = _wire_pairs(fake.requests[1].json)
    assert sorted(uses) == sorted(results)


def test_when_even_the_retry_is_refused_the_error_says_what_was_dropped() -> None:
    history = long_conversation(30)
    program = sf.Predict(Chat, prune=Pruning(keep_last=20))
    with AnthropicFake(default=ErrorReply(400, "prompt is too long: 999999 tokens > 200000 maximum")) as fake:
        lm = _anthropic_lm(fake)
        with pytest.raises(ContextWindowError) as info:
            program(history=history, question="Umbrella?", lm=lm)
    message = str(info.value)
    assert "one retry with fewer turns" in message
    assert "dropped the" in message and "oldest turn(s)" in message and "kept 10" in message
    assert "prompt is too long" in message
    assert info.value.prune_report.reason == "context window error"  # type: ignore[attr-defined]
    assert len(fake.requests) == 2


def test_a_request_without_earlier_turns_fails_at_once_with_a_clear_error() -> None:
    with AnthropicFake(default=ErrorReply(400, "prompt is too long: 999999 tokens > 200000 maximum")) as fake:
        lm = _anthropic_lm(fake)
        with pytest.raises(ContextWindowError, match="no earlier turns that could be pruned"):
            sf.Predict("question -> answer")(question="x" * 100, lm=lm)
    assert len(fake.requests) == 1


def test_keep_last_with_field_value_history_keeps_whole_entries() -> None:
    history = History(messages=[{"question": f"q{i}", "answer": f"a{i}"} for i in range(50)])
    lm = ScriptedLM([ANSWER])
    pred = sf.Predict(Chat, lm=lm, prune=Pruning(keep_last=3))(history=history, question="now?")
    assert pred.answer == "No umbrella needed."
    sent = lm.calls[0].messages
    assert len(sent) == 1 + 1 + 3 * 2 + 1  # system, marker, 3 entries (user + assistant), request
    assert "47 earlier turn(s)" in sent[1]["content"]
    assert "q47" in sent[2]["content"] and "a49" in sent[7]["content"]
    assert "prune" not in lm.calls[0].kwargs  # sigform's options never reach the LM


def test_pruning_can_be_turned_off_and_set_globally() -> None:
    history = History(messages=[{"question": f"q{i}", "answer": f"a{i}"} for i in range(10)])
    lm = ScriptedLM([ANSWER, ANSWER])
    with sf.context(prune=Pruning(keep_last=1)):
        sf.Predict(Chat, lm=lm)(history=history, question="now?")
        sf.Predict(Chat, lm=lm, prune=False)(history=history, question="now?")
    assert len(lm.calls[0].messages) == 1 + 1 + 2 + 1
    assert len(lm.calls[1].messages) == 1 + 20 + 1


# -- agents ------------------------------------------------------------------------------------
def lookup(city: str) -> str:
    """Look a city up."""
    return f"{city}: " + "facts " * 40


def test_agent_trajectory_is_pruned_by_whole_steps() -> None:
    steps = 12
    script: list[Any] = [
        Completion(
            text="", tool_calls=(ToolCall("lookup", {"city": f"c{i}"}, f"id{i}"),), finish_reason="tool_calls"
        )
        for i in range(steps)
    ]
    script.append(
        Completion(
            text="", tool_calls=(ToolCall("finish", {"answer": "done"}, "fin"),), finish_reason="tool_calls"
        )
    )
    lm = ScriptedLM(script, features={"tools", "stop", "json_object"})
    agent = Agent(
        "question -> answer", tools=[lookup], lm=lm, max_steps=20, prune=Pruning(max_prompt_tokens=900)
    )
    pred = agent(question="Tell me about the cities.")
    assert pred.answer == "done" and pred.trajectory.completed
    assert len(pred.trajectory) == steps + 1  # the trajectory itself is complete
    last = lm.calls[-1].messages
    assert last[0]["role"] == "system" and "Tell me about the cities." in last[1]["content"]
    assert "earlier turn(s) of this conversation were omitted" in last[2]["content"]
    calls = [c["id"] for m in last for c in m.get("tool_calls") or ()]
    results = [m["tool_call_id"] for m in last if m["role"] == "tool"]
    assert calls == results and calls[-1] == f"id{steps - 1}" and "id0" not in calls
    import litellm

    assert litellm.token_counter(model="gpt-4o", messages=last) <= 900
    assert len(lm.calls[0].messages) == 2  # nothing to prune at the start


# -- prompt caching through programs ------------------------------------------------------------
class Styled(sf.Signature):
    """Answer in the house style."""

    question: str = sf.InputField()
    answer: str = sf.OutputField()


HOUSE_STYLE = "Answer in the house style. The house style: " + "Be concise, friendly and precise. " * 150


STYLED_DEMOS = [{"question": f"Example question {i}?", "answer": f"Example answer {i}."} for i in range(3)]


def test_prompt_cache_on_a_program_marks_the_last_demo_and_usage_reports_cached_tokens() -> None:
    billing = PromptCacheBilling(ANSWER)
    program = sf.Predict(Styled.with_instructions(HOUSE_STYLE), demos=STYLED_DEMOS, prompt_cache=True)
    with AnthropicFake(responder=billing) as fake:
        lm = _anthropic_lm(fake)
        first = program(question="First?", lm=lm)
        second = program(question="Second?", lm=lm)
    fake.check()
    body = fake.last_request.json
    marked = [
        (i, m["role"]) for i, m in enumerate(body["messages"]) for b in m["content"] if "cache_control" in b
    ]
    assert marked == [(5, "assistant")]  # the third demo's answer closes the cached prefix
    assert first._usage.cached_tokens == 0
    assert second._usage.cached_tokens == billing.read_tokens  # the program's usage shows them too
    assert billing.write_tokens > 1024 and billing.read_tokens == billing.write_tokens
    assert lm.history[-1].usage.cached_tokens == billing.read_tokens
    assert lm.history[0].usage.cached_tokens == 0


def test_prompt_cache_on_the_lm_marks_plain_calls_too() -> None:
    with AnthropicFake(Reply("ok")) as fake:
        lm = _anthropic_lm(fake, prompt_cache=True)
        lm([{"role": "system", "content": "Rules."}, {"role": "user", "content": "Hi"}])
    body = fake.last_request.json
    assert body["system"] == [{"type": "text", "text": "Rules.", "cache_control": {"type": "ephemeral"}}]
    assert "prompt_cache" not in body and lm.prompt_cache is True
    assert lm.copy().prompt_cache is True


def test_async_programs_prune_and_retry_the_same_way() -> None:
    import asyncio

    history = long_conversation(120)
    program = sf.Predict(Chat, prune=Pruning(context_window=WINDOW, reserve_output=0))
    with AnthropicFake(responder=refuse_over(2500)) as fake:
        lm = _anthropic_lm(fake)
        pred = asyncio.run(program.acall(history=history, question="Umbrella?", lm=lm))
    assert pred.answer == "No umbrella needed."
    assert len(fake.requests) == 2
    assert [e.prune_report.reason for e in lm.history] == ["token budget", "context window error"]
    uses, results = _wire_pairs(fake.requests[1].json)
    assert sorted(uses) == sorted(results)

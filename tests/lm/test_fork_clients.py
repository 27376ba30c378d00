"""A process forked after a call makes its own connections (fast path and litellm): the parent's keep-alive
socket, inherited by every child, once carried several children's requests and each read
whichever response came first (a child returned another child's answer as its own)."""

from __future__ import annotations

import json
import multiprocessing
import os
import time
from typing import Any

import pytest

import sigform as sf
from sigform.testing.providers import OpenAIChatFake, Reply

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")


def _echo(request: Any) -> Reply:
    prompt = request.json["messages"][-1]["content"]
    word = prompt.split("[[ ## question ## ]]\n")[1].split("\n")[0]
    time.sleep(0.05)  # children's requests overlap on the server
    return Reply(json.dumps({"answer": word}))


@pytest.mark.parametrize("fast_path", [True, False], ids=["fast_path", "litellm"])
def test_children_forked_after_a_call_each_get_their_own_answer(fast_path: bool) -> None:
    with OpenAIChatFake(responder=_echo) as fake:
        lm = sf.LM("openai/gpt-4o-mini", api_base=fake.api_base, api_key="sk-test", cache=False,
                   num_retries=0, timeout=20, fast_path=fast_path)
        program = sf.Predict("question -> answer", lm=lm, adapter=sf.JSONAdapter())
        assert program(question="parent").answer == "parent"  # the parent's client is now pooled

        def child(index: int, out: Any) -> None:
            try:
                out.put((index, program(question=f"child{index}").answer))
            except Exception as err:  # reported, not raised: the parent asserts
                out.put((index, f"{type(err).__name__}: {err}"))

        context = multiprocessing.get_context("fork")
        out = context.Queue()
        children = [context.Process(target=child, args=(index, out)) for index in range(4)]
        for process in children:
            process.start()
        try:
            answers = dict(out.get(timeout=60) for _ in children)
        finally:
            for process in children:
                process.join(10)
                if process.is_alive():
                    process.kill()
        assert answers == {index: f"child{index}" for index in range(4)}
        assert program(question="parent again").answer == "parent again"  # the parent's pool still works

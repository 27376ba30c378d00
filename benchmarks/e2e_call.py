"""4. Cost per Predict call end to end, against the loopback fake with 0 ms latency.

One ``Predict(question -> answer)`` call at a time, cache off, temperature 0, ChatAdapter on
both sides, same fake server (separate process). Compared with:

* the floor: a bare ``httpx.Client`` POST of the very body sigform sends (as recorded by the
  fake), reading the answer text out of the JSON -- no prompt building, no parsing;
* DSPy 3.4.1 with its default client (``engine="auto"``: the native lm15 client for requests it
  can represent) and with ``engine="litellm"``, each with an unknown model name
  (``openai/bench-model``: DSPy looks it up through its whole price table) and a known one
  (``openai/gpt-4o-mini``);
* sigform through litellm (``fast_path=False``), for reference.

Rounds of ``calls`` sequential calls (after a warm-up call) alternate between all configurations;
times are medians over rounds and each ratio is the median of the per-round ratios (pairs of
rounds run back to back see the same machine load).
"""

from __future__ import annotations

import json
from typing import Any

from benchmarks.adapters_speed import Small
from benchmarks.common import Row, Section, median, paired_ratio, profile_top, run_dspy, time_calls
from benchmarks.fake_server import FakeServer

CHAT_REPLY = "[[ ## answer ## ]]\nParis\n\n[[ ## completed ## ]]"
QUESTION = "What is the capital of France?"
MODELS = ("openai/bench-model", "openai/gpt-4o-mini")


def _sigform_call(api_base: str, model: str, fast_path: bool | None = None) -> Any:
    import sigform as sf

    lm = sf.LM(model, api_base=api_base, api_key="k", cache=False, temperature=0.0, fast_path=fast_path)
    program = sf.Predict(Small, lm=lm, adapter=sf.ChatAdapter())

    def call() -> None:
        assert program(question=QUESTION).answer == "Paris"

    return call


def _floor_call(api_base: str, body: bytes) -> Any:
    import httpx

    client = httpx.Client(headers={"authorization": "Bearer k", "content-type": "application/json"})
    url = api_base + "/chat/completions"

    def call() -> None:
        response = client.post(url, content=body)
        response.raise_for_status()
        assert response.json()["choices"][0]["message"]["content"]

    return call


def run(
    calls: int = 200, rounds: int = 5, litellm_calls: int = 60, with_dspy: bool = True
) -> Section:
    """Alternate rounds of every configuration (sigform and the floor in this process, DSPy in
    a child per round) so that drifting machine load hits all sides alike; report medians."""
    section = Section("e2e_call")
    samples: dict[str, list[float]] = {}
    with FakeServer(CHAT_REPLY) as server:
        api = server.api_base
        fns = {f"sigform|{m}": (_sigform_call(api, m), calls) for m in MODELS}
        via_litellm = _sigform_call(api, MODELS[1], fast_path=False)
        fns["sigform-litellm|openai/gpt-4o-mini"] = (via_litellm, litellm_calls)
        fns["sigform|openai/gpt-4o-mini"][0]()
        sigform_body = json.dumps(server.requests()[-1], separators=(",", ":")).encode()
        fns["floor"] = (_floor_call(api, sigform_body), calls)
        dspy_body = None
        for _ in range(rounds):
            for key, (fn, n) in fns.items():
                samples.setdefault(key, []).append(time_calls(fn, n, 1) * 1e3)
            if with_dspy:
                raw = run_dspy("e2e_call.py", api, str(calls), "1", str(litellm_calls))
                for key, value in raw.items():
                    samples.setdefault(f"dspy:{key}", []).append(value * 1e3)
                dspy_body = server.requests()[-1]
        ms = {k: median(v) for k, v in samples.items() if not k.startswith("dspy:")}
        theirs = {k[5:]: median(v) for k, v in samples.items() if k.startswith("dspy:")}

        def ratio(num: str, den: str) -> float | None:
            return paired_ratio(samples[num], samples[den]) if num in samples and den in samples else None

        slow_profile = None
        known = "sigform|openai/gpt-4o-mini"
        vs_floor, vs_dspy = ratio(known, "floor"), ratio("dspy:auto|openai/gpt-4o-mini", known)
        if (vs_floor or 0) > 2 or (vs_dspy is not None and vs_dspy <= 1):
            slow_profile = profile_top(fns[known][0])
    floor = ms["floor"]
    section.rows.append(Row("4 e2e call", "bare httpx POST, same body (floor)", "ms", floor, None, 1.0,
                            ratio_desc="sigform / floor"))
    for model in MODELS:
        mine = ms[f"sigform|{model}"]
        name = model.split("/")[1]
        over = ratio(f"sigform|{model}", "floor")
        section.rows.append(Row(
            "4 e2e call", f"Predict call vs floor ({name})", "ms", mine, None, over,
            ratio_desc="sigform / floor", target="<= 2x floor", met=over is not None and over <= 2,
        ))
    for engine, label in (("auto", "DSPy default (native lm15)"), ("litellm", "DSPy litellm")):
        for model in MODELS:
            other = theirs.get(f"{engine}|{model}")
            mine = ms[f"sigform|{model}"]
            speed = ratio(f"dspy:{engine}|{model}", f"sigform|{model}")
            is_target = engine == "auto"
            section.rows.append(Row(
                "4 e2e call", f"Predict call vs {label} ({model.split('/')[1]})", "ms", mine, other, speed,
                target="faster than DSPy" if is_target else "",
                met=(speed > 1) if (is_target and speed is not None) else None,
            ))
    lite = ms["sigform-litellm|openai/gpt-4o-mini"]
    section.rows.append(Row(
        "4 e2e call", "sigform via litellm vs DSPy litellm (gpt-4o-mini)", "ms", lite,
        theirs.get("litellm|openai/gpt-4o-mini"),
        ratio("dspy:litellm|openai/gpt-4o-mini", "sigform-litellm|openai/gpt-4o-mini"),
        note="sigform fast_path=False",
    ))
    section.details = {
        "ms_per_call": ms, "dspy_ms_per_call": theirs, "calls": calls, "rounds": rounds,
        "samples_ms": samples,
        "sigform_request": json.loads(sigform_body), "dspy_request": dspy_body,
    }
    if slow_profile:
        section.details["sigform_profile"] = slow_profile
    return section

"""Rate limits in one process: ``sf.LM(..., rpm=..., tpm=...)`` and the token bucket behind it."""

from __future__ import annotations

import asyncio
import itertools
import time
import warnings
from typing import Any

import pytest

import sigform as sf
from sigform.errors import ParameterError, ProgramStateError, RateLimitError
from sigform.lm.rate_limit import RateLimiter, TokenBucket, estimate_tokens, limiter_of
from sigform.lm.request import Request
from sigform.lm.saved_state import lm_from_state
from sigform.testing.providers import ErrorReply, OpenAIChatFake, Reply
from sigform.testing.rates import max_in_window


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def chat(**fields: object) -> str:
    return "".join(f"[[ ## {k} ## ]]\n{v}\n\n" for k, v in fields.items()) + "[[ ## completed ## ]]"


def lm_for(fake: OpenAIChatFake, **kw: Any) -> sf.LM:
    return sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, api_key="sk-test", cache=False, **kw)


# -- the bucket ----------------------------------------------------------------------------------


def test_bucket_spaces_requests_evenly() -> None:
    clock = Clock()
    bucket = TokenBucket(rpm=120, clock=clock)  # one request every 0.5 s
    waits = [bucket.reserve(1, 0) for _ in range(4)]
    assert waits == [0.0, 0.5, 1.0, 1.5]
    clock.now += 10  # idle time is not saved up as a burst
    assert bucket.reserve(1, 0) == 0.0
    assert bucket.reserve(1, 0) == 0.5


def test_bucket_tokens_per_minute() -> None:
    clock = Clock()
    bucket = TokenBucket(tpm=6000, clock=clock)  # 100 tokens per second
    assert bucket.reserve(1, 300) == 0.0
    assert bucket.reserve(1, 50) == pytest.approx(3.0)  # the 300 tokens are paid back first
    assert bucket.reserve(1, 0) == pytest.approx(3.5)
    assert bucket.tokens == 350 and bucket.requests == 3


def test_retry_after_pauses_every_caller() -> None:
    clock = Clock()
    bucket = TokenBucket(rpm=6000, clock=clock)
    bucket.reserve(1, 0)
    bucket.report_retry_after(7)
    assert bucket.reserve(1, 0) == pytest.approx(7.0)
    bucket.report_retry_after(float("nan"))  # a nonsense header changes nothing
    bucket.report_retry_after(-3)
    assert bucket.reserve(1, 0) == pytest.approx(7.01)


@pytest.mark.parametrize("value", [0, -5, float("inf"), float("nan"), "60", True, 10**400, 1e-9, 1e13])
def test_bad_limits_are_refused_naming_the_setting(value: Any) -> None:
    # a 400-digit int raised a raw OverflowError; 1e-9 per minute made the second call wait ~2,000 years
    with pytest.raises(ParameterError, match=r"rpm must be a number per minute from 0\.01667"):
        sf.LM("openai/gpt-4o-mini", rpm=value)
    with pytest.raises(ParameterError, match="tpm must be"):
        TokenBucket(tpm=value)


def test_slow_but_sane_limits_are_accepted() -> None:
    assert TokenBucket(rpm=0.5).limits == {"rpm": 0.5, "tpm": None}
    assert TokenBucket(rpm=1 / 60, tpm=10**9).limits == {"rpm": 1 / 60, "tpm": 1e9}
    assert TokenBucket(tpm=1000).limits == {"rpm": None, "tpm": 1000.0}
    with pytest.raises(ParameterError, match=r"tpm must be a number per minute from 1000 "):
        TokenBucket(tpm=999)


def test_rate_limit_must_be_a_limiter() -> None:
    with pytest.raises(TypeError, match="rate_limit must be a RateLimiter"):
        sf.LM("openai/gpt-4o-mini", rate_limit=60)


@pytest.mark.parametrize(
    "value",
    ["60/min", "10/s", 60, 0.5, "x/min", "-3/min", "nan/s", 0, float("inf"), object(), "1e999999/min"],
)
def test_anything_else_given_as_rate_limit_is_a_parameter_error_saying_what_to_write(value: Any) -> None:
    # it was a bare TypeError about the RateLimiter protocol; "60/min" is not read as a limit
    # because it may mean requests or tokens, so the error names both settings
    with pytest.raises(ParameterError) as caught:
        sf.LM("openai/gpt-4o-mini", rate_limit=value)
    message = str(caught.value)
    assert message.startswith("rate_limit must be a RateLimiter object")
    assert repr(value)[:30] in message and type(value).__name__ in message
    assert message.endswith("write rpm=600 (requests) or tpm=200_000 (tokens)")


def test_estimate_counts_prompt_and_output_limit() -> None:
    req = Request("m", "openai", [{"role": "user", "content": "x" * 400}], {"max_tokens": 50, "n": 2})
    assert estimate_tokens(req) == 100 + 1 + 100


# -- on the LM ---------------------------------------------------------------------------------


def test_lm_options_are_not_request_parameters_and_copies_share_the_bucket() -> None:
    with OpenAIChatFake(default=Reply("hi")) as fake:
        lm = lm_for(fake, rpm=6000, tpm=10**6)
        lm("hello")
        body = fake.last_request.json
    assert "rpm" not in body and "tpm" not in body and "rate_limit" not in body
    assert isinstance(limiter_of(lm), RateLimiter)
    assert limiter_of(lm.copy()) is limiter_of(lm)
    same = sf.LM(lm.model, api_base=lm.api_base, api_key="other", rpm=6000, tpm=10**6)
    assert limiter_of(same) is limiter_of(lm)  # one limit per model and endpoint in a process
    assert limiter_of(lm.copy(rpm=60)).limits == {"rpm": 60.0, "tpm": 10**6}
    assert limiter_of(lm.copy(rpm=None, tpm=None)) is None
    assert limiter_of(lm).requests == 1, (len(fake.requests), [r.path for r in fake.requests], fake.failures)


def test_cache_hits_use_no_rate(isolated_cache: Any) -> None:
    with OpenAIChatFake(default=Reply("hi")) as fake:
        lm = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, api_key="k", rpm=6000, cache=True)
        booked = limiter_of(lm).requests
        lm("the same question")
        lm("the same question")
    assert lm.stats["cache_hits"] == 1
    assert limiter_of(lm).requests == booked + 1


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_concurrent_calls_hold_the_limit_at_the_server(mode: str) -> None:
    rpm = 1200  # 20 requests per second
    with OpenAIChatFake(default=Reply(chat(y="1")), latency=0.02) as fake:
        program = sf.Predict("x: int -> y: int", lm=lm_for(fake, rpm=rpm))
        examples = [{"x": i} for i in range(16)]

        def run() -> list[Any]:
            if mode == "threads":
                return program.batch(examples, num_threads=8, progress=False, max_errors=0)
            return asyncio.run(program.abatch(examples, concurrency=8, progress=False, max_errors=0))

        out = run()  # cold clients included: they are made before their request's slot
        fake.check()
        arrivals = [r.received for r in fake.requests]
    assert [p.y for p in out] == [1] * 16
    assert len(arrivals) == 16
    # at most rate * window (+1 for the window's first request; a caller stalled by a busy machine
    # between its slot and the send may bunch with the next: +2)
    assert max_in_window(arrivals, 1.0) <= 20 + 3, arrivals
    assert arrivals[-1] - arrivals[0] >= 15 * 0.05 * 0.8  # without the limit all 16 go at once


@pytest.mark.parametrize("mode", ["threads", "async"])
def test_a_cold_client_is_made_before_its_request_takes_a_slot(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sigform.lm import transport

    def slow(make: Any) -> Any:
        def build() -> Any:
            time.sleep(0.61)  # what an HTTP library's import, a TLS context or a session can cost
            return make()

        return build

    monkeypatch.setattr(transport, "get_backend", lambda: transport.Transport())  # no client yet
    monkeypatch.setattr(transport, "_new_client", slow(transport._new_client))
    monkeypatch.setattr(transport, "_new_session", slow(transport._new_session))
    with OpenAIChatFake(default=Reply(chat(y="1"))) as fake:  # a new endpoint: no client for it yet
        program = sf.Predict("x: int -> y: int", lm=lm_for(fake, rpm=300))  # one request every 0.2 s
        examples = [{"x": i} for i in range(6)]
        if mode == "threads":
            program.batch(examples, num_threads=6, progress=False, max_errors=0)
        else:
            asyncio.run(program.abatch(examples, concurrency=6, progress=False, max_errors=0))
        fake.check()
        arrivals = sorted(r.received for r in fake.requests)
    # a client made after its slot (0.61 s: just after the fourth slot) sends its request late,
    # together with a later slot's request; made before, the requests keep their 0.2 s spacing
    # (half of it is the margin for a stalled send on a busy machine)
    gaps = [round(b - a, 3) for a, b in itertools.pairwise(arrivals)]
    assert len(arrivals) == 6 and min(gaps) >= 0.1, gaps


def test_making_clients_ahead_resolves_a_callable_key_only_for_a_cold_client() -> None:
    def resolutions(**limits: Any) -> int:
        count = 0

        def key() -> str:
            nonlocal count
            count += 1
            return "sk-rotating"

        with OpenAIChatFake(default=Reply("hi")) as fake:  # a new endpoint each time: cold clients
            lm = sf.LM(fake.model("gpt-4o-mini"), api_base=fake.api_base, api_key=key, cache=False, **limits)
            for i in range(6):
                lm(f"q{i}")
        return count

    # the warm check goes by where the key comes from, not its value: the callable is not called
    # again for every request, only when clients are made (the sync one and the I/O loop's)
    assert resolutions(rpm=60_000) - resolutions() <= 2


def test_a_429_with_retry_after_slows_every_lm_of_the_model() -> None:
    with OpenAIChatFake(ErrorReply(429, retry_after=1), default=Reply("ok")) as fake:
        first = lm_for(fake, rpm=60_000, num_retries=0)
        other = lm_for(fake, rpm=60_000)  # another LM object, same model, endpoint and limit
        with pytest.raises(RateLimitError):
            first("a")
        other("b")
        arrivals = [r.received for r in fake.requests]
    assert limiter_of(other) is limiter_of(first)
    assert arrivals[1] - arrivals[0] >= 0.9  # the second LM waited out the first one's 429


def test_a_retry_after_of_a_thousand_days_pauses_at_most_the_retry_policys_cap() -> None:
    clock = Clock()
    bucket = TokenBucket(rpm=6000, clock=clock)
    bucket.report_retry_after(86_400_000)  # a broken server or proxy
    assert bucket.reserve() == pytest.approx(60.0)  # not 1,000 days for every later call
    with OpenAIChatFake(ErrorReply(429, retry_after=86_400_000), default=Reply("ok")) as fake:
        lm = lm_for(fake, rpm=61_000, num_retries=0)
        with pytest.raises(RateLimitError):
            lm("a")
        limiter = limiter_of(lm)
        assert isinstance(limiter, TokenBucket)
        assert limiter.reserve() <= 60.0


# -- saved with the LM -----------------------------------------------------------------------------


def test_limits_are_saved_and_loaded_with_the_lm_without_credentials(tmp_path: Any) -> None:
    lm = sf.LM("openai/gpt-4o-mini", api_base="http://127.0.0.1:9/v1", api_key="sk-secret-1", rpm=90)
    state = lm.dump_state()
    assert state["rpm"] == 90.0 and "tpm" not in state
    assert "sk-secret-1" not in repr(state)
    again = lm_from_state(state)
    assert limiter_of(again) is not None and limiter_of(again).limits == {"rpm": 90.0, "tpm": None}

    program = sf.Predict("q -> a", lm=lm)
    path = program.save(tmp_path / "p.json")
    assert "sk-secret-1" not in path.read_text()
    loaded = sf.Predict("q -> a").load(path, restore_lm=True)
    assert limiter_of(loaded.lm).limits["rpm"] == 90.0


@pytest.mark.parametrize(
    "entry, error",
    [({"rpm": -1}, ParameterError), ({"rpm": "fast"}, ProgramStateError), ({"tpm": [3]}, ProgramStateError),
     ({"rpm": float("inf")}, ProgramStateError), ({"rpm": 10**400}, ParameterError),
     ({"tpm": 1e-300}, ParameterError)],
)
def test_a_malformed_saved_limit_is_a_clear_error(entry: Any, error: type) -> None:
    state = {"model": "openai/gpt-4o-mini", "kwargs": {}, **entry}
    with warnings.catch_warnings(), pytest.raises(error, match=r"rpm|tpm"):
        lm_from_state(state)


@pytest.mark.parametrize(
    "retries",
    [10**9, 51, -1, 10**400, True, "3"],
    ids=["1e9", "51", "-1", "400 digits", "True", "'3'"],
)
def test_a_saved_retry_count_outside_its_bound_is_refused_by_a_plain_load(
    tmp_path: Any, retries: Any
) -> None:
    # issue 27, finding 9: a plain load() took num_retries=10**9 from the file (130 retries in 8 s)
    import json

    path = sf.Predict("q -> a", config={"num_retries": 2}).save(tmp_path / "p.json")
    state = json.loads(path.read_text())
    state["predictors"]["self"]["config"] = {"num_retries": retries}
    path.write_text(json.dumps(state))
    with pytest.raises(ProgramStateError, match=r"num_retries must be a whole number from 0 to 50"):
        sf.Predict("q -> a").load(path)
    lm_state = {"model": "openai/gpt-4o-mini", "kwargs": {}, "num_retries": retries}
    with warnings.catch_warnings(), pytest.raises((ParameterError, ProgramStateError), match="num_retries"):
        lm_from_state(lm_state)


def test_retry_counts_are_bounded_in_code_too() -> None:
    with pytest.raises(ParameterError, match=r"num_retries must be a whole number from 0 to 50, got 51"):
        sf.LM("openai/gpt-4o-mini", num_retries=51)
    assert sf.LM("openai/gpt-4o-mini", num_retries=50).options.num_retries == 50


def test_a_late_wake_up_books_again_instead_of_bursting() -> None:
    from sigform.lm.rate_limit import _late

    clock = Clock()

    def sleep_for(extra: float) -> Any:
        def sleep(wait: float) -> None:
            clock.now += wait + extra

        return sleep

    assert _late(0.5, sleep_for(0.2), clock)  # a stalled sleeper must not send
    assert not _late(0.5, sleep_for(0.001), clock)
    assert not _late(0.0, sleep_for(1.0), clock)  # no wait: sent at once


def test_streams_wait_for_the_limit_too() -> None:
    async def run(lm: sf.LM) -> list[Any]:
        return [piece async for piece in lm.astream("hi")]

    with OpenAIChatFake(default=Reply("streamed answer")) as fake:
        lm = lm_for(fake, rpm=6000)
        pieces = list(lm.stream("hi"))
        apieces = asyncio.run(run(lm))
    assert pieces[-1][0].text == "streamed answer" and apieces[-1][0].text == "streamed answer"
    assert limiter_of(lm).requests == 2


def test_a_slot_that_passed_before_its_answer_arrived_is_booked_again() -> None:
    from sigform.lm.rate_limit import LATE, _late

    clock = Clock()
    assert _late(-2 * LATE, lambda wait: None, clock)  # a shared limiter's answer came too late
    assert not _late(-LATE / 2, lambda wait: None, clock)  # just now: sent

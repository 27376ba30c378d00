"""``BestOfN`` and ``Refine``: several attempts at one call, scored by a reward function.

Every attempt runs with its own ``rollout_id`` (and by default ``temperature=1.0``) in the LM
keyword arguments of every Predict inside, so the LM cache does not hand back the same answer N
times; the LM layer keeps ``rollout_id`` in the cache key and strips it from the request. Nested
runs (a BestOfN of a Refine, ...) compose the ids: inner attempt ``j`` of outer attempt ``i`` is
``rollout_id=(i, j)``, so no two (outer, inner) attempts share a cache entry. An inner run with
``temperature=None`` keeps the outer run's temperature.

``reward_fn(inputs, prediction)`` returns a number, or ``(number, feedback)``; feedback is used
by ``Refine``. A failing attempt (the program or the reward raising) is logged on the
``sigform.predict`` logger, never printed, and counts towards ``fail_count``.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from typing import Any

from sigform.errors import SigformError
from sigform.predict import context_vars
from sigform.predict.module import Module

__all__ = ["BestOfN", "Refine"]

logger = logging.getLogger("sigform.predict")

RewardFn = Callable[[Mapping[str, Any], Any], Any]


def _score(raw: Any) -> tuple[float, str | None]:
    feedback = None
    if isinstance(raw, tuple) and len(raw) == 2:
        raw, feedback = raw
        feedback = None if feedback is None else str(feedback)
    try:
        value = float(raw)
    except (TypeError, ValueError) as exc:
        raise SigformError(f"reward_fn must return a number or (number, feedback), got {raw!r}") from exc
    if math.isnan(value):
        raise SigformError("reward_fn returned NaN")
    return value, feedback


class BestOfN(Module):
    """Run ``module`` up to ``N`` times and return the best-scoring prediction.

    Stops early at the first attempt scoring at least ``threshold`` (when given). After
    ``fail_count`` failed attempts (default ``N``) the last error is raised.

    Args:
        module: the program to run (any Module, e.g. a Predict).
        N: the number of attempts.
        reward_fn: ``(inputs, prediction) -> float`` (or ``(float, feedback)``); higher is better.
        threshold: stop as soon as an attempt reaches this score.
        fail_count: how many failed attempts are tolerated before giving up.
        temperature: sampling temperature for the attempts (None leaves the programs' own).
    """

    def __init__(
        self,
        module: Module,
        N: int,
        reward_fn: RewardFn,
        threshold: float | None = None,
        *,
        fail_count: int | None = None,
        temperature: float | None = 1.0,
    ) -> None:
        if not isinstance(N, int) or N < 1:
            raise ValueError(f"N must be a positive integer, got {N!r}")
        if not callable(reward_fn):
            raise TypeError("reward_fn must be callable: (inputs, prediction) -> float")
        self.module = module
        self.N = N
        self.reward_fn = reward_fn
        self.threshold = threshold
        self.fail_count = N if fail_count is None else fail_count
        self.temperature = temperature

    def _rollout_kwargs(self, attempt: int) -> dict[str, object]:
        kwargs: dict[str, object] = {"rollout_id": attempt}
        if self.temperature is not None:
            kwargs["temperature"] = self.temperature
        return kwargs

    def _feedback(self, prediction: object, score: float, feedback: str | None) -> str | None:
        return None  # BestOfN attempts are independent; Refine overrides this

    def forward(self, **inputs: object) -> Any:
        state = _Attempts(self)
        for attempt in range(self.N):
            with context_vars.rollout(**self._rollout_kwargs(attempt)), context_vars.hint(state.hint):
                try:
                    prediction = self.module(**inputs)
                    score, feedback = _score(self.reward_fn(inputs, prediction))
                except Exception as exc:
                    state.failed(attempt, exc)
                    continue
            if state.scored(prediction, score, feedback):
                break
        return state.result()

    async def aforward(self, **inputs: object) -> Any:
        state = _Attempts(self)
        for attempt in range(self.N):
            with context_vars.rollout(**self._rollout_kwargs(attempt)), context_vars.hint(state.hint):
                try:
                    prediction = await self.module.acall(**inputs)
                    score, feedback = _score(self.reward_fn(inputs, prediction))
                except Exception as exc:
                    state.failed(attempt, exc)
                    continue
            if state.scored(prediction, score, feedback):
                break
        return state.result()


class Refine(BestOfN):
    """Like :class:`BestOfN`, but each attempt after one that scored below ``threshold`` is told
    what went wrong: the reward function's feedback (return ``(score, feedback)``), or else the
    previous outputs and their score, appended to the instructions of every Predict inside.

    Returns the first prediction reaching ``threshold``, else the best one.
    """

    def __init__(
        self,
        module: Module,
        N: int,
        reward_fn: RewardFn,
        threshold: float,
        *,
        fail_count: int | None = None,
        temperature: float | None = 1.0,
    ) -> None:
        if threshold is None:
            raise ValueError("Refine needs a threshold: the score an answer must reach")
        super().__init__(module, N, reward_fn, threshold, fail_count=fail_count, temperature=temperature)

    def _feedback(self, prediction: object, score: float, feedback: str | None) -> str | None:
        if feedback:
            advice = feedback
        else:
            shown = prediction.to_dict() if hasattr(prediction, "to_dict") else prediction
            advice = f"It answered {shown!r}, which scored {score:g} (the target is {self.threshold:g})."
        return f"A previous attempt at this task fell short. {advice} Produce a better answer."


class _Attempts:
    """Book-keeping shared by the sync and async loops."""

    def __init__(self, owner: BestOfN) -> None:
        self.owner = owner
        self.best: Any = None
        self.best_score = -math.inf
        self.failures = 0
        self.last_error: BaseException | None = None
        self.hint: str | None = None

    def failed(self, attempt: int, exc: BaseException) -> None:
        self.failures += 1
        self.last_error = exc
        logger.warning(
            "%s attempt %d/%d failed: %s: %s",
            type(self.owner).__name__,
            attempt + 1,
            self.owner.N,
            type(exc).__name__,
            exc,
        )
        if self.failures >= self.owner.fail_count:
            raise exc

    def scored(self, prediction: object, score: float, feedback: str | None) -> bool:
        """Record an attempt; True when it is good enough to stop."""
        if self.best is None or score > self.best_score:
            self.best, self.best_score = prediction, score
        threshold = self.owner.threshold
        if threshold is not None and score >= threshold:
            return True
        self.hint = self.owner._feedback(prediction, score, feedback)
        return False

    def result(self) -> object:
        if self.best is None:
            assert self.last_error is not None
            raise self.last_error
        return self.best

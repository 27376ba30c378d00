"""The adapters' call loop: send, judge every candidate, ask again, fall back, report.

1. :func:`attempt` formats and sends; every candidate is judged (parsed) into a :class:`Slot`;
2. a candidate whose *values* do not validate (:class:`FieldValueError`) is asked again, up to
   ``max_reasks`` times, with its previous answer and the validation errors: where the LM
   constrains decoding to a JSON schema, for the failing fields only, under a schema that rules
   the failure out (:mod:`sigform.adapters.repair`); a request identical to one already sent in
   the run is never sent (at temperature 0 it would get the same answer);
3. candidates whose *structure* is wrong (:class:`StructureError`) go to the fallback adapter
   (ChatAdapter -> JSONAdapter by default), which gets its own reasks; an empty answer goes
   there only when the fallback's request is constrained (else it would come back empty or junk);
4. empty completions after a refusal or a length stop, and answers cut off by the token limit,
   get their own clear error: asking the same way again would not help;
5. with ``n > 1`` only the failed candidates are retried. The final error names the adapters
   tried, every failing field, and keeps every raw completion.

The loop is a generator that yields each :class:`PlannedCall` it wants made and returns an
:class:`AdapterResult`; :func:`drive` (sync) and :func:`adrive` (async) step it through one
:class:`~sigform.adapters.call_plan.CallPlan`, so both paths behave the same.

What an adapter decides, it decides through its own methods (the extension points):
``Adapter.attempt`` (one format-send-read pass; the two-step adapter answers freely there, then
extracts), ``Adapter.response_formats`` (the formats a request tries, a typed field of the planned
:class:`PlannedCall`), ``Adapter.send_request`` (one request; the JSON adapter steps down those
formats), ``finished_completion``, ``complete_answer``, ``outputs_from_completion``, ``fallback_adapter``
and ``constrains``.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from sigform.adapters.call_plan import AdapterCall, CallPlan, PlannedCall, ResponseFormats
from sigform.adapters.grounding import ground_outputs
from sigform.adapters.native_tools import TextSignature
from sigform.adapters.output_limit import OutputLimit, errors_after_cut, length_message, resolve_output_limit
from sigform.adapters.repair import constrained_modes, failing_fields, request_key
from sigform.adapters.result import AdapterResult, Slot, final_error
from sigform.conversation import Layout, asend, send
from sigform.errors import BadRequestError, FieldValueError, ParseError, ProviderError, StructureError
from sigform.lm.interface import NO_USAGE, Completion, LMProtocol, Usage
from sigform.message import Message

if TYPE_CHECKING:
    from sigform.adapters.base import Adapter
    from sigform.signatures import Signature

__all__ = ["RunState", "adrive", "attempt", "drive", "judge", "routed", "run_loop"]

Loop = Generator[PlannedCall, list[Completion], AdapterResult]
_NO_RETRY_FINISH = {"length", "content_filter", "refusal", "safety"}
NO_LIMIT = OutputLimit(None, "none")


class RunState:
    """What one run has sent and received so far, across reasks, fallback and sub-loops."""

    def __init__(self, adapter_names: Sequence[str] = ()) -> None:
        self.usage = NO_USAGE
        self._has_usage = False
        self.attempts = 0
        self.received: list[Completion] = []
        self.first_messages: list[Message] | None = None
        self.first_kwargs: dict[str, Any] = {}
        self.sent: set[str] = set()
        # the first request, keyed only once a second one needs comparing: most runs send one
        self._unkeyed: tuple[list[Message], dict[str, Any], ResponseFormats | None] | None = None
        self.adapter_names: list[str] = list(adapter_names)

    def fresh(self, request: PlannedCall) -> bool:
        """Record ``request``; False when an identical one was already sent in this run."""
        if not self.sent and self._unkeyed is None:
            # as it is now (copies: the caller may extend its lists and dicts afterwards)
            self._unkeyed = (list(request.messages), dict(request.kwargs), request.formats)
            return True
        if self._unkeyed is not None:
            self.sent.add(request_key(*self._unkeyed))
            self._unkeyed = None
        key = request_key(request.messages, request.kwargs, request.formats)
        if key in self.sent:
            return False
        self.sent.add(key)
        return True

    def account(self, request: PlannedCall, completions: list[Completion]) -> None:
        """Count one answered request: its usage, its completions, the first request's messages."""
        self.attempts += 1
        if self.first_messages is None:
            self.first_messages = request.messages
            self.first_kwargs = dict(request.kwargs)
        if completions:
            self.add_usage(completions[0].usage)  # usage covers the whole request
        self.received.extend(completions)

    def absorb(self, sub: AdapterResult) -> None:
        """Count a finished sub-loop's requests, usage, completions and adapters as this run's own."""
        self.attempts += sub.attempts
        self.add_usage(sub.usage)
        self.received.extend(sub.all_completions)
        self.adapter_names.extend(n for n in sub.adapter_names if n not in self.adapter_names)

    def add_usage(self, usage: Usage) -> None:
        # the first request's usage is taken as is: summing it onto an empty Usage() would turn
        # its cache_hit off (a sum is a cache hit only when every part is)
        self.usage = self.usage + usage if self._has_usage else usage
        self._has_usage = True

    def result(self, outputs: list[dict[str, Any]], completions: list[Completion]) -> AdapterResult:
        return AdapterResult(
            outputs=outputs,
            completions=completions,
            usage=self.usage,
            adapter_names=self.adapter_names,
            attempts=self.attempts,
            messages=self.first_messages or [],
            all_completions=self.received,
            request_kwargs=self.first_kwargs,
        )


def run_loop(adapter: Adapter, call: AdapterCall) -> Loop:
    """One run of ``adapter``: its attempt, the fallback's for structural failures, the result
    (or one error for every candidate that failed)."""
    state = RunState([adapter.name])
    slots = yield from adapter.attempt(call, state)
    redo = [s for s in slots if s.structural]
    fallback = adapter.fallback_for(bool(redo))
    if fallback is not None and redo and not fallback.constrains(call.lm):
        # an empty answer asked again without a constraint comes back empty or as junk
        redo = [s for s in redo if (s.completion.text or "").strip()]
    if fallback is not None and redo:
        state.adapter_names.append(fallback.name)
        redo_call = call.with_options(n=len(redo)) if len(redo) > 1 or "n" in call.lm_kwargs else call
        fb_slots = yield from fallback.attempt(redo_call, state)
        for old, new in zip(redo, fb_slots, strict=False):
            old.completion, old.outputs, old.error, old.terminal, old.unstated = (
                new.completion,
                new.outputs,
                new.error,
                new.terminal,
                new.unstated,
            )
            old.history.extend(new.history)
            old.adapters.extend(new.adapters)
    if not all(s.ok for s in slots):
        error = final_error(slots, state.adapter_names)
        error.usage, error.attempts = state.usage, state.attempts  # failed calls still cost
        raise error
    outputs = [s.outputs for s in slots if s.outputs is not None]
    result = state.result(outputs, [s.completion for s in slots])
    result.unstated = [s.unstated for s in slots]
    return result


def attempt(
    adapter: Adapter, call: AdapterCall, state: RunState
) -> Generator[PlannedCall, list[Completion], list[Slot]]:
    """Format and send one request, judge every candidate, ask again for failing values."""
    lm, inputs = call.lm, call.inputs
    signature = adapter.prompt_signature(call)
    kwargs = adapter.request_kwargs(call, signature)
    prefix, stops = "", []
    layout: Layout | None
    document = text_mode(lm)
    if document:  # a base model: one plain-text document (sigform.adapters.document)
        doc = adapter.document(signature, call.demos, inputs)
        messages: list[Message] = [{"role": "user", "content": doc.text}]
        layout, prefix, stops = None, doc.prefix, [doc.next_record] if doc.next_record else []
        if doc.stop and "stop" not in call.lm_kwargs and lm.supports("stop"):
            kwargs["stop"] = [*doc.stop, *(kwargs.get("stop") or ())]
    else:
        messages, layout = adapter.format_with_layout(signature, call.demos, inputs)
    limit = resolve_output_limit(lm, signature, call.lm_kwargs)
    if limit.source == "default":  # no limit set anywhere: one derived from the outputs
        kwargs["max_tokens"] = limit.tokens
    formats = adapter.response_formats(lm, signature, kwargs)
    # layout: read by the driver (pruning, cache markers); formats: by the adapter's send_request
    first = PlannedCall(messages, kwargs, layout=layout, formats=formats)
    slots: list[Slot] = []
    if document and _free_first(formats):
        slots = yield from _answer(
            adapter, call, signature, state, replace(first, formats=None), prefix, stops, limit
        )
        if not all(s.ok for s in slots):
            slots = []
    if not slots:
        slots = yield from _answer(adapter, call, signature, state, first, prefix, stops, limit)
    one = {k: v for k, v in kwargs.items() if k != "n"}
    for slot in slots:
        while (
            not slot.ok
            and isinstance(slot.error, FieldValueError)
            and not slot.terminal
            and slot.reasks < adapter.max_reasks
        ):
            slot.reasks += 1
            sent = yield from _retry_values(adapter, call, signature, first, one, slot, state, limit)
            if not sent:
                break
    if document and adapter.null_unstated:  # a base model fills every field (sigform.adapters.grounding)
        annotations = {name: f.annotation for name, f in signature.output_fields.items()}
        for slot in slots:
            if slot.ok and slot.outputs is not None:
                slot.unstated = ground_outputs(annotations, slot.outputs, inputs)
    return slots


def _free_first(formats: ResponseFormats | None) -> bool:
    """Whether a text-mode request constrained by ``formats`` is first sent without them.

    A base model continuing a few-shot document mostly writes the answer the demos show; a
    constraint (a GBNF grammar on llama-cpp-python's server) checks every token of its vocabulary
    against the grammar at every step (262,144 tokens for Gemma 3: 2-4x the time per generated
    token on the embedded model). So the first request goes out free, and the constrained one only
    when its answer does not parse or validate: at temperature 0 a free answer that the grammar
    would have allowed token by token is exactly the constrained answer; one it would not have
    allowed is read by the adapter's typed parser (``$3,150.00`` -> 3150.0) or fails and is asked
    again under the constraint. The prompt is the same, so the server's prompt cache makes the
    second request cost only its generated tokens."""
    return formats is not None and formats.modes[0] != "text"


def _answer(
    adapter: Adapter,
    call: AdapterCall,
    signature: type[Signature],
    state: RunState,
    request: PlannedCall,
    prefix: str,
    stops: list[str],
    limit: OutputLimit,
) -> Generator[PlannedCall, list[Completion], list[Slot]]:
    """Send ``request`` and judge every candidate it gets."""
    state.fresh(request)
    completions = yield from adapter.send_request(call.lm, state, request)
    if not completions:
        raise StructureError("the LM returned no completion", adapter=adapter.name)
    if prefix or stops:  # the answer's start was written in the document's cue
        completions = [replace(c, text=prefix + _record_only(c.text or "", stops)) for c in completions]
    slots = [Slot(adapter.finished_completion(signature, c, request.kwargs)) for c in completions]
    for slot in slots:
        judge(adapter, signature, slot, call.inputs, limit)
    return slots


def _record_only(text: str, stops: list[str]) -> str:
    """``text`` up to the next record's start, as a server honouring the document's stops ends
    it: one that ignores them (or an LM without stops) sent the records the model went on to
    invent, and the later, invented answer was read (a chat answer's later object wins)."""
    for stop in stops:
        text = text.split(stop, 1)[0]
    return text


def text_mode(lm: LMProtocol) -> bool:
    """Whether ``lm`` takes text completions (a base model: ``model_type == "text"``)."""
    return getattr(lm, "model_type", "chat") == "text"


def judge(
    adapter: Adapter,
    signature: type[Signature],
    slot: Slot,
    inputs: Mapping[str, object] | None = None,
    limit: OutputLimit = NO_LIMIT,
) -> None:
    """Read ``slot``'s completion into outputs, or the error that decides what happens next."""
    completion = slot.completion
    slot.history.append(completion)
    slot.adapters.append(adapter.name)
    text = completion.text or ""
    reason = completion.finish_reason
    if not text.strip() and not completion.tool_calls and reason in _NO_RETRY_FINISH:
        # an empty refusal or length stop: asking the same way again would not help
        slot.error = StructureError(_empty_message(reason), raw=text, adapter=adapter.name)
        slot.terminal = True
        slot.outputs = None
        return
    try:
        slot.outputs = adapter.outputs_from_completion(signature, completion, inputs)
        slot.error = None
        if completion.truncated and not adapter.complete_answer(text):
            raise StructureError(length_message(text, limit), raw=text, adapter=adapter.name)
    except ParseError as exc:
        slot.outputs = None
        slot.error = exc.with_context(raw=text, adapter=adapter.name)
        if completion.truncated:
            slot.terminal = True
            why = length_message(text, limit)
            errors, read = errors_after_cut(exc.errors, text)
            summary = exc.summary
            if read and summary.startswith("no output field found"):  # fields were read: say why unused
                summary = f"the JSON object never closes, so none of its {read} complete field(s) is used"
            slot.error = StructureError(
                why if summary == why else f"{why}. {summary}",
                errors=errors,
                raw=text,
                adapter=adapter.name,
            )


def _retry_values(
    adapter: Adapter,
    call: AdapterCall,
    signature: type[Signature],
    first: PlannedCall,
    kwargs: Mapping[str, object],
    slot: Slot,
    state: RunState,
    limit: OutputLimit,
) -> Generator[PlannedCall, list[Completion], bool]:
    """Ask again for a candidate whose values failed (``signature``: the prompt's, ``kwargs``:
    the first request's, for one candidate): for the failing fields only, under a schema
    constraint, where the LM has one; else a re-ask. False when nothing was sent: a request
    identical to one already sent would get the same answer at temperature 0."""
    assert slot.error is not None
    lm, inputs = call.lm, call.inputs
    messages, layout = first.messages, first.layout  # a retry appends turns: the layout holds
    json_adapter = adapter.constrained_json()
    modes = [] if isinstance(signature, TextSignature) else constrained_modes(json_adapter, lm)
    if not modes and text_mode(lm):
        return False  # a base model does not follow a re-ask written as a reply; nothing constrains it
    if not modes:
        reask = adapter.reask_messages(signature, messages, slot.completion, slot.error)
        retry = PlannedCall(reask, dict(kwargs), layout=layout, formats=first.formats)
        if not state.fresh(retry):
            return False
        again = yield from adapter.send_request(lm, state, retry)
        if not again:
            return False
        slot.completion = adapter.finished_completion(signature, again[0], kwargs)
        judge(adapter, signature, slot, inputs, limit)  # the re-ask carries the same limit
        return True
    repair = adapter.repair_plan
    failing = failing_fields(slot.error)
    subset = repair.failing_signature(signature, failing)
    request_kwargs = {k: v for k, v in kwargs.items() if k not in ("stop", "response_format")}
    answer = slot.completion.text or ""
    fixing = repair.messages(adapter, signature, messages, answer, slot.error)
    retry = PlannedCall(fixing, request_kwargs, layout=layout, formats=ResponseFormats(tuple(modes), subset))
    if not state.fresh(retry):
        return False
    try:
        again = yield from json_adapter.send_request(lm, state, retry)
    except (BadRequestError, ProviderError):  # every constrained mode was refused
        return False
    if not again:
        return False
    fix = again[0]
    slot.history.append(fix)
    slot.adapters.append(json_adapter.name)
    try:
        kept = repair.kept_values(adapter, signature, slot.completion, failing)
        fixed = json_adapter.parse(subset, fix.text or "", inputs=inputs)
    except ParseError as exc:
        slot.error = exc.with_context(raw=fix.text or "", adapter=json_adapter.name)
        slot.terminal = True  # the constrained retry is the last word on these fields
        return True
    slot.outputs, slot.error, slot.completion = repair.merge(signature, kept, fixed), None, fix
    return True


def routed(loop: Loop, lm: LMProtocol) -> Loop:
    """The sub-loop ``loop`` run inside another loop, its requests routed to ``lm``."""
    plan = CallPlan(loop)
    while (request := plan.request) is not None:
        outcome: list[Completion] | Exception
        try:
            outcome = yield replace(request, lm=lm)
        except Exception as exc:
            outcome = exc
        plan.settle(outcome)
    return plan.result


def drive(loop: Loop, lm: LMProtocol) -> AdapterResult:
    """Run ``loop`` to its result, each request sent to ``lm`` (or the LM it is routed to):
    fitted to the context window, normalised for the provider, cache-marked."""
    plan = CallPlan(loop)
    while (request := plan.request) is not None:
        target = request.lm or lm
        plan.settle(_outcome(send, target, request.messages, request.kwargs, layout=request.layout))
    return plan.result


async def adrive(loop: Loop, lm: LMProtocol) -> AdapterResult:
    """:func:`drive` with ``lm.acall``."""
    plan = CallPlan(loop)
    while (request := plan.request) is not None:
        target = request.lm or lm
        try:
            outcome: list[Completion] | Exception = await asend(
                target, request.messages, request.kwargs, layout=request.layout
            )
        except Exception as exc:
            outcome = exc
        plan.settle(outcome)
    return plan.result


def _outcome(call: Any, *args: object, **kwargs: object) -> list[Completion] | Exception:
    try:
        return call(*args, **kwargs)  # type: ignore[no-any-return]
    except Exception as exc:
        return exc


def _empty_message(reason: str | None) -> str:
    if reason == "length":
        return (
            "the model returned no text: it hit the output-token limit before answering "
            "(finish_reason='length'); raise max_tokens or lower the reasoning effort"
        )
    return f"the model returned no text and stopped with finish_reason={reason!r}: it refused or was filtered"

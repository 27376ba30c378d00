"""History: earlier conversation turns given to a program as an input field.

Two forms, kept apart explicitly (``raw_turns``) rather than guessed from dict keys, because a
signature may well have a field called ``role``:

* **field values** -- ``History(messages=[{"question": ..., "answer": ...}, ...])``: each entry
  holds values of the signature's own fields; the adapter formats each as a user turn (inputs)
  followed by an assistant turn (outputs), after the demos and before the current input.
* **raw chat turns** -- ``History.from_turns([{"role": "user", "content": ...}, ...])``: OpenAI
  chat messages passed through as they are, including tool calls (assistant ``tool_calls``)
  and tool results (role ``"tool"`` with ``tool_call_id``). Tool calls are normalised to the
  OpenAI shape and every call must be answered by tool turns right after it, as providers
  require.

``History`` is immutable; :meth:`History.add` returns a longer copy. :meth:`History.groups`
gives the units a pruner may drop together (a tool call always with its results).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import is_dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = ["History"]

_ROLES = ("system", "user", "assistant", "tool")
_TURN_KEYS = frozenset({"role", "content", "tool_calls", "tool_call_id", "name", "reasoning_content"})


def _short(value: object, limit: int = 60) -> str:
    s = repr(value)
    return s if len(s) <= limit else s[: limit - 3] + "..."


def _arguments_json(args: object, where: str) -> str:
    if isinstance(args, str):
        try:
            decoded = json.loads(args)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}: arguments are not valid JSON ({exc.msg}): {_short(args)}") from exc
        if not isinstance(decoded, dict):
            raise ValueError(f"{where}: arguments must be a JSON object, got {_short(args)}")
        return args
    if isinstance(args, Mapping):
        return json.dumps(dict(args), ensure_ascii=False, default=str)
    raise ValueError(f"{where}: arguments must be a dict or a JSON object string, got {type(args).__name__}")


def _normalise_call(call: object, where: str) -> dict[str, object]:
    """One tool call in OpenAI message shape: {"id", "type": "function", "function": {...}}."""
    if is_dataclass(call) or isinstance(call, BaseModel):  # ToolCall / ToolCalls.Call
        source: Any = call  # both have .name (is_dataclass/isinstance only pick the shape)
        call = {
            "id": getattr(source, "id", None),
            "name": source.name,
            "arguments": getattr(source, "arguments", getattr(source, "args", {})),
        }
    if not isinstance(call, Mapping):
        raise ValueError(f"{where}: a tool call must be a dict, got {type(call).__name__}")
    fn = call.get("function")
    if isinstance(fn, Mapping):
        name, args = fn.get("name"), fn.get("arguments", "{}")
    else:
        name, args = call.get("name"), call.get("arguments", call.get("args", {}))
    call_id = call.get("id")
    if not isinstance(name, str) or not name:
        raise ValueError(f"{where}: tool call has no name: {_short(dict(call))}")
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"{where}: tool call {name!r} needs an 'id' so its result can refer to it")
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": _arguments_json(args, where)},
    }


def _check_content(content: object, where: str, *, required: bool) -> None:
    if content is None:
        if required:
            raise ValueError(f"{where}: content is required")
        return
    if isinstance(content, str):
        return
    if isinstance(content, list) and all(
        isinstance(p, Mapping) and isinstance(p.get("type"), str) for p in content
    ):
        return
    raise ValueError(
        f"{where}: content must be a string or a list of content parts ({{'type': ...}} dicts), "
        f"got {_short(content)}"
    )


def _normalise_turn(turn: object, index: int) -> dict[str, object]:
    where = f"History turn {index}"
    if not isinstance(turn, Mapping):
        raise ValueError(f"{where}: expected a chat message dict, got {type(turn).__name__}")
    unknown = set(turn) - _TURN_KEYS
    if unknown:
        raise ValueError(f"{where}: unknown keys {sorted(unknown)}; chat turns use {sorted(_TURN_KEYS)}")
    role = turn.get("role")
    if role not in _ROLES:
        raise ValueError(f"{where}: role must be one of {list(_ROLES)}, got {_short(role)}")
    where = f"{where} ({role})"
    out = dict(turn)
    if role == "assistant":
        calls = turn.get("tool_calls") or []
        if not isinstance(calls, (list, tuple)):
            raise ValueError(f"{where}: tool_calls must be a list")
        _check_content(turn.get("content"), where, required=not calls)
        if calls:
            out["tool_calls"] = [_normalise_call(c, where) for c in calls]
        else:
            out.pop("tool_calls", None)
    else:
        if "tool_calls" in turn:
            raise ValueError(f"{where}: only assistant turns can have tool_calls")
        _check_content(turn.get("content"), where, required=True)
    if role == "tool":
        if not isinstance(turn.get("tool_call_id"), str) or not turn["tool_call_id"]:
            raise ValueError(f"{where}: a tool result needs the tool_call_id of the call it answers")
    elif "tool_call_id" in turn:
        raise ValueError(f"{where}: only tool turns have a tool_call_id")
    return out


def _check_entry(entry: object, index: int) -> dict[str, object]:
    if not isinstance(entry, Mapping):
        raise ValueError(
            f"History message {index}: expected a dict of field values, got {type(entry).__name__}"
        )
    if not entry:
        raise ValueError(f"History message {index} is empty; each holds field values")
    bad = [k for k in entry if not isinstance(k, str) or not k]
    if bad:
        raise ValueError(f"History message {index}: keys must be field names, got {bad!r}")
    return dict(entry)


def _check_pairing(turns: list[dict[str, Any]]) -> None:
    """Every tool call is answered exactly once by the tool turns right after its assistant turn,
    and every tool turn answers a call of that assistant turn (the providers' rule)."""
    pending: dict[str, int] = {}  # call id -> index of the assistant turn that made it
    for i, turn in enumerate(turns):
        role = turn["role"]
        if role == "tool":
            call_id = turn["tool_call_id"]
            if call_id not in pending:
                raise ValueError(
                    f"History turn {i} (tool) answers tool_call_id {call_id!r}, but the assistant turn "
                    "right before it made no such call (or it was already answered)"
                )
            del pending[call_id]
            continue
        if pending:
            call_id, at = next(iter(pending.items()))
            raise ValueError(
                f"History turn {at} (assistant) calls a tool (id {call_id!r}) that no tool turn answers "
                f"before turn {i} ({role})"
            )
        if role == "assistant":
            for call in turn.get("tool_calls", ()):
                if call["id"] in pending:
                    raise ValueError(f"History turn {i} (assistant): duplicate tool call id {call['id']!r}")
                pending[call["id"]] = i
    if pending:
        call_id, at = next(iter(pending.items()))
        raise ValueError(
            f"History turn {at} (assistant) calls a tool (id {call_id!r}) that is never answered"
        )


class History(BaseModel):
    """Conversation history for a signature input field (``history: sf.History = sf.InputField()``).

    ``messages`` holds either field-value dicts (default) or, with ``raw_turns=True``, chat turns
    (build those with :meth:`from_turns`). Adapters read :attr:`entries` and :attr:`is_raw_turns`;
    :meth:`check_fields` reports field-value entries that name unknown fields.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    messages: tuple[dict[str, Any], ...] = ()
    raw_turns: bool = False

    @model_validator(mode="before")
    @classmethod
    def _normalise(cls, value: object) -> object:
        if not isinstance(value, Mapping):
            return value  # a History instance, or something pydantic rejects with its own error
        fields = dict(value)
        messages = fields.get("messages", ())
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
            raise ValueError(f"History messages must be a list of dicts, got {type(messages).__name__}")
        messages = list(messages)
        raw = fields.get("raw_turns", False)
        if not isinstance(raw, bool):
            raise ValueError(f"History raw_turns must be True or False, got {raw!r}")
        if raw:
            turns = [_normalise_turn(t, i) for i, t in enumerate(messages)]
            _check_pairing(turns)
        else:
            turns = [_check_entry(e, i) for i, e in enumerate(messages)]
        fields["messages"] = tuple(turns)
        return fields

    @classmethod
    def from_turns(cls, turns: Iterable[Mapping[str, object]]) -> History:
        """History made of raw chat turns (``{"role": ..., "content": ...}``, tool calls and
        tool results included), checked and normalised to the OpenAI message shape."""
        return cls.model_validate({"messages": tuple(turns), "raw_turns": True})  # checked by the validator

    @property
    def is_raw_turns(self) -> bool:
        """True when :attr:`entries` are chat turns, False when they are field-value dicts."""
        return self.raw_turns

    @property
    def entries(self) -> list[dict[str, Any]]:
        """The history, oldest first, as fresh dicts (safe to put into a request as they are)."""
        return [_copy_turn(m) for m in self.messages]

    def add(self, *messages: Mapping[str, object]) -> History:
        """A new History with ``messages`` appended (same form; validated again)."""
        combined = (*self.messages, *messages)
        return type(self).model_validate({"messages": combined, "raw_turns": self.raw_turns})

    def groups(self) -> list[list[int]]:
        """Indices of :attr:`entries` grouped into units that must be kept or dropped together:
        an assistant turn with tool calls forms one unit with its tool results; every other entry
        is its own unit. Oldest first -- a pruner drops from the front."""
        units: list[list[int]] = []
        for i, m in enumerate(self.messages):
            if self.raw_turns and m.get("role") == "tool" and units:
                units[-1].append(i)
            else:
                units.append([i])
        return units

    def check_fields(self, names: Iterable[str]) -> None:
        """Raise ValueError if a field-value entry names a field not in ``names`` (the
        signature's fields). Raw turns are not checked."""
        if self.raw_turns:
            return
        allowed = set(names)
        for i, entry in enumerate(self.messages):
            unknown = sorted(set(entry) - allowed)
            if unknown:
                hint = ""
                if entry.get("role") in _ROLES and set(entry) <= _TURN_KEYS:
                    hint = " (these look like chat turns: build the history with History.from_turns(...))"
                raise ValueError(
                    f"History message {i} has unknown field(s) {unknown}; the signature has "
                    f"{sorted(allowed)}{hint}"
                )

    # -- value-engine hooks (see sigform.types) -----------------------------------------------

    @classmethod
    def __sigform_coerce__(cls, value: object) -> History:
        """Accept a History, its ``model_dump()`` dict, or a list of field-value dicts; never text
        (raw turns can carry content parts, which text must not be able to create)."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(value)
        if isinstance(value, (list, tuple)):
            return cls.model_validate({"messages": value})
        raise TypeError(
            f"expected a History (or a list of field-value dicts), got {type(value).__name__}; "
            "build it with History(messages=[...]) or History.from_turns([...])"
        )

    @classmethod
    def __sigform_describe__(cls) -> Any:
        from sigform.types.describe import TypeDescription

        return TypeDescription("custom", "History")

    def __len__(self) -> int:
        return len(self.messages)

    def __repr__(self) -> str:  # short: turns may carry large content parts
        n = len(self.messages)
        kind = "turn" if self.raw_turns else "message"
        return f"History({n} {kind}{'' if n == 1 else 's'})"

    __str__ = __repr__


def _copy_turn(message: dict[str, Any]) -> dict[str, object]:
    out = dict(message)
    if "tool_calls" in out:
        out["tool_calls"] = [{**c, "function": dict(c["function"])} for c in out["tool_calls"]]
    return out

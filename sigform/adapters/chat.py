"""ChatAdapter: outputs as ``[[ ## field ## ]]`` sections ending with ``[[ ## completed ## ]]``.

The default adapter. Scalars are written as plain text, structures (lists, dicts, models) as JSON
matching the field's JSON schema, ``None`` as ``null``. ``[[ ## completed ## ]]`` is sent as a
stop sequence where the LM supports it. On a structural failure it falls back to
:class:`~sigform.adapters.JSONAdapter` (``fallback=False`` turns that off).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from sigform.adapters.base import Adapter, AdapterOptions
from sigform.adapters.call_plan import AdapterCall
from sigform.adapters.chat_scan import neutralise_markers
from sigform.adapters.fields import FieldView

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.signatures import Signature

__all__ = ["COMPLETED_MARKER", "ChatAdapter"]

COMPLETED_MARKER = "[[ ## completed ## ]]"


def write_scalar_or_json(adapter: Adapter, value: object, view: FieldView) -> str:
    """Scalars as the value engine renders them; structures always as one line of JSON."""
    from sigform.types import render_value

    if view.kind in ("list", "dict", "model") and value is not None:
        return json.dumps(adapter.jsonable(value), ensure_ascii=False)
    return render_value(value, view.annotation)


class ChatAdapter(Adapter):
    """Sections under ``[[ ## field ## ]]`` headers (see the module docstring)."""

    name: ClassVar[str] = "ChatAdapter"
    template_folder: ClassVar[str] = "chat"
    parse_order: ClassVar[tuple[str, ...]] = ("chat", "json", "xml", "labels")
    stream_format: ClassVar[str] = "chat"

    def __init__(self, *, use_stop: bool = True, **options: Unpack[AdapterOptions]) -> None:
        super().__init__(**options)
        self.use_stop = use_stop

    def identity(self) -> dict[str, object]:
        return {**super().identity(), "use_stop": self.use_stop}

    def fallback_adapter(self) -> Adapter | None:
        option = self._fallback_option
        if option is None or option is True:
            from sigform.adapters.json_adapter import JSONAdapter

            with self._lock:
                if not isinstance(self._fallback_option, Adapter):
                    self._fallback_option = JSONAdapter(fallback=False, max_reasks=self.max_reasks)
            return self._fallback_option
        return super().fallback_adapter()

    def neutralise(self, text: str) -> str:
        return neutralise_markers(text)

    def render_output(self, value: object, view: FieldView) -> str:
        return self.neutralise(write_scalar_or_json(self, value, view))

    def request_kwargs(self, call: AdapterCall, signature: type[Signature]) -> dict[str, Any]:
        kwargs = super().request_kwargs(call, signature)
        if self.use_stop and "stop" not in kwargs and call.lm.supports("stop"):
            kwargs["stop"] = [COMPLETED_MARKER]
        return kwargs

    def answer_prefix(self, signature: type[Signature], outputs: Sequence[FieldView]) -> str:
        return f"[[ ## {outputs[0].name} ## ]]\n" if outputs else ""

    def complete_answer(self, text: str) -> bool:
        from sigform.adapters.chat_scan import HEADER_RE

        return any(m.group("name").strip().lower() == "completed" for m in HEADER_RE.finditer(text))

    def format_name(self) -> str:
        return "`[[ ## field ## ]]` sections"

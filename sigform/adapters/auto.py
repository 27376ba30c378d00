"""AutoAdapter: the default adapter, which picks the answer format per LM.

Where the LM constrains decoding to a JSON schema (strict structured outputs, or a server such as
llama.cpp that turns the schema into a grammar), the answer is asked for as one JSON object under
that constraint: the model cannot write a malformed answer or junk after it, and generation ends
with the object. Everywhere else it is a :class:`~sigform.adapters.ChatAdapter` (``[[ ## field
## ]]`` sections, the completed marker as a stop sequence). Measured on the real-model suite
(``benchmarks/real_suite``: Gemma 3 270M, 3 demos), constrained JSON got more answers right,
with fewer tokens, than chat sections.

The choice is visible in ``pred._meta.adapter`` (``"JSONAdapter"`` or ``"ChatAdapter"``) and is
overridden by passing an adapter (``Predict(..., adapter=sf.ChatAdapter())``, ``sf.configure``).
Without an LM (``format``, ``parse``, ``stream_parser``) it is the chat adapter.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

from sigform.adapters.base import AdapterOptions
from sigform.adapters.call_plan import AdapterCall, PlannedCall
from sigform.adapters.chat import ChatAdapter
from sigform.adapters.result import AdapterResult
from sigform.lm.interface import Completion, LMProtocol

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from sigform.adapters.base import Adapter
    from sigform.adapters.json_adapter import JSONAdapter
    from sigform.signatures import Signature

__all__ = ["AutoAdapter"]


class AutoAdapter(ChatAdapter):
    """Constrained JSON where the LM can constrain decoding, chat sections elsewhere.

    Args:
        max_reasks: as for every adapter (both formats use it).
        **options: passed to the chat adapter (templates, fallback, use_stop, ...).
    """

    def __init__(self, *, use_stop: bool = True, **options: Unpack[AdapterOptions]) -> None:
        super().__init__(use_stop=use_stop, **options)
        self._json: JSONAdapter | None = None

    def __repr__(self) -> str:
        return f"AutoAdapter(max_reasks={self.max_reasks})"

    def json_adapter(self) -> JSONAdapter:
        """The JSONAdapter used where the LM constrains decoding (built on first use)."""
        if self._json is None:
            from sigform.adapters.json_adapter import JSONAdapter

            with self._lock:
                if self._json is None:
                    self._json = JSONAdapter(max_reasks=self.max_reasks)
        return self._json

    def choose(self, lm: LMProtocol) -> str:
        """The name of the adapter that answers for ``lm``: ``"JSONAdapter"`` where ``lm``
        constrains decoding to a schema, else ``"ChatAdapter"``."""
        if not (lm.supports("json_schema") or lm.supports("json_object")):
            return "ChatAdapter"  # decided without importing the JSON adapter
        return "JSONAdapter" if self.json_adapter().constrains(lm) else "ChatAdapter"

    def answering(self, lm: LMProtocol) -> Adapter:
        """The adapter that answers for ``lm``: the JSON adapter or this one (chat sections)."""
        return self.json_adapter() if self.choose(lm) == "JSONAdapter" else self

    def loop(self, call: AdapterCall) -> Generator[PlannedCall, list[Completion], AdapterResult]:
        """The JSON adapter's loop where the LM constrains decoding, else the chat adapter's."""
        if self.choose(call.lm) == "JSONAdapter":
            return self.json_adapter().loop(call)
        return super().loop(call)

    def stream_parser(self, signature: type[Signature]) -> Any:
        from sigform.adapters.streaming import StreamParser

        return StreamParser(signature, "auto")

"""Prompt tokens billed with and without ``prompt_cache`` for a few-shot program.

A 3-demo program (a few hundred words of instructions, three worked demos) answers 100
different questions through ``sigform.LM`` and litellm against the loopback Anthropic and
Bedrock fakes, whose responder bills prompt caching like the providers: the prompt up to the
cache breakpoint is written once (at 1.25x) and then read (at 0.1x); prefixes under 1024
tokens are not cached. Prints, per provider and setting, the prompt tokens sent, written, read
and billed (in input-token equivalents), the cached tokens sigform reports in ``lm.usage``, and
the ratio of billed tokens with caching to without.

Usage: ``python benchmarks/prompt_cache.py [--runs 100]``.
"""

from __future__ import annotations

import argparse
import os
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import sigform as sf
from sigform.testing.providers import AnthropicFake, BedrockConverseFake, FakeProvider
from sigform.testing.providers.caching import PromptCacheBilling

INSTRUCTIONS = (
    "Classify the support ticket into one of the product areas and give a one-sentence reason. "
    "Product areas: billing (invoices, refunds, payment methods, plans), account (login, password, "
    "two-factor authentication, profile, deletion), shipping (delivery times, tracking, lost parcels, "
    "addresses), product (defects, sizes, compatibility, manuals), and other (anything else). "
    "Read the whole ticket before deciding; customers often mention several topics, so pick the one "
    "they need solved. Quote no personal data in the reason. "
) * 6


class Ticket(sf.Signature):
    """Classify a support ticket."""

    ticket: str = sf.InputField()
    area: str = sf.OutputField(desc="billing, account, shipping, product or other")
    reason: str = sf.OutputField()


DEMOS = [
    {
        "ticket": "I was charged twice for my March invoice and want one refunded.",
        "area": "billing",
        "reason": "The customer asks for a refund of a duplicate charge.",
    },
    {
        "ticket": "My parcel has said 'in transit' for twelve days and the tracking link is dead.",
        "area": "shipping",
        "reason": "The customer needs a delayed delivery traced.",
    },
    {
        "ticket": "After the update I cannot log in: the two-factor code is always rejected.",
        "area": "account",
        "reason": "The customer cannot sign in because two-factor codes fail.",
    },
]
ANSWER = "[[ ## area ## ]]\nproduct\n\n[[ ## reason ## ]]\nThe item is defective.\n\n[[ ## completed ## ]]"
MODELS: dict[str, tuple[type[FakeProvider], str]] = {
    "anthropic": (AnthropicFake, "claude-sonnet-4-5"),
    "bedrock": (BedrockConverseFake, "anthropic.claude-3-7-sonnet-20250219-v1:0"),
}


def run(provider: str, prompt_cache: bool, runs: int) -> dict[str, Any]:
    fake_cls, model = MODELS[provider]
    billing = PromptCacheBilling(ANSWER)
    program = sf.Predict(Ticket.with_instructions(INSTRUCTIONS), demos=DEMOS, prompt_cache=prompt_cache)
    with fake_cls(responder=billing) as fake:
        kwargs = fake.litellm_kwargs(model, api_key="bench-key")
        lm = sf.LM(kwargs.pop("model"), cache=False, num_retries=0, **kwargs)
        for i in range(runs):
            pred = program(ticket=f"Ticket #{i}: the blender I bought arrived with a cracked jug.", lm=lm)
            assert pred.area == "product"
    fake.check()
    return {
        "sent": billing.prompt_tokens,
        "fresh": billing.fresh_tokens,
        "written": billing.write_tokens,
        "read": billing.read_tokens,
        "billed": billing.billed(),
        "reported_cached": lm.usage.cached_tokens,
        "reported_prompt": lm.usage.prompt_tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100)
    args = parser.parse_args()
    print(f"3-demo program, {args.runs} calls each (prompt tokens; billed = fresh + 1.25 written + 0.1 read)")
    header = f"{'provider':<10} {'prompt_cache':<13} {'sent':>8} {'written':>8} {'read':>8} {'billed':>10}"
    print(header + f" {'sigform cached':>15}")
    for provider in MODELS:
        results = {flag: run(provider, flag, args.runs) for flag in (False, True)}
        for flag, r in results.items():
            print(
                f"{provider:<10} {flag!s:<13} {r['sent']:>8} {r['written']:>8} {r['read']:>8} "
                f"{r['billed']:>10.0f} {r['reported_cached']:>15}"
            )
            assert r["reported_cached"] == r["read"] and r["reported_prompt"] == r["sent"]
        ratio = results[True]["billed"] / results[False]["billed"]
        print(f"{provider:<10} billed with / without prompt_cache: {ratio:.2f} ({1 / ratio:.1f}x fewer)")


if __name__ == "__main__":
    main()

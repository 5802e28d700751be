"""Synthetic samples from a known latency model, for unit tests of the fit and the rules."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.core.samples import Sample


@dataclass(frozen=True)
class Truth:
    """Known parameters; durations in ms, rates per token."""

    overhead_ms: float = 40.0
    prefill_ms_per_token: float = 0.05
    prefill_ms_per_token_sq: float = 0.0
    prefill_floor_ms: float = 0.0
    tpot_ms: float = 20.0
    tpot_ms_per_1k_context: float = 1.0
    batch_slope: float = 0.02
    slots: int = 8
    reasoning_ms: float = 0.0

    def prefill_ms(self, tokens: float) -> float:
        line = self.prefill_ms_per_token * tokens + self.prefill_ms_per_token_sq * tokens**2
        return max(line, self.prefill_floor_ms)

    def queue_ms(self, concurrency: int, prompt_tokens: float, output_tokens: int) -> float:
        """Steady state of a closed loop: c clients, `slots` servers, a request holding one
        for prefill + decode; a cycle lasts max(overhead + service, c x service / slots)."""
        service = self.prefill_ms(prompt_tokens) + (output_tokens - 1) * self.tpot(
            concurrency, prompt_tokens
        )
        return max(concurrency * service / self.slots - self.overhead_ms - service, 0.0)

    def tpot(self, concurrency: int, prompt_tokens: float) -> float:
        growth = 1 + self.batch_slope * (min(concurrency, self.slots) - 1)
        return self.tpot_ms * growth + self.tpot_ms_per_1k_context * prompt_tokens / 1000


def synthetic_samples(
    truth: Truth,
    *,
    prompt_lengths: tuple[int, ...] = (128, 1024, 4096),
    concurrencies: tuple[int, ...] = (1, 4, 16),
    output_tokens: int = 64,
    per_point: int = 10,
    noise_sd_ms: float = 2.0,
    tpot_noise_sd_ms: float = 0.2,
    outlier_share: float = 0.0,
    missing_usage: bool = False,
    seed: int = 0,
) -> list[Sample]:
    rng = np.random.default_rng(seed)
    samples = []
    for c in concurrencies:
        for target in prompt_lengths:
            for _ in range(per_point):
                prompt = round(target * rng.uniform(0.95, 1.05))
                queue = truth.queue_ms(c, prompt, output_tokens)
                ttft = truth.overhead_ms + queue + truth.prefill_ms(prompt)
                ttft += rng.normal(0, noise_sd_ms)
                if rng.random() < outlier_share:
                    ttft += rng.uniform(5, 10) * (truth.overhead_ms + truth.prefill_ms(prompt))
                tpot = truth.tpot(c, prompt) + rng.normal(0, tpot_noise_sd_ms)
                ttfa = ttft + truth.reasoning_ms if truth.reasoning_ms else None
                e2e = ttft + (output_tokens - 1) * tpot
                samples.append(
                    Sample(
                        concurrency=c,
                        target_prompt_tokens=target,
                        target_output_tokens=output_tokens,
                        ttft_ms=ttft,
                        e2e_ms=e2e,
                        prompt_tokens=None if missing_usage else prompt,
                        cached_prompt_tokens=None if missing_usage else 0,
                        output_tokens=output_tokens,
                        tpot_ms=tpot,
                        ttfa_ms=ttfa if ttfa is not None else ttft,
                        connect_ms=5.0 if rng.random() < 0.1 else None,
                        tokens_estimated=missing_usage,
                    )
                )
    return samples


def drop_successes(samples: list[Sample], *, concurrency: int, keep: int) -> list[Sample]:
    """Mark all but `keep` requests of each point at `concurrency` as errors."""
    seen: dict[int, int] = {}
    out = []
    for s in samples:
        if s.concurrency == concurrency:
            seen[s.target_prompt_tokens] = seen.get(s.target_prompt_tokens, 0) + 1
            if seen[s.target_prompt_tokens] > keep:
                s = replace(s, outcome="error", ttft_ms=None, e2e_ms=None)
        out.append(s)
    return out

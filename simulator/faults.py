"""Faults on demand: per request through the `X-Sim-Fault` header, or at random per profile.

Header syntax: `kind[;name=value]...`, e.g. `stall;after_chunks=3;stall_ms=1500`. Kinds:
error_500, rate_limit (429 with Retry-After), malformed, stall, disconnect, trickle.
"""

from __future__ import annotations

import dataclasses
import random
from dataclasses import dataclass

from simulator.profile import FAULT_KINDS, Profile

FAULT_HEADER = "X-Sim-Fault"


class FaultSyntaxError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class Fault:
    """One fault and its parameters.

    - error_500: answer 500 before any work. rate_limit: answer 429 with `Retry-After:
      retry_after_s`.
    - malformed: after `after_chunks` token chunks, one event that is not valid JSON (a
      non-streaming response gets a body that is not valid JSON).
    - stall: after `after_chunks` chunks, send nothing for `stall_ms`, then carry on.
    - disconnect: after `after_chunks` chunks, close the connection mid-stream (non-streaming:
      close without answering).
    - trickle: at least `interval_ms` between chunks (streaming only).
    """

    kind: str
    after_chunks: int = 2
    stall_ms: float = 2000.0
    interval_ms: float = 200.0
    retry_after_s: int = 1

    def __str__(self) -> str:
        defaults = Fault(self.kind)
        params = [
            f"{f.name}={getattr(self, f.name)}"
            for f in dataclasses.fields(self)
            if f.name != "kind" and getattr(self, f.name) != getattr(defaults, f.name)
        ]
        return ";".join([self.kind, *params])


def fault_parse(header: str) -> Fault:
    """The fault an `X-Sim-Fault` header asks for; FaultSyntaxError explains a bad one."""
    kind, *params = (part.strip() for part in header.split(";"))
    if kind not in FAULT_KINDS:
        raise FaultSyntaxError(f"unknown fault {kind!r}; known: {', '.join(FAULT_KINDS)}")
    types = {f.name: f.type for f in dataclasses.fields(Fault) if f.name != "kind"}
    values: dict[str, int | float] = {}
    for param in params:
        name, _, raw = param.partition("=")
        if name not in types:
            raise FaultSyntaxError(f"unknown fault parameter {name!r}; known: {', '.join(types)}")
        try:
            values[name] = int(raw) if types[name] == "int" else float(raw)
        except ValueError:
            raise FaultSyntaxError(f"fault parameter {name} needs a number, not {raw!r}") from None
        if values[name] < 0:
            raise FaultSyntaxError(f"fault parameter {name} cannot be negative")
    return Fault(kind, **values)  # type: ignore[arg-type]


def fault_draw(profile: Profile, rng: random.Random) -> Fault | None:
    """A fault drawn from the profile's `fault_rates`, or None (one draw per kind, in order)."""
    for kind, rate in profile.fault_rates.items():
        if rate > 0 and rng.random() < rate:
            return Fault(kind)
    return None

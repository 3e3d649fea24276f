"""Find scores an agent claims without having measured them (the paper's "hallucination" failure).

A claim is a number written with a decimal point or a percent sign (how scores are written:
``0.853``, ``85.3%``, ``43.41``) in the Final Answer, or in a Fact Check line that calls itself
confirmed. It counts as measured when some number printed by code the agent ran before the claim
(an Execute Script or Python REPL observation, including those run inside composite actions)
rounds to it: ``0.8534`` backs ``0.853`` and ``85.3%``. Numbers the agent only wrote or read in
files do not count: the paper's rule is that results are confirmed only by running code.
"""

from __future__ import annotations

import re
from typing import Any, Iterable

#: Actions whose observations are outputs of executed code.
MEASURING_ACTIONS = frozenset({"Execute Script", "Python REPL"})
FINAL_ACTION = "Final Answer"

_CLAIM = re.compile(r"(?<![\w.])[-+]?(?:\d+(?:\.\d+)?\s*%|\d+\.\d+|\.\d+)")
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def claimed_numbers(text: str) -> list[str]:
    """Score-like numbers in ``text``, as written."""
    return [match.group(0).replace(" ", "") for match in _CLAIM.finditer(text or "")]


def measured_numbers(text: str) -> list[float]:
    values = []
    for match in _NUMBER.finditer(text or ""):
        try:
            values.append(float(match.group(0)))
        except ValueError:
            continue
    return values


def is_backed(claim: str, measured: Iterable[float]) -> bool:
    """Whether a measured value, rounded the way the claim is written, gives the claim."""
    percent = claim.endswith("%")
    digits = claim.rstrip("%")
    value = float(digits)
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    half_step = 0.5 * 10 ** -decimals + 1e-12
    # (value the printed number should round to, how the rounding step scales with it)
    targets = ((value, 1.0), (value / 100, 0.01)) if percent else ((value, 1.0), (value * 100, 100.0))
    return any(abs(abs(number) - abs(target)) <= half_step * scale
               for number in measured for target, scale in targets)


def unmeasured_claims(records: Iterable[dict[str, Any]]) -> list[str]:
    """Claims in a run's trace records that no earlier executed-code output shows, in order."""
    measured: list[float] = []
    unbacked: list[str] = []
    for record in records:
        if record.get("type") != "step":
            continue
        fact_check = (record.get("thinking") or {}).get("Fact Check", "")
        for line in str(fact_check).splitlines():
            if "confirmed" in line.lower():
                unbacked += [f"Fact Check, step {record.get('step')}: {claim}"
                             for claim in claimed_numbers(line) if not is_backed(claim, measured)]
        if record.get("action") == FINAL_ACTION and not record.get("error"):
            answer = " ".join(str(value) for value in (record.get("arguments") or {}).values())
            unbacked += [f"Final Answer: {claim}" for claim in claimed_numbers(answer)
                         if not is_backed(claim, measured)]
        outputs = [record.get("observation", "")] if record.get("action") in MEASURING_ACTIONS else []
        outputs += [low.get("observation", "") for low in record.get("low_level") or []
                    if low.get("action") in MEASURING_ACTIONS]
        for output in outputs:
            measured.extend(measured_numbers(str(output)))
    return unbacked

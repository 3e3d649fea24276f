"""The session's LLM budget, shared by xdist workers through a ledger file in --mlab-out.

Workers do not see each other's costs, so each appends one line per finished run to
``<out>/.budget-ledger.jsonl`` under an exclusive ``flock`` and sums the file (under a shared
lock) before starting a run. The controller empties the ledger when the session starts.
"""

from __future__ import annotations

import fcntl
import json
from pathlib import Path

LEDGER = ".budget-ledger.jsonl"


class Ledger:
    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / LEDGER

    def reset(self) -> None:
        """A new session starts with nothing spent."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.truncate(0)

    def add(self, run_id: str, cost: float) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps({"run_id": run_id, "cost": float(cost or 0.0)}) + "\n"
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(line)
            handle.flush()

    def spent(self) -> float:
        """Dollars spent so far this session; a line cut short by a dying worker counts nothing."""
        try:
            handle = open(self.path)
        except FileNotFoundError:
            return 0.0
        with handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            total = 0.0
            for line in handle:
                try:
                    total += float(json.loads(line)["cost"])
                except (ValueError, KeyError, TypeError):
                    continue
        return total


def over_budget(ledger: Ledger, max_cost: float | None) -> str | None:
    """The skip reason once the session's cost has reached the budget; None while within it."""
    if max_cost is None:
        return None
    spent = ledger.spent()
    if spent >= max_cost:
        return f"budget: this session's LLM cost ${spent:.2f} reached --mlab-max-cost=${max_cost:g}; not started"
    return None

"""The session's LLM budget (--mlab-max-cost), shared by xdist workers through a ledger file in --mlab-out.

Workers do not see each other's costs, so every paid LLM call is charged in ``<out>/.budget-ledger.jsonl``
as it happens. Under an exclusive ``flock``, before the call, a worker reads the ledger and reserves an
estimate of the call's cost: the largest cost of a call this session, or the whole remainder while no
call has been settled yet. The call is allowed while spent + reservations in flight < the limit; while
other calls in flight hold the rest, it waits for them to settle; once spent >= limit it is refused.
After the call its real cost settles the reservation. So, whatever ``-n`` is, the session spends at most
about one call's cost beyond the limit. Reservations of a worker that died are ignored. The controller
empties the ledger when the session starts.

Lines: ``{"run_id", "cost"}`` a charge (with ``"release": HOLD`` when it settles a reservation), and
``{"run_id", "hold", "amount", "pid", "host"}`` a reservation.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

LEDGER = ".budget-ledger.jsonl"
POLL = 0.1  # seconds between looks at the ledger while other calls hold the rest of the budget


@dataclass
class Spending:
    """What the ledger says at one moment."""

    spent: float = 0.0
    calls: int = 0  # charges settled
    largest: float = 0.0  # the largest single charge
    holds: dict[str, dict[str, Any]] = field(default_factory=dict)  # reservations not yet settled

    def in_flight(self) -> float:
        return sum(float(hold.get("amount") or 0.0) for hold in self.holds.values() if _alive(hold))

    def read(self, line: str) -> None:
        try:
            entry = json.loads(line)
            if "hold" in entry:
                self.holds[str(entry["hold"])] = entry
                return
            cost = float(entry["cost"])
        except (ValueError, KeyError, TypeError, AttributeError):
            return  # a line cut short by a dying worker counts nothing
        self.spent += cost
        self.calls += 1
        self.largest = max(self.largest, cost)
        self.holds.pop(str(entry.get("release")), None)


class Ledger:
    def __init__(self, out_dir: Path) -> None:
        self.path = out_dir / LEDGER

    def reset(self) -> None:
        """A new session starts with nothing spent."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.truncate(0)

    def add(self, run_id: str, cost: float, *, release: str | None = None) -> None:
        """Charge ``cost``; ``release``: the reservation this charge settles."""
        entry: dict[str, Any] = {"run_id": run_id, "cost": float(cost or 0.0)}
        if release is not None:
            entry["release"] = release
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.write(json.dumps(entry) + "\n")
            handle.flush()

    def spending(self) -> Spending:
        try:
            handle = open(self.path)
        except FileNotFoundError:
            return Spending()
        with handle:
            fcntl.flock(handle, fcntl.LOCK_SH)
            return _parse(handle)

    def spent(self) -> float:
        """Dollars spent so far this session."""
        return self.spending().spent

    def try_reserve(self, run_id: str, limit: float) -> tuple[str | None, float]:
        """(a new reservation's id, or None when the budget is spent or held by calls in flight; spent)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            handle.seek(0)
            now = _parse(handle)
            in_flight = now.in_flight()
            if now.spent + in_flight >= limit:
                return None, now.spent
            amount = now.largest if now.calls else limit - now.spent - in_flight
            hold = uuid.uuid4().hex
            handle.write(json.dumps({"run_id": run_id, "hold": hold, "amount": amount, "pid": os.getpid(),
                                     "host": socket.gethostname()}) + "\n")
            handle.flush()
            return hold, now.spent


class Budget:
    """One run's view of the session's budget: the LLM session asks it before each paid call."""

    def __init__(self, ledger: Ledger, limit: float, run_id: str, *, poll: float = POLL,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.ledger = ledger
        self.limit = limit
        self.run_id = run_id
        self.poll = poll
        self.sleep = sleep

    def reserve(self) -> str | None:
        """A reservation for one call (settle it with :meth:`settle`), or None once the budget is
        spent. Waits while calls of other runs hold the rest of the budget."""
        while True:
            hold, spent = self.ledger.try_reserve(self.run_id, self.limit)
            if hold is not None:
                return hold
            if spent >= self.limit:
                return None
            self.sleep(self.poll)

    def settle(self, hold: str, cost: float) -> None:
        self.ledger.add(self.run_id, cost, release=hold)

    def refusal(self) -> str:
        """Why the call was refused, for the trace and the run's message."""
        return f"{reached(self.ledger.spent(), self.limit)}; no further LLM call is made"


def over_budget(ledger: Ledger, max_cost: float | None) -> str | None:
    """The skip reason once the session's cost has reached the budget; None while within it."""
    if max_cost is None:
        return None
    spent = ledger.spent()
    if spent >= max_cost:
        return f"budget: {reached(spent, max_cost)}; not started"
    return None


def reached(spent: float, limit: float) -> str:
    amount = f"{spent:.2f}" if spent >= 0.1 or spent == 0 else f"{spent:.2g}"
    return f"this session's LLM cost ${amount} reached --mlab-max-cost=${limit:g}"


def _parse(handle: Any) -> Spending:
    spending = Spending()
    for line in handle:
        spending.read(line)
    return spending


def _alive(hold: dict[str, Any]) -> bool:
    """Whether the worker that made a reservation still runs (one on another host is assumed to)."""
    if hold.get("host") != socket.gethostname():
        return True
    try:
        os.kill(int(hold.get("pid") or 0), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True
    return True

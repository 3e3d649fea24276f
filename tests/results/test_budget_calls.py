"""The budget charged call by call: reservations under the ledger's lock keep the session's spend
within one call's cost of --mlab-max-cost, whatever the number of workers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from pytest_mlab.results.budget import Budget, Ledger
from tests.results.support import in_processes

COST = 0.3
LIMIT = 1.0


def test_the_first_call_holds_the_remainder_until_a_cost_is_known(tmp_path):
    ledger = Ledger(tmp_path)
    first, spent = ledger.try_reserve("a", LIMIT)
    assert first is not None and spent == 0
    assert ledger.try_reserve("b", LIMIT) == (None, 0.0)  # held, not spent: the caller waits
    ledger.add("a", COST, release=first)
    # now each call holds the largest cost seen, 0.3: spent 0.3 + 0.6 held < 1 still grants a third
    holds = [ledger.try_reserve(run, LIMIT)[0] for run in ("b", "c", "d")]
    assert all(holds) and ledger.try_reserve("e", LIMIT) == (None, COST)  # 0.3 + 0.9 held >= 1
    for run, hold in zip("bcd", holds):
        ledger.add(run, COST, release=hold)
    assert ledger.spending().holds == {} and abs(ledger.spent() - 4 * COST) < 1e-9  # 1.2: within one call
    assert ledger.try_reserve("e", LIMIT)[0] is None


def test_budget_waits_for_calls_in_flight_then_refuses_once_spent(tmp_path):
    ledger = Ledger(tmp_path)
    other = Budget(ledger, LIMIT, "other")
    held = other.reserve()
    waits: list[float] = []

    def settle_while_waiting(seconds: float) -> None:  # the other run's call ends meanwhile
        waits.append(seconds)
        other.settle(held, 1.5)

    budget = Budget(ledger, LIMIT, "mine", sleep=settle_while_waiting)
    assert budget.reserve() is None and len(waits) == 1
    assert budget.refusal() == "this session's LLM cost $1.50 reached --mlab-max-cost=$1; no further LLM call is made"


def test_reservations_of_a_dead_worker_are_ignored(tmp_path):
    ledger = Ledger(tmp_path)
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)

    with open(ledger.path, "a") as handle:
        handle.write(json.dumps({"run_id": "x", "hold": "gone", "amount": LIMIT, "pid": int(dead.stdout),
                                 "host": socket.gethostname()}) + "\n")
    assert ledger.spending().in_flight() == 0
    assert ledger.try_reserve("a", LIMIT)[0] is not None


def _calls(out_dir: str, index: int) -> None:
    budget = Budget(Ledger(Path(out_dir)), LIMIT, f"run-{index}", poll=0.001)
    while (hold := budget.reserve()) is not None:
        budget.settle(hold, COST)


def test_workers_together_spend_within_one_call_of_the_limit(tmp_path):
    in_processes(_calls, tmp_path, 4)
    spent = Ledger(tmp_path).spent()
    assert LIMIT <= spent < LIMIT + COST

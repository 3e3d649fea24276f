"""The regression gate: did this session's success rate drop, beyond noise, against a reference?

A group (task, agent, llm, data variant) regresses when its success rate fell by more than the
tolerated drop AND a one-sided Fisher's exact test says the fall is unlikely to be chance
(p < ``alpha``). With eight seeds a 5/8 -> 3/8 swing is noise (p ~ 0.3); 8/8 -> 1/8 is not. Each
agent's runs pooled over all tasks are tested the same way, which catches a small drop everywhere.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from pytest_mlab.errors import MlabError
from pytest_mlab.results.aggregate import GROUP_KEYS, group_key
from pytest_mlab.results.record import RunResult

GATE_KIND = "mlab-gate"
GATE_VERSION = 1
ALPHA = 0.05
ALL_TASKS = "(all tasks)"


@dataclass(frozen=True)
class Comparison:
    task: str
    agent: str
    llm: str | None
    variant: str
    reference: tuple[int, int]  # successes, runs
    current: tuple[int, int]
    drop: float | None  # reference rate minus current rate; None when either side has no runs
    p_value: float | None
    regressed: bool

    @property
    def label(self) -> str:
        agent = f"{self.agent} ({self.llm})" if self.llm else self.agent
        return f"{self.task} / {agent} / {self.variant}"


def counts(runs: list[RunResult]) -> dict[tuple, tuple[int, int]]:
    """(successes, runs) per (task, agent, llm, variant)."""
    table: dict[tuple, list[int]] = {}
    for run in runs:
        entry = table.setdefault(group_key(run), [0, 0])
        entry[0] += int(bool(run.success))
        entry[1] += 1
    return {key: (value[0], value[1]) for key, value in table.items()}


def _pooled(table: dict[tuple, tuple[int, int]], keys: set[tuple]) -> dict[tuple, tuple[int, int]]:
    """Per (agent, llm, variant) over the given groups' tasks: task ``(all tasks)``."""
    pooled: dict[tuple, tuple[int, int]] = {}
    for key in keys:
        agent_key = (ALL_TASKS, *key[1:])
        successes, total = pooled.get(agent_key, (0, 0))
        pooled[agent_key] = (successes + table[key][0], total + table[key][1])
    return pooled


def save_gate(path: Path, runs: list[RunResult]) -> Path:
    """The reference a later session compares with: counts only, small enough to commit."""
    groups = [{**dict(zip(GROUP_KEYS, key)), "successes": s, "runs": n} for key, (s, n) in sorted(
        counts(runs).items(), key=lambda item: tuple(str(part) for part in item[0]))]
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps({"kind": GATE_KIND, "version": GATE_VERSION, "groups": groups}, indent=2) + "\n")
    os.replace(tmp, path)
    return path


def load_reference(path: Path, source: str = "--mlab-compare") -> dict[tuple, tuple[int, int]]:
    """Counts from a gate file or a saved results.json (or the folder that holds one)."""
    if path.is_dir():
        path = path / "results.json"
    try:
        payload = json.loads(path.read_text())
    except FileNotFoundError:
        raise MlabError(f"{source}={path}: no such file; write one with --mlab-save-gate={path} "
                        f"or point at a saved results.json") from None
    except (OSError, ValueError) as exc:
        raise MlabError(f"{source}={path}: not readable JSON ({exc})") from None
    if isinstance(payload, dict) and payload.get("kind") == GATE_KIND and isinstance(payload.get("groups"), list):
        table = {}
        for group in payload["groups"]:
            try:
                key = tuple(group[name] for name in GROUP_KEYS)
                table[key] = (int(group["successes"]), int(group["runs"]))
            except (KeyError, TypeError, ValueError):
                raise MlabError(f"{source}={path}: a gate group needs {', '.join(GROUP_KEYS)}, successes and runs; "
                                f"found {group!r}") from None
        return table
    if isinstance(payload, dict) and isinstance(payload.get("runs"), list):
        return counts([RunResult.from_dict(run) for run in payload["runs"]])
    raise MlabError(f"{source}={path}: neither a gate file (--mlab-save-gate) nor a results.json")


def fisher_p_value(reference: tuple[int, int], current: tuple[int, int]) -> float:
    """One-sided Fisher's exact test: the chance of a success rate this low if nothing changed."""
    from scipy.stats import fisher_exact

    ref_s, ref_n = reference
    cur_s, cur_n = current
    table = [[ref_s, ref_n - ref_s], [cur_s, cur_n - cur_s]]
    return float(fisher_exact(table, alternative="greater").pvalue)


def compare(reference: dict[tuple, tuple[int, int]], runs: list[RunResult], max_drop: float,
            alpha: float = ALPHA) -> list[Comparison]:
    """Every group present in both sessions, pooled rows included; regressed ones flagged."""
    current = counts(runs)
    common = reference.keys() & current.keys()
    reference = {**reference, **_pooled(reference, common)}  # pooled over the tasks both sessions ran
    current = {**current, **_pooled(current, common)}
    rows = []
    for key in sorted(reference.keys() & current.keys(), key=lambda k: tuple(str(part) for part in k)):
        ref, cur = reference[key], current[key]
        if ref[1] == 0 or cur[1] == 0:
            rows.append(Comparison(*key, reference=ref, current=cur, drop=None, p_value=None, regressed=False))
            continue
        drop = ref[0] / ref[1] - cur[0] / cur[1]
        p_value = fisher_p_value(ref, cur)
        rows.append(Comparison(*key, reference=ref, current=cur, drop=drop, p_value=p_value,
                               regressed=drop > max_drop + 1e-12 and p_value < alpha))
    return rows


def missing_groups(reference: dict[tuple, tuple[int, int]], runs: list[RunResult]) -> list[tuple]:
    """Reference groups this session did not run (a -k selection, a skipped task)."""
    current = counts(runs)
    return sorted((key for key in reference if key not in current),
                  key=lambda k: tuple(str(part) for part in k))


def render_gate(rows: list[Comparison], max_drop: float, missing: list[tuple] = ()) -> str:
    """The table a failed gate prints: what dropped, by how much, and the p-value."""
    lines = [f"{'group':<48} {'reference':>10} {'now':>10} {'change':>7} {'p-value':>8}  verdict"]
    for row in rows:
        ref = f"{row.reference[0]}/{row.reference[1]}"
        now = f"{row.current[0]}/{row.current[1]}"
        drop = "-" if row.drop is None else f"{-row.drop + 0.0:+.0%}"
        p_value = "-" if row.p_value is None else f"{row.p_value:.3g}"
        verdict = "REGRESSED" if row.regressed else ("no runs" if row.drop is None else "ok")
        lines.append(f"{row.label:<48} {ref:>10} {now:>10} {drop:>7} {p_value:>8}  {verdict}")
    regressed = sum(row.regressed for row in rows)
    lines.append(f"gate: {regressed} regression(s): success rate fell by more than {max_drop:.0%} "
                 f"with p < {ALPHA} (one-sided Fisher's exact test)" if regressed else
                 f"gate: passed ({len(rows)} comparison(s), tolerated drop {max_drop:.0%}, p < {ALPHA} to fail)")
    for key in missing:
        lines.append(f"gate: not run this session: {' / '.join(str(part) for part in key if part is not None)}")
    return "\n".join(lines)

"""The paper's figures as PNGs: success rate and average improvement per task and agent (grouped
bars, the baseline agent in grey; it has no success rate to draw), failure categories and cost
per agent, and efficiency (tokens per run against success rate).

A figure with nothing to show (no agent but the baseline, no valid submission, no failure, no
LLM call, nothing paid) is not drawn, and an earlier session's file of that name is removed, so
neither the folder nor the report shows an empty or stale plot. When one task's improvement
dwarfs the rest (beyond :data:`SYMLOG_ABOVE`), the improvement axis turns symmetric-logarithmic,
linear within :data:`SYMLOG_LINEAR`, so the other tasks' bars stay readable.

matplotlib is imported here only, with the Agg backend, when a session writes its report.
"""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any, Callable

from pytest_mlab.results.aggregate import BASELINE_EXPECT, agent_label

BASELINE_AGENT = "baseline"
PLOTS = ("success_rate.png", "improvement.png", "failures.png", "cost.png", "efficiency.png")
SYMLOG_ABOVE = 1.0  # an improvement beyond +-100% turns the improvement axis symmetric-logarithmic
SYMLOG_LINEAR = 0.1  # ... linear within +-10%
HARNESS_SUFFIX = " (harness)"  # a failure category of rows with ``infrastructure: true``, hatched

Value = Callable[[str, str], "float | None"]


def write_plots(out_dir: Path, summary: dict[str, Any]) -> list[Path]:
    """Every figure with something to show into ``out_dir/plots``; nothing when there are no groups."""
    if not summary["groups"]:
        return []
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder = out_dir / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    with plt.rc_context({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False}):
        for name, draw in zip(PLOTS, (_success, _improvement, _failures, _cost, _efficiency)):
            path = folder / name
            figure = draw(plt, summary)
            if figure is None:
                path.unlink(missing_ok=True)
                continue
            figure.savefig(path, dpi=110, bbox_inches="tight")
            plt.close(figure)
            paths.append(path)
    return paths


def _layout(summary: dict[str, Any]) -> tuple[list[str], list[str], dict[tuple[str, str], dict[str, Any]]]:
    tasks = sorted({row["task"] for row in summary["groups"]})
    cells = {(row["task"], agent_label(row)): row for row in summary["groups"]}
    return tasks, _ordered({label for _, label in cells}), cells


def _ordered(labels: set[str]) -> list[str]:
    return sorted(labels, key=lambda label: (label != BASELINE_AGENT, label))


def _colors(plt, labels: list[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab10")
    others = [label for label in labels if label != BASELINE_AGENT]
    colors = {label: palette(index % 10) for index, label in enumerate(others)}
    colors[BASELINE_AGENT] = (0.6, 0.6, 0.6, 1.0)
    return colors


def _cell(summary: dict[str, Any], field: str) -> Value:
    """``field`` of the (task, agent) group, for the per-task figures."""
    cells = _layout(summary)[2]
    return lambda task, label: (cells.get((task, label)) or {}).get(field)


def _grouped(plt, categories: list[str], labels: list[str], value: Value, ylabel: str, title: str,
             error: Callable[[str, str], tuple[float, float] | None] | None = None,
             hatched: frozenset[str] = frozenset(), note: Callable[[str, str], str] | None = None):
    """Grouped bars: one group per category (a task, a failure), one bar per agent; the width
    grows with the number of categories. ``error``: the bar's interval, drawn as an error bar
    (None: none for that bar); ``note``: a text above each bar (above its interval), so that a
    bar of height 0 is still seen; ``hatched``: categories drawn hatched."""
    colors = _colors(plt, labels)
    width = 0.8 / len(labels)
    figure, axes = plt.subplots(figsize=(max(6.0, 1.2 + len(categories) * (0.5 + 0.35 * len(labels))), 4.8))
    for index, label in enumerate(labels):
        xs, ys, hatches = [], [], []
        with_interval: tuple[list[float], list[float], list[float], list[float]] = ([], [], [], [])
        for position, category in enumerate(categories):
            y = value(category, label)
            if y is None:
                continue
            x = position - 0.4 + width * (index + 0.5)
            xs.append(x)
            ys.append(y)
            hatches.append("//" if category in hatched else None)
            interval = error(category, label) if error is not None else None
            if interval is not None:
                low, high = interval
                for column, number in zip(with_interval, (x, y, max(0.0, y - low), max(0.0, high - y))):
                    column.append(number)
            if note is not None:
                top = max(y, interval[1]) if interval is not None else y
                axes.annotate(note(category, label), (x, top), xytext=(0, 2), textcoords="offset points",
                              ha="center", va="bottom", fontsize=8)
        bars = axes.bar(xs, ys, width * 0.92, label=label, color=colors[label])
        for bar, hatch in zip(bars, hatches):
            bar.set_hatch(hatch)
        if with_interval[0]:
            ex, ey, below, above = with_interval
            axes.errorbar(ex, ey, yerr=[below, above], fmt="none", ecolor="black", elinewidth=1, capsize=3)
    rotate = len(categories) > 4
    axes.set_xticks(range(len(categories)))
    axes.set_xticklabels([textwrap.fill(category, 14) for category in categories], rotation=30 if rotate else 0,
                         ha="right" if rotate else "center")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3 if rotate else -0.18), ncol=min(4, len(labels)),
                frameon=False)
    return figure


def _success(plt, summary: dict[str, Any]):
    """Each agent's success rate per task, its successes/runs written above the bar (a rate of 0 is
    a bar of no height), and its 95% Wilson interval where there are two runs or more: a single
    run's interval spans 79 points whatever it did, and would be all the figure shows. The
    baseline agent is left out: it runs the unchanged starter and cannot succeed by definition.
    None when no other agent ran."""
    groups = [row for row in summary["groups"] if row.get("expect") != BASELINE_EXPECT]
    if not groups:
        return None
    tasks, labels, cells = _layout({**summary, "groups": groups})
    single = any(row["runs"] == 1 for row in groups)

    def interval(task: str, label: str) -> tuple[float, float] | None:
        row = cells[task, label]
        return (row["ci_low"], row["ci_high"]) if row["runs"] > 1 else None

    title = "Success rate per task (successes/runs above each bar; 95% Wilson interval"
    title += ",\nnot drawn for a single run: it spans 79 points)" if single else ")"
    figure = _grouped(plt, tasks, labels, lambda task, label: (cells.get((task, label)) or {}).get("success_rate"),
                      "success rate", title, error=interval,
                      note=lambda task, label: f"{cells[task, label]['successes']}/{cells[task, label]['runs']}")
    figure.axes[0].set_ylim(0, 1.12)
    figure.axes[0].yaxis.set_major_formatter(_percent_formatter())
    return figure


def _improvement(plt, summary: dict[str, Any]):
    """None without any valid submission; symmetric-log when one bar would flatten the others."""
    values = [row["mean_improvement"] for row in summary["groups"] if row["mean_improvement"] is not None]
    if not values:
        return None
    tasks, labels, _ = _layout(summary)
    steep = max(abs(value) for value in values) > SYMLOG_ABOVE
    scale = f"; symmetric log scale, linear within ±{SYMLOG_LINEAR:.0%}" if steep else ""
    figure = _grouped(plt, tasks, labels, _cell(summary, "mean_improvement"), "average improvement over baseline",
                      f"Average improvement per task (valid submissions{scale})")
    axes = figure.axes[0]
    if steep:
        axes.set_yscale("symlog", linthresh=SYMLOG_LINEAR)
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.yaxis.set_major_formatter(_percent_formatter())
    return figure


def _failures(plt, summary: dict[str, Any]):
    """The paper's failure figure: per failure category, the share of each agent's runs; None
    when no run failed. Rows with ``infrastructure: true`` (the harness failed, or Ctrl-C) are
    categories of their own, hatched, so a crash of the harness is never drawn as the agent's."""
    runs: Counter[str] = Counter()
    failures: dict[str, Counter[str]] = {}
    for row in summary["groups"]:
        label = agent_label(row)
        runs[label] += row["runs"]
        harness = row.get("harness_failures", {})  # absent from summaries written before it existed
        counts = failures.setdefault(label, Counter())
        counts.update({category: count - harness.get(category, 0) for category, count in row["failures"].items()})
        counts.update({category + HARNESS_SUFFIX: count for category, count in harness.items()})
    totals = sum(failures.values(), Counter())  # drops categories left at 0
    if not totals:
        return None
    categories = [category for category, _ in sorted(totals.items(), key=lambda item: (-item[1], item[0]))]
    figure = _grouped(plt, categories, _ordered(set(runs)),
                      lambda category, label: failures[label][category] / runs[label],
                      "share of the agent's runs", "Failure categories (hatched: the harness failed, not the agent)",
                      hatched=frozenset(category for category in categories if category.endswith(HARNESS_SUFFIX)))
    figure.axes[0].yaxis.set_major_formatter(_percent_formatter())
    return figure


def _cost(plt, summary: dict[str, Any]):
    """Mean LLM cost per run, per task and agent; None when nothing was paid for."""
    if not any(row["total_cost"] for row in summary["groups"]):
        return None
    tasks, labels, _ = _layout(summary)
    figure = _grouped(plt, tasks, labels, _cell(summary, "mean_cost"), "mean cost per run (USD)",
                      "LLM cost per run")
    figure.axes[0].yaxis.set_major_formatter("${x:,.2f}")
    return figure


def _efficiency(plt, summary: dict[str, Any]):
    """One point per agent: mean tokens per run against the average success rate over tasks;
    None when no agent called an LLM. The baseline agent is left out, as in the success figure: it
    has no success rate, and a point at 0% would read as a failing agent."""
    agents = [row for row in summary["agents"] if row.get("expect") != BASELINE_EXPECT]
    if not any(row["mean_tokens"] for row in agents):
        return None
    labels = [agent_label(row) for row in agents]
    colors = _colors(plt, labels)
    figure, axes = plt.subplots(figsize=(6.4, 4.8))
    for row, label in zip(agents, labels):
        axes.scatter([row["mean_tokens"] or 0.0], [row["average_success_rate"] or 0.0], s=80,
                     color=colors[label], label=label, edgecolors="black", linewidths=0.5)
    axes.set_xlabel("mean tokens per run")
    axes.set_xlim(left=0)
    axes.set_ylabel("average success rate over tasks")
    axes.set_ylim(-0.05, 1.05)
    axes.yaxis.set_major_formatter(_percent_formatter())
    axes.set_title("Efficiency: tokens spent vs success")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=min(3, len(labels)), frameon=False)
    return figure


def _percent_formatter():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)

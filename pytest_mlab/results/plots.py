"""The paper's figures as PNGs: success rate and average improvement per task and agent (grouped
bars, the baseline agent in grey), and efficiency (tokens per run against success rate).

matplotlib is imported here only, with the Agg backend, when a session writes its report.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

from pytest_mlab.results.aggregate import agent_label

BASELINE_AGENT = "baseline"
PLOTS = ("success_rate.png", "improvement.png", "efficiency.png")


def write_plots(out_dir: Path, summary: dict[str, Any]) -> list[Path]:
    """Every figure into ``out_dir/plots``; nothing when there are no groups."""
    if not summary["groups"]:
        return []
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    folder = out_dir / "plots"
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    with plt.rc_context({"font.size": 10, "axes.spines.top": False, "axes.spines.right": False}):
        for name, draw in zip(PLOTS, (_success, _improvement, _efficiency)):
            figure = draw(plt, summary)
            path = folder / name
            figure.savefig(path, dpi=110, bbox_inches="tight")
            plt.close(figure)
            paths.append(path)
    return paths


def _layout(summary: dict[str, Any]) -> tuple[list[str], list[str], dict[tuple[str, str], dict[str, Any]]]:
    tasks = sorted({row["task"] for row in summary["groups"]})
    labels = sorted({agent_label(row) for row in summary["groups"]}, key=lambda label: (label != BASELINE_AGENT, label))
    cells = {(row["task"], agent_label(row)): row for row in summary["groups"]}
    return tasks, labels, cells


def _colors(plt, labels: list[str]) -> dict[str, Any]:
    palette = plt.get_cmap("tab10")
    others = [label for label in labels if label != BASELINE_AGENT]
    colors = {label: palette(index % 10) for index, label in enumerate(others)}
    colors[BASELINE_AGENT] = (0.6, 0.6, 0.6, 1.0)
    return colors


def _bars(plt, summary: dict[str, Any], value, ylabel: str, title: str, error=None):
    """Grouped bars: one group per task, one bar per agent; width grows with the number of tasks."""
    tasks, labels, cells = _layout(summary)
    colors = _colors(plt, labels)
    width = 0.8 / len(labels)
    figure, axes = plt.subplots(figsize=(max(6.0, 1.2 + len(tasks) * (0.5 + 0.35 * len(labels))), 4.8))
    for index, label in enumerate(labels):
        xs, ys, errs = [], [], [[], []]
        for position, task in enumerate(tasks):
            row = cells.get((task, label))
            if row is None or value(row) is None:
                continue
            xs.append(position - 0.4 + width * (index + 0.5))
            ys.append(value(row))
            if error is not None:
                low, high = error(row)
                errs[0].append(max(0.0, value(row) - low))
                errs[1].append(max(0.0, high - value(row)))
        axes.bar(xs, ys, width * 0.92, label=label, color=colors[label],
                 yerr=errs if error is not None and xs else None, capsize=3 if error is not None else 0)
    axes.set_xticks(range(len(tasks)))
    axes.set_xticklabels([textwrap.fill(task, 14) for task in tasks], rotation=30 if len(tasks) > 4 else 0,
                         ha="right" if len(tasks) > 4 else "center")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18 if len(tasks) <= 4 else -0.3),
                ncol=min(4, len(labels)), frameon=False)
    return figure


def _success(plt, summary: dict[str, Any]):
    figure = _bars(plt, summary, lambda row: row["success_rate"], "success rate",
                   "Success rate per task (95% Wilson interval)", error=lambda row: (row["ci_low"], row["ci_high"]))
    figure.axes[0].set_ylim(0, 1.05)
    figure.axes[0].yaxis.set_major_formatter(_percent_formatter())
    return figure


def _improvement(plt, summary: dict[str, Any]):
    figure = _bars(plt, summary, lambda row: row["mean_improvement"], "average improvement over baseline",
                   "Average improvement per task (valid submissions)")
    figure.axes[0].axhline(0.0, color="black", linewidth=0.8)
    figure.axes[0].yaxis.set_major_formatter(_percent_formatter())
    return figure


def _efficiency(plt, summary: dict[str, Any]):
    """One point per agent: mean tokens per run against the average success rate over tasks."""
    agents = summary["agents"]
    labels = [agent_label(row) for row in agents]
    colors = _colors(plt, labels)
    figure, axes = plt.subplots(figsize=(6.4, 4.8))
    for row, label in zip(agents, labels):
        axes.scatter([row["mean_tokens"] or 0.0], [row["average_success_rate"] or 0.0], s=80,
                     color=colors[label], label=label, edgecolors="black", linewidths=0.5)
    axes.set_xlabel("mean tokens per run")
    axes.set_ylabel("average success rate over tasks")
    axes.set_ylim(-0.05, 1.05)
    axes.yaxis.set_major_formatter(_percent_formatter())
    axes.set_title("Efficiency: tokens spent vs success")
    axes.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15), ncol=min(3, len(labels)), frameon=False)
    return figure


def _percent_formatter():
    from matplotlib.ticker import PercentFormatter

    return PercentFormatter(1.0, decimals=0)

"""The PNG figures exist, decode and are not blank, and the success figure draws what it should."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.image  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402

from pytest_mlab.results import plots  # noqa: E402
from pytest_mlab.results.aggregate import aggregate, wilson_interval  # noqa: E402
from pytest_mlab.results.plots import PLOTS, write_plots  # noqa: E402
from tests.results.builders import run  # noqa: E402

FAILURES = ("below threshold", "step limit", "provider error")


def benchmark(tasks: int, llm_runs: bool = True) -> list:
    runs = []
    agents = (("baseline", None), ("research", "gpt-4"), ("research", "claude-3-opus")) if llm_runs else (
        ("baseline", None), ("reference", None))
    for index in range(tasks):
        task = f"task-with-a-long-name-{index}"
        for agent, llm in agents:
            for seed in range(2):
                success = (seed + index) % 2 == 0
                runs.append(run(task, agent, seed, llm=llm, success=success, passed=success,
                                failure=None if success else FAILURES[index % 3],
                                infrastructure=not success and FAILURES[index % 3] == "provider error",
                                improvement=0.05 * index - 0.1, tokens=0 if llm is None else 20000 + 1000 * seed,
                                cost=0.0 if llm is None else 0.02 * (index + 1)))
    return runs


def test_every_figure_is_a_real_non_uniform_image(tmp_path):
    paths = write_plots(tmp_path, aggregate(benchmark(3)))
    assert [path.name for path in paths] == list(PLOTS)
    for path in paths:
        pixels = matplotlib.image.imread(path)
        height, width = pixels.shape[:2]
        assert height > 300 and width > 400, path
        assert pixels[..., :3].std() > 0.05, f"{path} looks blank"


def test_figures_widen_with_the_number_of_tasks(tmp_path):
    few = matplotlib.image.imread(write_plots(tmp_path / "few", aggregate(benchmark(2)))[0])
    many = matplotlib.image.imread(write_plots(tmp_path / "many", aggregate(benchmark(14)))[0])
    assert many.shape[1] > few.shape[1] * 1.5


def test_no_runs_no_figures(tmp_path):
    assert write_plots(tmp_path, aggregate([])) == []
    assert not (tmp_path / "plots").exists()


def test_one_dominant_task_turns_the_improvement_axis_symmetric_log():
    runs = benchmark(3) + [run("outlier", "research", llm="gpt-4", improvement=7.4)]
    steep = plots._improvement(plt, aggregate(runs))
    gentle = plots._improvement(plt, aggregate(benchmark(3)))
    try:
        assert steep.axes[0].get_yscale() == "symlog" and "symmetric log" in steep.axes[0].get_title()
        assert gentle.axes[0].get_yscale() == "linear" and "log" not in gentle.axes[0].get_title()
    finally:
        plt.close("all")


def test_figures_with_nothing_to_show_are_left_out_and_their_old_files_removed(tmp_path):
    assert [path.name for path in write_plots(tmp_path, aggregate(benchmark(2)))] == list(PLOTS)
    quiet = [run("digits", agent) for agent in ("baseline", "reference")]  # no LLM, nothing paid, nothing failed
    assert [path.name for path in write_plots(tmp_path, aggregate(quiet))] == ["success_rate.png", "improvement.png"]
    assert sorted(path.name for path in (tmp_path / "plots").iterdir()) == ["improvement.png", "success_rate.png"]
    unscored = [run("digits", valid=False, score=None, improvement=None, success=False, passed=False,
                    failure="invalid submission")]
    assert [path.name for path in write_plots(tmp_path, aggregate(unscored))] == ["success_rate.png", "failures.png"]


def test_the_failure_figure_shows_shares_of_each_agents_runs_and_hatches_the_harness(tmp_path):
    crashes = [run("crashy", "reference", seed, success=False, passed=False, end_reason=ended, failure=ended,
                   infrastructure=harness)
               for seed, (ended, harness) in enumerate([("crashed", False), ("crashed", True), ("interrupted", False)])]
    figure = plots._failures(plt, aggregate(benchmark(3, llm_runs=False) + crashes))
    try:
        axes = figure.axes[0]
        labels = [label.get_text().replace("\n", " ") for label in axes.get_xticklabels()]
        harness = ["provider error (harness)", "crashed (harness)", "interrupted (harness)"]
        assert sorted(labels) == sorted(["below threshold", "step limit", "crashed", *harness])
        heights = [bar.get_height() for bar in axes.patches]
        assert max(heights) <= 1.0 and sum(heights) > 0
        hatched = {round(bar.get_x() + bar.get_width() / 2) for bar in axes.patches if bar.get_hatch()}
        assert hatched == {labels.index(label) for label in harness}  # an interrupted run is the harness's too
    finally:
        plt.close(figure)


def drawn(figure) -> dict:
    """What the success figure draws: bar heights per agent, annotations, error-bar containers, title."""
    from matplotlib.container import BarContainer, ErrorbarContainer

    axes = figure.axes[0]
    return {"bars": {bars.get_label(): [round(bar.get_height(), 3) for bar in bars]
                     for bars in axes.containers if isinstance(bars, BarContainer)},
            "notes": sorted(text.get_text() for text in axes.texts),
            "intervals": sum(isinstance(container, ErrorbarContainer) for container in axes.containers),
            "title": axes.get_title()}


def test_single_runs_are_drawn_as_rates_with_their_counts_not_as_error_bars():
    runs = [run("a", "research", llm="gpt-4"), run("b", "research", llm="gpt-4", success=False, passed=False),
            run("a", "baseline", expect="baseline", success=False)]  # the baseline cannot succeed: not drawn
    figure = plots._success(plt, aggregate(runs))
    try:
        seen = drawn(figure)
        assert seen["bars"] == {"research (gpt-4)": [1.0, 0.0]}
        assert seen["notes"] == ["0/1", "1/1"]  # a rate of 0 is still seen
        assert seen["intervals"] == 0 and "single run" in seen["title"] and "79 points" in seen["title"]
    finally:
        plt.close(figure)


def test_several_runs_get_their_interval_and_their_count():
    runs = [run("a", "research", 0, llm="gpt-4"), run("a", "research", 1, llm="gpt-4", success=False),
            run("b", "research", 0, llm="gpt-4")]  # one task with two runs, one with one
    figure = plots._success(plt, aggregate(runs))
    try:
        seen = drawn(figure)
        assert seen["bars"] == {"research (gpt-4)": [0.5, 1.0]} and seen["notes"] == ["1/1", "1/2"]
        (interval,) = [c for c in figure.axes[0].containers if type(c).__name__ == "ErrorbarContainer"]
        (line,) = interval.lines[2]  # the vertical segment: one bar's interval, the two-run one
        assert len(line.get_segments()) == 1
        (segment,) = line.get_segments()
        assert [round(y, 3) for _, y in segment] == [round(v, 3) for v in wilson_interval(1, 2)]
    finally:
        plt.close(figure)


def test_a_session_of_baseline_runs_has_no_success_figure(tmp_path):
    runs = [run(task, "baseline", expect="baseline", success=False) for task in ("a", "b")]
    assert "success_rate.png" not in [path.name for path in write_plots(tmp_path, aggregate(runs))]


def test_the_efficiency_figure_leaves_the_baseline_agent_out():
    runs = [run("a", "research", llm="gpt-4", tokens=20000), run("a", "baseline", expect="baseline", success=False)]
    figure = plots._efficiency(plt, aggregate(runs))
    try:
        labels = [text.get_text() for text in figure.axes[0].get_legend().get_texts()]
        assert labels == ["research (gpt-4)"]
        (points,) = figure.axes[0].collections
        assert [list(xy) for xy in points.get_offsets()] == [[20000.0, 1.0]]
    finally:
        plt.close(figure)

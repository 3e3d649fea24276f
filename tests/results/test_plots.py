"""The PNG figures exist, decode, and are not blank."""

from __future__ import annotations

import matplotlib.image

from pytest_mlab.results.aggregate import aggregate
from pytest_mlab.results.plots import PLOTS, write_plots
from tests.results.builders import run


def benchmark(tasks: int) -> list:
    runs = []
    for index in range(tasks):
        task = f"task-with-a-long-name-{index}"
        for agent, llm in (("baseline", None), ("research", "gpt-4"), ("research", "claude-3-opus")):
            for seed in range(2):
                runs.append(run(task, agent, seed, llm=llm, success=(seed + index) % 2 == 0,
                                improvement=0.05 * index - 0.1, tokens=0 if llm is None else 20000 + 1000 * seed))
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

"""Run plans: one per pytest item, with stable ids, seeds, limit overrides and skip reasons."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from pytest_mlab.data.requirements import unmet_requirement
from pytest_mlab.spec import models
from pytest_mlab.spec.plan import RunPlan, Settings, compile_plans
from pytest_mlab.spec.project import Project
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT

NO_CACHE = Path("/nonexistent-mlab-cache")  # never consulted unless a variant needs the network


@pytest.fixture(scope="module")
def project() -> Project:
    return Project(TOY_PROJECT, ACTIONS_DIR, AGENTS_DIR, TOY_PROJECT / "specs" / "tasks")


@pytest.fixture(scope="module")
def toy(project: Project) -> models.TaskSpec:
    return project.task_from_file(TOY_PROJECT / "specs" / "tasks" / "toy.yaml")


def settings(tmp_path: Path, **changes) -> Settings:
    values = dict(agents=(), agents_source="--agent", llm=None, seeds=1, variant="mini", sandbox="local", out_dir=tmp_path / "out",
                  cache_dir=tmp_path / "cache")
    values.update(changes)
    return Settings(**values)


def agents(project: Project, *names: str):
    return [(project.agent(name), project.agent_actions(project.agent(name))) for name in names]


def llm_agent(llm: dict[str, str] | None = None) -> models.AgentSpec:
    return models.AgentSpec(name="research", implementation="my_agents.research:ResearchAgent",
                            actions=("Execute Script", "Final Answer"), source="agents/research.yaml",
                            llm={"main": "openai/o3"} if llm is None else llm)


def test_one_plan_per_agent_and_seed_in_a_stable_order(project, toy, tmp_path: Path) -> None:
    plans = compile_plans(toy, agents(project, "baseline", "reference"), settings(tmp_path))
    assert [plan.run_id for plan in plans] == ["toy[mini-baseline-s0]", "toy[mini-reference-s0]"]
    assert [plan.param_id for plan in plans] == ["mini-baseline-s0", "mini-reference-s0"]
    again = compile_plans(toy, agents(project, "baseline", "reference"), settings(tmp_path))
    assert again == plans, "every xdist worker must build the same plans from the same inputs"


def test_seeds_number_the_runs_from_zero(project, toy, tmp_path: Path) -> None:
    plans = compile_plans(toy, agents(project, "baseline", "reference"), settings(tmp_path, seeds=3))
    assert [plan.run_id for plan in plans] == [
        "toy[mini-baseline-s0]", "toy[mini-baseline-s1]", "toy[mini-baseline-s2]",
        "toy[mini-reference-s0]", "toy[mini-reference-s1]", "toy[mini-reference-s2]",
    ]
    assert [plan.seed for plan in plans] == [0, 1, 2, 0, 1, 2]


def test_a_plan_carries_what_the_run_needs(project, toy, tmp_path: Path) -> None:
    (plan,) = compile_plans(toy, agents(project, "baseline"), settings(tmp_path))
    assert plan.task is toy
    assert plan.agent.name == "baseline"
    assert [action.name for action in plan.actions] == ["Execute Script", "Final Answer"]
    assert (plan.variant, plan.sandbox, plan.llm) == ("mini", "local", None)
    assert plan.cache_dir == tmp_path / "cache"
    assert plan.run_dir == tmp_path / "out" / "runs" / "toy-mini-baseline-s0"
    assert plan.baseline == 90.0
    assert plan.limits == toy.limits == models.Limits(max_steps=10, max_time=300.0, execute_timeout=20.0)


def test_the_data_variant_is_part_of_the_id(project, toy, tmp_path: Path) -> None:
    (plan,) = compile_plans(toy, agents(project, "baseline"), settings(tmp_path, variant="full"))
    assert plan.run_id == "toy[full-baseline-s0]"
    assert plan.baseline is None, "the toy task records no baseline for 'full'"


def test_an_llm_agent_gets_its_model_in_the_id(project, toy, tmp_path: Path) -> None:
    agent = llm_agent()
    assert agent.uses_llm
    (plan,) = compile_plans(toy, [(agent, ())], settings(tmp_path))
    assert plan.llm == "openai/o3"
    assert plan.run_id == "toy[mini-research-openai_o3-s0]"
    assert plan.run_dir.name == "toy-mini-research-openai_o3-s0"


def test_llm_option_overrides_the_agents_model(project, toy, tmp_path: Path) -> None:
    plans = compile_plans(toy, [(llm_agent(), ())] + agents(project, "baseline"),
                          settings(tmp_path, llm="scripted:demo.yaml", seeds=2))
    assert [plan.run_id for plan in plans] == [
        "toy[mini-research-scripted_demo.yaml-s0]", "toy[mini-research-scripted_demo.yaml-s1]",
        "toy[mini-baseline-s0]", "toy[mini-baseline-s1]",
    ]
    assert [plan.llm for plan in plans] == ["scripted:demo.yaml", "scripted:demo.yaml", None, None], \
        "an agent without an LLM ignores --llm"


def test_ids_contain_no_characters_that_break_node_ids(project, toy, tmp_path: Path) -> None:
    agent = llm_agent({"main": "azure/my deployment[v2]::x"})
    (plan,) = compile_plans(toy, [(agent, ())], settings(tmp_path))
    for bad in "[]/: ":
        assert bad not in plan.param_id, plan.param_id
    assert plan.run_id.startswith("toy[mini-research-azure_my_deployment_v2_x")


def test_max_steps_and_max_time_override_the_task_limits(project, toy, tmp_path: Path) -> None:
    plans = compile_plans(toy, agents(project, "baseline", "reference"),
                          settings(tmp_path, max_steps=3, max_time=42.0))
    for plan in plans:
        assert plan.limits == models.Limits(max_steps=3, max_time=42.0, execute_timeout=20.0)
    assert toy.limits.max_steps == 10 and toy.limits.max_time == 300.0, "the task itself is unchanged"


def test_only_the_given_override_changes(project, toy, tmp_path: Path) -> None:
    (plan,) = compile_plans(toy, agents(project, "baseline"), settings(tmp_path, max_steps=7))
    assert (plan.limits.max_steps, plan.limits.max_time) == (7, 300.0)
    (plan,) = compile_plans(toy, agents(project, "baseline"), settings(tmp_path, max_time=60.0))
    assert (plan.limits.max_steps, plan.limits.max_time) == (10, 60.0)


def test_no_agents_no_plans(toy, tmp_path: Path) -> None:
    assert compile_plans(toy, [], settings(tmp_path)) == []


def test_plans_are_frozen(project, toy, tmp_path: Path) -> None:
    (plan,) = compile_plans(toy, agents(project, "baseline"), settings(tmp_path))
    assert isinstance(plan, RunPlan)
    with pytest.raises(dataclasses.FrozenInstanceError):
        plan.seed = 5  # type: ignore[misc]


# ------------------------------------------------------------------ requirements -> skip reasons


def with_requires(task: models.TaskSpec, task_level: dict | None = None, variant_level: dict | None = None):
    variant = dataclasses.replace(task.data["mini"], requires=models.Requirements.from_dict(variant_level))
    return dataclasses.replace(task, requires=models.Requirements.from_dict(task_level), data={"mini": variant})


def test_a_task_with_everything_it_needs_runs(toy) -> None:
    assert unmet_requirement(toy, "mini", NO_CACHE) is None
    assert unmet_requirement(with_requires(toy, {"packages": ["json", "yaml"]}), "mini", NO_CACHE) is None


def test_a_missing_data_variant_names_the_option_that_fixes_it(toy) -> None:
    reason = unmet_requirement(toy, "full", NO_CACHE)
    assert reason == "task 'toy' has no 'full' data variant (it has: mini); run with --mlab-data=mini"


def test_a_missing_package_names_the_package_and_how_to_install(toy) -> None:
    reason = unmet_requirement(with_requires(toy, {"packages": ["json", "no_such_module_xyz"]}), "mini", NO_CACHE)
    assert reason is not None
    assert "no_such_module_xyz" in reason and "json" not in reason.split("pip")[0]
    assert "pip install" in reason


def test_a_missing_clrs_names_its_own_install_command(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    """dm-clrs cannot sit in the tasks extra (its declared dependencies pull the full tensorflow):
    the message gives the separate command."""
    import sys

    from pytest_mlab.data import requirements

    monkeypatch.setitem(sys.modules, "clrs", None)
    requirements._importable.cache_clear()
    try:
        reason = unmet_requirement(with_requires(toy, {"packages": ["clrs"]}), "mini", NO_CACHE)
    finally:
        requirements._importable.cache_clear()
    assert reason is not None and reason.startswith("needs the Python packages clrs:")
    assert 'pip install -e ".[tasks]" && pip install --no-deps dm-clrs==2.0.0' in reason


def test_a_missing_package_of_one_variant(toy) -> None:
    reason = unmet_requirement(with_requires(toy, variant_level={"packages": ["no_such_module_xyz"]}), "mini", NO_CACHE)
    assert reason is not None and "no_such_module_xyz" in reason


def test_a_missing_environment_variable_says_what_to_export(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLAB_TEST_TOKEN", raising=False)
    task = with_requires(toy, {"env": ["MLAB_TEST_TOKEN"]})
    assert unmet_requirement(task, "mini", NO_CACHE) == ("needs the environment variables MLAB_TEST_TOKEN: "
                                               "export MLAB_TEST_TOKEN=...")
    monkeypatch.setenv("MLAB_TEST_TOKEN", "secret")
    assert unmet_requirement(task, "mini", NO_CACHE) is None


def test_an_empty_environment_variable_counts_as_missing(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MLAB_TEST_TOKEN", "")
    reason = unmet_requirement(with_requires(toy, variant_level={"env": ["MLAB_TEST_TOKEN"]}), "mini", NO_CACHE)
    assert reason is not None and "MLAB_TEST_TOKEN" in reason


def test_all_missing_environment_variables_are_named(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLAB_TEST_A", raising=False)
    monkeypatch.delenv("MLAB_TEST_B", raising=False)
    reason = unmet_requirement(with_requires(toy, {"env": ["MLAB_TEST_A"]}, {"env": ["MLAB_TEST_B"]}), "mini", NO_CACHE)
    assert reason is not None and "MLAB_TEST_A" in reason and "MLAB_TEST_B" in reason


def test_a_run_holds_its_limits_gpus_else_one_gpu_when_its_task_or_variant_needs_one(toy) -> None:
    with_gpus = dataclasses.replace(toy, limits=dataclasses.replace(toy.limits, gpus=2))
    assert [task.gpus_per_run("mini") for task in (toy, with_requires(toy, {"gpu": True}),
                                                   with_requires(toy, None, {"gpu": True}), with_gpus)] == [0, 1, 1, 2]


def test_the_gpu_check_asks_the_cluster_when_one_places_the_runs(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    import pytest_mlab.data.requirements as requirements

    monkeypatch.setattr(requirements, "_nvidia_smi_here", lambda: False)  # a controller without GPUs
    needs_two = dataclasses.replace(with_requires(toy, {"gpu": True}), limits=dataclasses.replace(toy.limits, gpus=2))
    assert unmet_requirement(needs_two, "mini", NO_CACHE, cluster_gpus=lambda: 2) is None
    reason = unmet_requirement(needs_two, "mini", NO_CACHE, cluster_gpus=lambda: 1)
    assert reason.startswith("needs 2 GPU(s) on one node, and no node of the Ray cluster (--mlab-ray) has more than 1")
    assert unmet_requirement(toy, "mini", NO_CACHE, cluster_gpus=lambda: pytest.fail("asked for nothing")) is None


def test_a_gpu_task_without_a_gpu(toy, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda name, *args, **kwargs: None)
    reason = unmet_requirement(with_requires(toy, {"gpu": True}), "mini", NO_CACHE)
    assert reason is not None and "GPU" in reason


def test_requirements_merge_task_and_variant_levels() -> None:
    task_level = models.Requirements(packages=("numpy",), env=("A",))
    variant_level = models.Requirements(packages=("numpy", "torch"), gpu=True, env=("B",))
    merged = task_level.merged(variant_level)
    assert merged == models.Requirements(packages=("numpy", "torch"), gpu=True, network=False, env=("A", "B"))


def test_data_that_needs_the_network_is_skipped_until_prepared(toy, tmp_path: Path) -> None:
    from pytest_mlab.data import prepare_data

    import shutil

    assets = shutil.copytree(toy.assets, tmp_path / "assets")  # a recipe that takes the downloads folder
    (assets / "prepare.py").write_text((assets / "prepare.py").read_text().replace("seed: int)", "seed: int, downloads: Path)"))
    task = dataclasses.replace(with_requires(toy, variant_level={"network": True}), assets=assets)
    reason = unmet_requirement(task, "mini", tmp_path / "cache")
    assert reason == ("the 'mini' data of task 'toy' is not prepared, and preparing it needs the network: "
                      "run `pytest-mlab prepare toy --data mini` first, or add --mlab-prepare "
                      "(nothing downloads during a test run)")
    assert unmet_requirement(task, "mini", tmp_path / "cache", preparing=True) is None
    prepare_data(task, "mini", tmp_path / "cache")  # the toy recipe is local; stands in for a download
    assert unmet_requirement(task, "mini", tmp_path / "cache") is None

"""Real pytest sub-runs of the toy project: collection, selection, options, errors and results."""

from __future__ import annotations

import json
import math
import os
import re
import textwrap
from dataclasses import asdict
from pathlib import Path

import pytest

from pytest_mlab.sandbox.registry import resolve_kind
from tests.results.builders import run as recorded_run
from tests.helpers import (
    assert_no_traceback,
    collected_ids,
    output_of,
    read_results,
    run_specs,
    task_yaml,
)

BASELINE_ID = "specs/tasks/toy.yaml::toy[mini-baseline-s0]"
REFERENCE_ID = "specs/tasks/toy.yaml::toy[mini-reference-s0]"

BROKEN_DIRECTION = """\
    kind: Task
    name: broken
    description: A task whose metric direction is not a direction.
    assets: task_assets/toy
    data:
      mini: {prepare: "prepare.py:mini"}
    metric:
      name: error
      direction: up
      grader: "grader.py:score"
    """


def write(root: Path, relative: str, text: str) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    return path


# ------------------------------------------------------------------ collection


def test_toy_project_collects_one_item_per_default_agent(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == [BASELINE_ID, REFERENCE_ID]
    result.stdout.fnmatch_lines(["2 tests collected*"])


def test_agent_and_seeds_options(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", "--agent=baseline", "--seeds=3", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == [f"specs/tasks/toy.yaml::toy[mini-baseline-s{seed}]" for seed in range(3)]


def test_several_agents_keep_the_order_given(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", "--agent=reference, baseline", cache_dir=mlab_cache)
    assert collected_ids(result) == [REFERENCE_ID, BASELINE_ID]


def test_an_item_can_be_selected_by_its_node_id(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache, targets=(BASELINE_ID,))
    assert collected_ids(result) == [BASELINE_ID]


def test_keyword_selection_sees_the_agent_name(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", "-k", "reference", cache_dir=mlab_cache)
    assert collected_ids(result) == [REFERENCE_ID]


def test_task_tags_are_markers(pytester, toy_project, mlab_cache) -> None:
    selected = run_specs(pytester, "--collect-only", "-q", "-m", "toy", cache_dir=mlab_cache)
    assert collected_ids(selected) == [BASELINE_ID, REFERENCE_ID]
    deselected = run_specs(pytester, "--collect-only", "-q", "-m", "not toy", cache_dir=mlab_cache)
    assert collected_ids(deselected) == []
    assert deselected.ret == pytest.ExitCode.NO_TESTS_COLLECTED
    deselected.stdout.fnmatch_lines(["*2 deselected*"])
    mlab = run_specs(pytester, "--collect-only", "-q", "-m", "mlab and toy", cache_dir=mlab_cache)
    assert collected_ids(mlab) == [BASELINE_ID, REFERENCE_ID]


def test_task_tags_work_with_strict_markers(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", "--strict-markers", "-m", "toy", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == [BASELINE_ID, REFERENCE_ID]


def test_a_task_spec_outside_a_tasks_folder_is_collected_by_its_kind(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/extra/other.yaml", "# yaml-language-server: $schema=...\n" + task_yaml("other"))
    write(toy_project, "specs/extra/settings.yaml", "kind: Config\nname: not-a-task\n")
    result = run_specs(pytester, "--collect-only", "-q", "--agent=baseline", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == ["specs/extra/other.yaml::other[mini-baseline-s0]", BASELINE_ID]


def test_yaml_in_an_unrelated_tasks_folder_is_left_alone(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "ci/tasks/deploy.yaml", "steps: [build, push]\n")
    result = run_specs(pytester, "--collect-only", "-q", "--agent=baseline", cache_dir=mlab_cache,
                       targets=("specs", "ci"))
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == [BASELINE_ID]


def test_a_file_in_specs_tasks_with_the_wrong_kind_is_an_error(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/tasks/typo.yaml", task_yaml("typo").replace("kind: Task", "kind: Tsk"))
    result = run_specs(pytester, "--collect-only", "-q", "--agent=baseline", cache_dir=mlab_cache)
    assert "specs/tasks/typo.yaml:1: kind: expected 'kind: Task', found 'Tsk'" in output_of(result)
    assert BASELINE_ID in collected_ids(result)


def test_action_and_agent_specs_are_not_collected_as_tasks(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache, targets=("specs/actions", "agents"))
    assert result.ret == pytest.ExitCode.NO_TESTS_COLLECTED, output_of(result)
    assert "error" not in output_of(result).lower()


# ------------------------------------------------------------------ broken task files


@pytest.mark.parametrize("text, location", [
    (BROKEN_DIRECTION, "specs/tasks/broken.yaml:9: metric.direction: 'up' is not one of ['maximize', 'minimize']"),
    (task_yaml("broken").replace("metric:", "metrics:"),
     "specs/tasks/broken.yaml:7: metrics: unknown key 'metrics'; did you mean 'metric'?"),
    (task_yaml("broken").replace("grader.py:score", "grader.py:scores"),
     "specs/tasks/broken.yaml:10: metric.grader: task_assets/toy/grader.py has no function 'scores'; "
     "did you mean 'score'?"),
    ("kind: Task\nname: broken\ndata:\n\tmini: {}\n", "specs/tasks/broken.yaml:4: YAML syntax error: "),
    (task_yaml("toy"), "specs/tasks/broken.yaml:2: name: duplicate Task name 'toy': also defined in "
                       "specs/tasks/toy.yaml:2; names must be unique"),
    (task_yaml("broken").replace("Predict", "Pre\x00dict"),
     "specs/tasks/broken.yaml:3: YAML syntax error: unacceptable character #x0000 in column 17"),
    (task_yaml("broken", extra="tags: [tabular, or]\n"),
     "specs/tasks/broken.yaml:11: tags[1]: 'or' cannot be a tag: -m reads and, or and not as its own words"),
    (task_yaml("broken", extra="requires: {packages: [scikit-learn]}\n"),
     "specs/tasks/broken.yaml:11: requires.packages[0]: 'scikit-learn' is a pip name: use the import name 'sklearn'"),
    (task_yaml("broken", extra="baseline: {mini: .inf}\n"),
     "specs/tasks/broken.yaml:11: baseline.mini: inf is not a finite number"),
    (task_yaml("broken", extra="success: {improvement: -5}\n"),
     "specs/tasks/broken.yaml:11: success.improvement: -5 is less than the minimum of 0"),
    (task_yaml("broken", extra="limits: {max_steps: 100000000000000000000000000}\n"),
     "specs/tasks/broken.yaml:11: limits.max_steps: 100000000000000000000000000 is more than 1,000,000"),
    ("kind: Agent\nname: mine\n", "specs/tasks/broken.yaml:1: kind: expected 'kind: Task', found 'Agent'; "
                                  "this is an Agent spec: move it to agents/"),
], ids=["schema", "unknown-key", "grader-function", "yaml-syntax", "duplicate-name", "nul-byte", "tag-keyword",
        "pip-name", "infinite-baseline", "negative-improvement", "absurd-max-steps", "agent-in-tasks"])
def test_a_broken_task_is_a_located_collection_error_and_the_good_one_still_collects(
        pytester, toy_project, mlab_cache, text: str, location: str) -> None:
    write(toy_project, "specs/tasks/broken.yaml", text)
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert "ERROR collecting specs/tasks/broken.yaml" in output
    assert location in output, output
    assert_no_traceback(output)
    if "duplicate" in location:
        # both files carry the same name, so neither can be trusted
        assert "specs/tasks/toy.yaml:2: name: duplicate Task name 'toy': also defined in specs/tasks/broken.yaml:2" \
            in output
    else:
        assert collected_ids(result) == [BASELINE_ID, REFERENCE_ID]
        result.stdout.fnmatch_lines(["2 tests collected, 1 error*"])


def test_a_collection_error_stops_the_run_unless_told_to_continue(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/tasks/broken.yaml", BROKEN_DIRECTION)
    stopped = run_specs(pytester, cache_dir=mlab_cache)
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    stopped.assert_outcomes(errors=1)
    assert_no_traceback(output_of(stopped))
    carried_on = run_specs(pytester, "--continue-on-collection-errors", cache_dir=mlab_cache)
    carried_on.assert_outcomes(passed=2, errors=1)
    assert "specs/tasks/broken.yaml:9: metric.direction:" in output_of(carried_on)


# ------------------------------------------------------------------ options and ini settings


def test_unknown_agent_is_a_usage_error_naming_the_known_agents(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "--agent=nope", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert "--agent: unknown agent 'nope'" in output
    assert "known: baseline, react, reference, research, research-no-retrieval, research-strict, simple (from agents)" in output
    assert_no_traceback(output)


def test_a_misspelt_agent_gets_a_suggestion(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "--agent=baselin", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "did you mean 'baseline'?" in output_of(result)


@pytest.mark.parametrize("option, message", [
    ("--seeds=0", "--seeds=0: must be at least 1"),
    ("--seeds=x", "--seeds=x: expected a whole number"),
    ("--max-steps=0", "--max-steps=0: must be at least 1"),
    ("--max-steps=many", "--max-steps=many: expected a whole number"),
    ("--max-time=soon", "--max-time: 'soon' is not a duration"),
    ("--max-time=0", "--max-time: '0' must be longer than zero"),
    ("--sandbox=nope", "--sandbox=nope: unknown sandbox; choose one of: auto, local"),
    ("--mlab-data=Full/x", "--mlab-data=Full/x: expected a data variant name"),
    ("--agent=", "--agent is empty; name at least one agent"),
    ("--mlab-out=taken", "--mlab-out=taken: is a file; name a folder"),
    ("--mlab-cache=taken/cache", "--mlab-cache=taken/cache: cannot be made: "),
    ("--llm-cache=taken", "--llm-cache=taken: is a file; name a folder"),
])
def test_bad_option_values_are_usage_errors_naming_the_option(pytester, toy_project, mlab_cache,
                                                              option: str, message: str) -> None:
    (toy_project / "taken").write_text("a file where a folder option may point")
    result = run_specs(pytester, "--collect-only", option, cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output_of(result)
    output = output_of(result)
    assert message in output, output
    assert_no_traceback(output)


def test_an_unusable_folder_in_the_ini_file_names_the_setting(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "taken").write_text("")
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_out = taken\n")
    result = run_specs(pytester, "--collect-only", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "ini setting mlab_out=taken: is a file" in output_of(result)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into any folder")
def test_an_output_folder_that_cannot_be_written_is_a_usage_error(pytester, toy_project, mlab_cache) -> None:
    locked = toy_project / "locked"
    locked.mkdir(mode=0o555)
    result = run_specs(pytester, "--collect-only", "--mlab-out=locked/out", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--mlab-out=locked/out: {locked} is not writable by you" in output_of(result)


def test_an_llm_for_agents_that_call_none_is_a_warning_before_the_run(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--collect-only", "-q", "--llm=gpt-4", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    (line,) = [line for line in output_of(result).splitlines() if "is ignored" in line]
    assert "--llm=gpt-4 is ignored: no selected agent uses an LLM (baseline, reference); add one that does, " \
           "e.g. --agent=" in line


def test_an_llm_some_selected_agent_calls_is_no_warning(pytester, toy_project, mlab_cache, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-used")  # without it, the typed model is a usage error
    result = run_specs(pytester, "--collect-only", "-q", "--llm=gpt-4", "--agent=baseline,research",
                       cache_dir=mlab_cache, subprocess=True)
    assert result.ret == pytest.ExitCode.OK and "is ignored" not in output_of(result)


def test_ini_settings_work_like_the_options(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_agent = baseline\nmlab_seeds = 2\n")
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert collected_ids(result) == ["specs/tasks/toy.yaml::toy[mini-baseline-s0]",
                                     "specs/tasks/toy.yaml::toy[mini-baseline-s1]"]


def test_options_override_ini_settings(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_agent = baseline\nmlab_seeds = 2\n")
    result = run_specs(pytester, "--collect-only", "-q", "--agent=reference", "--seeds=1", cache_dir=mlab_cache)
    assert collected_ids(result) == [REFERENCE_ID]


@pytest.mark.parametrize("ini, message", [
    ("mlab_seeds = 0", "ini setting mlab_seeds=0: must be at least 1"),
    ("mlab_sandbox = nope", "ini setting mlab_sandbox=nope: unknown sandbox"),
    ("mlab_max_time = soon", "ini setting mlab_max_time: 'soon' is not a duration"),
])
def test_bad_ini_values_are_usage_errors_naming_the_setting(pytester, toy_project, mlab_cache,
                                                            ini: str, message: str) -> None:
    (toy_project / "pytest.ini").write_text(f"[pytest]\n{ini}\n")
    result = run_specs(pytester, "--collect-only", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in output_of(result)


def test_unknown_agent_in_ini_names_the_ini_setting(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_agent = nope\n")
    result = run_specs(pytester, "--collect-only", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert "unknown agent 'nope'" in output
    assert "mlab_agent" in output, output


def test_other_spec_folders_can_be_configured(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "agents").rename(toy_project / "my_agents")
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_agents_dir = my_agents\n")
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    assert collected_ids(result) == [BASELINE_ID, REFERENCE_ID]


# ------------------------------------------------------------------ skips


def test_a_missing_data_variant_skips_with_the_fix(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--mlab-data=full", "-rs", cache_dir=mlab_cache)
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines(["*task 'toy' has no 'full' data variant (it has: mini); run with --mlab-data=mini*"])
    assert not (toy_project / "mlab-results" / "results.json").exists(), "skipped items are not runs"


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_a_session_that_ran_nothing_for_unmet_requirements_fails_with_one_line(pytester, toy_project, mlab_cache,
                                                                               workers) -> None:
    result = run_specs(pytester, "--mlab-data=full", *workers, cache_dir=mlab_cache, subprocess=bool(workers))
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, output_of(result)
    (line,) = [line for line in output_of(result).splitlines() if "--mlab-allow-skips" in line]
    assert line.startswith("pytest-mlab: no run ran: 2 skipped for an unmet requirement, e.g. toy[full-"), line
    assert "task 'toy' has no 'full' data variant" in line and "exit code 4" in line


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_allow_skips_lets_a_session_that_ran_nothing_pass(pytester, toy_project, mlab_cache, workers) -> None:
    result = run_specs(pytester, "--mlab-data=full", "--mlab-allow-skips", *workers, cache_dir=mlab_cache,
                       subprocess=bool(workers))
    result.assert_outcomes(skipped=2)
    assert result.ret == pytest.ExitCode.OK and "no run ran" not in output_of(result)


def test_the_ini_file_can_allow_a_session_that_ran_nothing(pytester, toy_project, mlab_cache) -> None:
    (toy_project / "pytest.ini").write_text("[pytest]\nmlab_allow_skips = true\n")
    assert run_specs(pytester, "--mlab-data=full", cache_dir=mlab_cache).ret == pytest.ExitCode.OK


@pytest.mark.slow
def test_a_session_in_which_one_run_ran_passes_despite_skips(pytester, toy_project, mlab_cache,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLAB_TOY_TOKEN", raising=False)
    write(toy_project, "specs/tasks/secret.yaml", task_yaml("secret", extra="requires: {env: [MLAB_TOY_TOKEN]}\n"))
    result = run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1, skipped=1)
    assert result.ret == pytest.ExitCode.OK and "no run ran" not in output_of(result)


def test_a_missing_environment_variable_skips_with_the_fix(pytester, toy_project, mlab_cache,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MLAB_TOY_TOKEN", raising=False)
    write(toy_project, "specs/tasks/secret.yaml", task_yaml("secret", extra="requires: {env: [MLAB_TOY_TOKEN]}\n"))
    result = run_specs(pytester, "--agent=baseline", "-rs", cache_dir=mlab_cache, targets=("specs/tasks/secret.yaml",))
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs the environment variables MLAB_TOY_TOKEN: export MLAB_TOY_TOKEN=...*"])


def test_a_missing_package_skips_with_the_fix(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/tasks/heavy.yaml", task_yaml("heavy", extra="""\
        requires: {packages: [no_such_module_xyz]}
        """))
    result = run_specs(pytester, "--agent=baseline", "-rs", cache_dir=mlab_cache, targets=("specs/tasks/heavy.yaml",))
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs the Python packages no_such_module_xyz: pip install*"])


def test_a_missing_parent_of_a_dotted_package_skips_with_the_fix(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/tasks/heavy.yaml", task_yaml("heavy", extra="""\
        requires: {packages: [no_such_module_xyz.models]}
        """))
    result = run_specs(pytester, "--agent=baseline", "-rs", cache_dir=mlab_cache, targets=("specs/tasks/heavy.yaml",))
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs the Python packages no_such_module_xyz.models: pip install*"])


def test_a_package_that_breaks_on_import_is_a_collection_error_of_its_task(pytester, toy_project, mlab_cache) -> None:
    """Not an error of ours: pytest's own collection error with the cause, and the session goes on
    to report it (no INTERNALERROR)."""
    write(toy_project, "explodes_xyz/__init__.py", "raise RuntimeError('this package cannot be imported')\n")
    write(toy_project, "specs/tasks/heavy.yaml", task_yaml("heavy", extra="""\
        requires: {packages: [explodes_xyz.models]}
        """))
    pytester.syspathinsert(toy_project)
    result = run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache, targets=("specs/tasks/heavy.yaml",))
    text = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, text
    assert "INTERNALERROR" not in text, text
    result.stdout.fnmatch_lines(["*ERROR*specs/tasks/heavy.yaml*", "*this package cannot be imported*"])


# ------------------------------------------------------------------ broken agents


BROKEN_AGENT = """\
    kind: Agent
    name: mine
    implementation: pytest_mlab.agents.baseline:BaselineAgent
    actions: [Execute Script, Final Anser]
    expect: baseline
    default: true
    """


def test_a_broken_agent_asked_for_is_a_usage_error_at_its_line(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", BROKEN_AGENT)
    result = run_specs(pytester, "--collect-only", "--agent=mine", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert "agents/mine.yaml:4: actions[1]: unknown action 'Final Anser'; did you mean 'Final Answer'?" in output
    assert_no_traceback(output)


def test_an_unreadable_agent_asked_for_names_its_file_and_line(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", "kind: Agent\nname: mine\nactions:\n\t- Execute Script\n")
    result = run_specs(pytester, "--collect-only", "--agent=mine", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert "unknown agent 'mine'" in output
    assert "agents/mine.yaml:4: YAML syntax error" in output
    assert_no_traceback(output)


def test_a_broken_agent_not_asked_for_does_not_stop_others(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", BROKEN_AGENT)
    result = run_specs(pytester, "--collect-only", "-q", "--agent=baseline", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.OK
    assert collected_ids(result) == [BASELINE_ID]


@pytest.mark.parametrize("text, location", [
    (BROKEN_AGENT, "agents/mine.yaml:4:"),
    ("kind: Agent\nname: mine\ndefault: true\nactions:\n\t- Execute Script\n", "agents/mine.yaml:5:"),
], ids=["invalid", "unreadable"])
def test_a_broken_agent_is_reported_when_default_agents_run(pytester, toy_project, mlab_cache,
                                                            text: str, location: str) -> None:
    write(toy_project, "agents/mine.yaml", text)
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    output = output_of(result)
    assert location in output, output


# ------------------------------------------------------------------ broken specs: each once, in its own file


def test_every_error_of_a_task_file_is_in_its_one_collection_error(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/tasks/broken.yaml", BROKEN_DIRECTION.replace('"grader.py:score"', '"grader.py:scor"')
          .replace("description: A task", "descripton: A task") + "tags: [not]\n")
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    output = output_of(result)
    errors = output.split("ERROR collecting specs/tasks/broken.yaml")[1].split("short test summary")[0]
    assert [line.split(": ")[0:2] for line in errors.splitlines() if line.startswith("specs/")] == [
        ["specs/tasks/broken.yaml:1", "(top level)"], ["specs/tasks/broken.yaml:3", "descripton"],
        ["specs/tasks/broken.yaml:9", "metric.direction"], ["specs/tasks/broken.yaml:10", "metric.grader"],
        ["specs/tasks/broken.yaml:11", "tags[0]"]], output
    assert output.count("ERROR collecting") == 1
    result.stdout.fnmatch_lines(["2 tests collected, 1 error*"])


def collect_two_tasks_with(pytester, project: Path, cache: Path, agent: str) -> tuple[pytest.RunResult, str]:
    """Collect the toy task and another one, with ``agent`` as agents/mine.yaml and the default agents."""
    write(project, "agents/mine.yaml", agent)
    write(project, "specs/tasks/other.yaml", task_yaml("other"))
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=cache)
    return result, output_of(result)


def test_a_broken_agent_nobody_selected_does_not_block_the_default_run(pytester, toy_project, mlab_cache) -> None:
    result, output = collect_two_tasks_with(pytester, toy_project, mlab_cache,
                                            BROKEN_AGENT.replace("default: true", "default: false"))
    assert result.ret == pytest.ExitCode.OK, output
    assert len(collected_ids(result)) == 4 and "ERROR" not in output
    assert "agents/mine.yaml:4: SpecWarning: no agent of this session needs this file, so nothing stops" in output
    assert output.count("agents/mine.yaml:4: actions[1]: unknown action 'Final Anser'") == 1, output
    assert_no_traceback(output)


def test_a_broken_default_agent_is_one_collection_error_of_its_own_file(pytester, toy_project, mlab_cache) -> None:
    result, output = collect_two_tasks_with(pytester, toy_project, mlab_cache,
                                            BROKEN_AGENT.replace("BaselineAgent", "BaselineAgnet"))
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert output.count("ERROR collecting") == 1 and "ERROR collecting agents/mine.yaml" in output, output
    assert output.count("agents/mine.yaml:3: implementation: 'pytest_mlab.agents.baseline' has no 'BaselineAgnet' "
                        "for agent 'mine'") == 1, output
    assert output.count("agents/mine.yaml:4: actions[1]: unknown action 'Final Anser'") == 1, output
    assert collected_ids(result) == ["specs/tasks/other.yaml::other[mini-baseline-s0]",
                                     "specs/tasks/other.yaml::other[mini-reference-s0]", BASELINE_ID, REFERENCE_ID]
    result.stdout.fnmatch_lines(["4 tests collected, 1 error*"])
    assert_no_traceback(output)


BROKEN_ACTION = """\
    kind: Action
    name: Count Lines
    description: Count the lines of a workspace file.
    arguments:
      file_name: {type: strng, description: a workspace file}
    returns: The number of lines.
    implementation: pytest_mlab.actions.files:count_lines
    """
BROKEN_ACTION_LINES = [
    "specs/actions/count.yaml:5: arguments.file_name.type: 'strng' is not one of "
    "['string', 'integer', 'number', 'boolean']",
    "specs/actions/count.yaml:7: implementation: 'pytest_mlab.actions.files' has no 'count_lines' "
    "for action 'Count Lines'",
]


def test_a_broken_action_no_agent_uses_is_a_warning_with_every_problem(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/actions/count.yaml", BROKEN_ACTION)
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.OK, output
    assert collected_ids(result) == [BASELINE_ID, REFERENCE_ID]
    for line in BROKEN_ACTION_LINES:
        assert output.count(line) == 1, output


def test_a_broken_action_a_selected_agent_uses_stops_that_agent_only(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "specs/actions/count.yaml", BROKEN_ACTION)
    write(toy_project, "agents/counter.yaml", "kind: Agent\nname: counter\nimplementation: "
                                              "pytest_mlab.agents.baseline:BaselineAgent\nexpect: baseline\n"
                                              "actions: [Execute Script, Count Lines, Final Answer]\n")
    write(toy_project, "specs/tasks/other.yaml", task_yaml("other"))
    result = run_specs(pytester, "--collect-only", "-q", "--agent=counter,baseline", cache_dir=mlab_cache)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output
    assert output.count("ERROR collecting") == 1 and "ERROR collecting specs/actions/count.yaml" in output, output
    for line in BROKEN_ACTION_LINES:
        assert output.count(line) == 1, output
    assert collected_ids(result) == ["specs/tasks/other.yaml::other[mini-baseline-s0]", BASELINE_ID]
    assert_no_traceback(output)


def test_specs_are_not_checked_by_a_session_that_collects_no_task(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", BROKEN_AGENT)
    write(toy_project, "test_plain.py", "def test_plain():\n    pass\n")
    result = run_specs(pytester, "-q", cache_dir=mlab_cache, targets=("test_plain.py",))
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert "agents/mine.yaml" not in output_of(result)


# ------------------------------------------------------------------ full runs
# These run in a subprocess: the results table imports pandas/numpy, and pytester's in-process runs
# unload modules imported during the run, after which numpy refuses to be imported a second time.


@pytest.mark.slow
def test_a_full_run_of_the_toy_project(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, cache_dir=mlab_cache, subprocess=True)
    output = output_of(result)
    result.assert_outcomes(passed=2)
    assert "pytest-mlab results" in output
    result.stdout.re_match_lines([r"\s*task\s+agent\s+seed\s+score\s+baseline\s+improvement\s+success\s+steps"
                                  r"\s+time\s+result\s*$",
                                  r"\s*toy\s+baseline\s+0\s+90\s+90\s+\+0\.0%\s+n/a\s+2\s+\S+\s+PASS\s*$",
                                  r"\s*toy\s+reference\s+0\s+0\s+90\s+\+100\.0%\s+yes\s+3\s+\S+\s+PASS\s*$"])
    results_path = toy_project / "mlab-results" / "results.json"
    assert f"results: {results_path}" in output
    payload = read_results(toy_project)
    assert payload["version"] == 2
    runs = {run["agent"]: run for run in payload["runs"]}
    assert [run["nodeid"] for run in payload["runs"]] == [BASELINE_ID, REFERENCE_ID]
    baseline, reference = runs["baseline"], runs["reference"]
    assert (baseline["run_id"], baseline["task"], baseline["seed"], baseline["variant"]) == \
        ("toy[mini-baseline-s0]", "toy", 0, "mini")
    assert (baseline["score"], baseline["baseline"], baseline["improvement"]) == (90.0, 90.0, 0.0)
    assert (baseline["success"], baseline["passed"], baseline["valid"], baseline["steps"]) == (False, True, True, 2)
    assert (baseline["expect"], baseline["end_reason"], baseline["failure"]) == ("baseline", "final answer", None)
    assert (reference["score"], reference["baseline"], reference["improvement"]) == (0.0, 90.0, 1.0)
    assert (reference["success"], reference["passed"], reference["valid"], reference["steps"]) == (True, True, True, 3)
    assert (reference["expect"], reference["end_reason"], reference["failure"]) == ("success", "final answer", None)
    for run in payload["runs"]:
        assert (run["metric"], run["direction"], run["sandbox"], run["llm"]) == ("error", "minimize", resolve_kind("auto"), None)
        assert run["tags"] == ["toy"]  # the task's tags travel with the run: the headline counts "paper" tasks
        assert Path(run["trace"]).is_file()
        assert Path(run["run_dir"]) == toy_project / "mlab-results" / "runs" / f"toy-mini-{run['agent']}-s0"
    assert (toy_project / "mlab-results" / "results.csv").is_file()
    assert (mlab_cache / "toy" / "mini" / "public" / "data.csv").is_file(), "data is prepared in --mlab-cache"
    (agent,) = [row for row in payload["aggregate"]["agents"] if row["agent"] == "reference"]
    assert (agent["headline_tasks"], agent["average_success_rate"]) == ("all", 1.0)  # no paper task: every task


@pytest.mark.slow
def test_mlab_out_moves_the_results(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--agent=baseline", "--mlab-out=elsewhere/out", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1)
    assert [run["run_id"] for run in read_results(toy_project, "elsewhere/out")["runs"]] == ["toy[mini-baseline-s0]"]
    assert not (toy_project / "mlab-results").exists()


@pytest.mark.slow
def test_max_steps_override_reaches_the_run(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--agent=baseline", "--max-steps=1", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1)  # the starter ran in step 1 and wrote its (baseline) submission
    (run,) = read_results(toy_project)["runs"]
    assert (run["steps"], run["end_reason"], run["score"]) == (1, "step limit", 90.0)


@pytest.mark.slow
def test_a_run_cut_by_the_step_limit_says_so(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--agent=reference", "--max-steps=1", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(failed=1)
    failures = output_of(result).split("= FAILURES =")[1].split("pytest-mlab results")[0]
    assert "step limit" in failures, failures


@pytest.mark.slow
def test_results_json_has_no_negative_zero(pytester, toy_project, mlab_cache) -> None:
    run_specs(pytester, "--agent=baseline", cache_dir=mlab_cache, subprocess=True).assert_outcomes(passed=1)
    (run,) = read_results(toy_project)["runs"]
    assert run["improvement"] == 0.0
    assert math.copysign(1.0, run["improvement"]) == 1.0
    assert "-0.0" not in (toy_project / "mlab-results" / "results.json").read_text()


@pytest.mark.slow
def test_results_json_settings_keep_their_types(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "--agent=baseline", "--max-steps=3", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=1)
    recorded = read_results(toy_project)["settings"]
    assert recorded["agents"] == ["baseline"]
    assert recorded["seeds"] == 1
    assert recorded["max_steps"] == 3
    assert recorded["variant"] == "mini"
    assert recorded["cache_dir"] == str(mlab_cache)


@pytest.mark.slow
def test_xdist_runs_report_every_result_once(pytester, toy_project, mlab_cache) -> None:
    result = run_specs(pytester, "-n", "2", "--seeds=2", cache_dir=mlab_cache, subprocess=True)
    output = output_of(result)
    result.assert_outcomes(passed=4)
    assert output.count("pytest-mlab results") == 1
    payload = json.loads((toy_project / "mlab-results" / "results.json").read_text())
    assert sorted(run["run_id"] for run in payload["runs"]) == [
        "toy[mini-baseline-s0]", "toy[mini-baseline-s1]", "toy[mini-reference-s0]", "toy[mini-reference-s1]"]
    assert all(run["passed"] for run in payload["runs"])


def test_interleaving_spreads_each_groups_members_and_keeps_other_items_in_place() -> None:
    from pytest_mlab.plugin.order import interleaved

    items = ["a1", "a2", "a3", "x", "b1", "b2", "c1", "y"]
    group = {"a": "a", "b": "b", "c": "c"}
    reordered = interleaved(items, lambda item: group.get(item[0]))
    assert reordered == ["a1", "b1", "c1", "x", "a2", "b2", "a3", "y"]
    assert interleaved(items, lambda item: None) == items and interleaved([], lambda item: "g") == []


@pytest.mark.slow
def test_under_xdist_the_runs_of_one_task_go_to_different_workers(pytester, toy_project, mlab_cache) -> None:
    """Collected as toy's two runs then toy2's, xdist's first chunks would give both of a task's
    runs to one worker; interleaved, each worker gets one run of each task."""
    (toy_project / "specs" / "tasks" / "toy2.yaml").write_text(
        (toy_project / "specs" / "tasks" / "toy.yaml").read_text().replace("name: toy\n", "name: toy2\n"))
    serial = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    assert [nodeid.split("::")[1] for nodeid in collected_ids(serial)] == [
        "toy[mini-baseline-s0]", "toy[mini-reference-s0]", "toy2[mini-baseline-s0]", "toy2[mini-reference-s0]"]
    result = run_specs(pytester, "-n", "2", "-v", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=4)
    workers: dict[str, set[str]] = {}
    for line in result.outlines:
        if match := re.match(r"\[(gw\d)\] .*PASSED specs/tasks/\w+\.yaml::(\w+)\[", line):
            workers.setdefault(match[2], set()).add(match[1])
    assert workers == {"toy": {"gw0", "gw1"}, "toy2": {"gw0", "gw1"}}, output_of(result)


@pytest.mark.slow
def test_under_xdist_a_run_recorded_as_long_gets_a_worker_to_itself(pytester, toy_project, mlab_cache) -> None:
    """With the results folder's rows saying toy's baseline took 60 s and the other runs 1 s, the
    plan (plugin/schedule.py) gives that run one worker and the three others the other worker;
    xdist's own chunks would have put two runs on each."""
    (toy_project / "specs" / "tasks" / "toy2.yaml").write_text(
        (toy_project / "specs" / "tasks" / "toy.yaml").read_text().replace("name: toy\n", "name: toy2\n"))
    long_run = "specs/tasks/toy.yaml::toy[mini-baseline-s0]"
    others = ["specs/tasks/toy.yaml::toy[mini-reference-s0]", "specs/tasks/toy2.yaml::toy2[mini-baseline-s0]",
              "specs/tasks/toy2.yaml::toy2[mini-reference-s0]"]
    results = toy_project / "mlab-results"
    results.mkdir()
    rows = [asdict(recorded_run(task=task, agent=agent, wall_time=60.0 if (task, agent) == ("toy", "baseline") else 1.0))
            for task in ("toy", "toy2") for agent in ("baseline", "reference")]
    (results / "results.json").write_text(json.dumps({"version": 2, "runs": rows}))
    result = run_specs(pytester, "-n", "2", "-v", cache_dir=mlab_cache, subprocess=True)
    result.assert_outcomes(passed=4)
    ran_by: dict[str, list[str]] = {}
    for line in result.outlines:
        if match := re.match(r"\[(gw\d)\] .*PASSED (specs/tasks/\S+)", line):
            ran_by.setdefault(match[1], []).append(match[2])
    assert sorted((sorted(ran) for ran in ran_by.values()), key=len) == [[long_run], sorted(others)], output_of(result)


# ------------------------------------------------------------------ agent options, checked at collection

def agent_with(options: str, *, implementation: str = "pytest_mlab.agents.llm_agent:LLMAgent",
               actions: str = "[List Files, Final Answer]", default: bool = False) -> str:
    return (f"kind: Agent\nname: mine\nimplementation: {implementation}\nllm: {{main: gpt-4}}\n"
            f"actions: {actions}\ndefault: {str(default).lower()}\noptions:\n{options}")


def test_a_bad_agent_option_is_a_usage_error_at_its_line_before_any_run(pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", agent_with("  max_retries: 5\n  steps_in_context: \"three\"\n"))
    result = run_specs(pytester, "--collect-only", "--agent=mine", "--llm=scripted:nothing.yaml", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert "agents/mine.yaml:9: options.steps_in_context: 'three' is not of type 'integer'" in output, output
    assert_no_traceback(output)


def test_a_bad_option_of_a_default_agent_is_a_collection_error_naming_file_and_line(
        pytester, toy_project, mlab_cache) -> None:
    write(toy_project, "agents/mine.yaml", agent_with("  stepz_in_context: 3\n", default=True))
    result = run_specs(pytester, "--collect-only", "-q", cache_dir=mlab_cache)
    output = output_of(result)
    assert result.ret == pytest.ExitCode.INTERRUPTED, output  # a collection error stops the session
    assert "agents/mine.yaml:8: options.stepz_in_context: unknown key 'stepz_in_context'; " \
           "did you mean 'steps_in_context'?" in output, output
    assert_no_traceback(output)


@pytest.mark.parametrize("implementation, options, expected", [
    ("pytest_mlab.agents.research:ResearchAgent", "  retrieval: true\n",
     "agents/mine.yaml:5: actions: with options.retrieval: true the agent needs the actions "
     "'Append Summary to Research Log', 'Retrieval from Research Log' (under actions or accepts)"),
    ("pytest_mlab.agents.llm_agent:LLMAgent", "  entries: [Thought, Action]\n",
     "agents/mine.yaml:8: options.entries: must end with Action, Action Input"),
    ("pytest_mlab.agents.base:load_agent", "  x: 1\n",
     "agents/mine.yaml:3: implementation: 'pytest_mlab.agents.base:load_agent' is not an agent class"),
    ("pytest_mlab.agents.nowhere:Agent", "  x: 1\n",
     "agents/mine.yaml:3: implementation: cannot import 'pytest_mlab.agents.nowhere' for agent 'mine'"),
], ids=["needs-an-action", "schema-cannot-say", "not-a-class", "no-module"])
def test_what_an_agent_class_requires_is_checked_at_collection(pytester, toy_project, mlab_cache, implementation,
                                                              options, expected) -> None:
    write(toy_project, "agents/mine.yaml", agent_with(options, implementation=implementation))
    result = run_specs(pytester, "--collect-only", "--agent=mine", "--llm=scripted:nothing.yaml", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    output = output_of(result)
    assert expected in output, output
    assert_no_traceback(output)


# ------------------------------------------------------------------ a run with no spec

#: What a session that collects no Task spec must not load: the LLM layer, the sandbox backends and
#: their clean-up, the results writers, the spec reader, and the heavy libraries under them.
NOT_FOR_PLAIN_TESTS = ("pytest_mlab.llm", "pytest_mlab.sandbox.leftovers", "pytest_mlab.sandbox.local",
                       "pytest_mlab.sandbox.bwrap", "pytest_mlab.results.gate", "pytest_mlab.results.store",
                       "pytest_mlab.results.report", "pytest_mlab.spec.project", "litellm", "pandas",
                       "matplotlib", "docker", "jsonschema")


#: Every pytest_mlab module such a session may load: the entry module, the options it adds and
#: checks, the plugin's hook specs and stash keys, and the few small modules under them.
PLAIN_TEST_MODULES = {"pytest_mlab", "pytest_mlab.plugin", "pytest_mlab.plugin.options", "pytest_mlab.plugin.hookspecs",
                      "pytest_mlab.plugin.state", "pytest_mlab.errors", "pytest_mlab.lazy", "pytest_mlab.data",
                      "pytest_mlab.cache_home", "pytest_mlab.sandbox", "pytest_mlab.sandbox.registry",
                      "pytest_mlab.spec", "pytest_mlab.spec.suffixes"}


@pytest.mark.parametrize("xdist", ["-pno:xdist", "-pxdist"])
def test_a_run_that_collects_no_spec_loads_neither_the_engine_nor_heavy_libraries(pytester, xdist) -> None:
    pytester.makeconftest(f"""
        import json, sys

        def pytest_unconfigure(config):
            loaded = [name for name in {NOT_FOR_PLAIN_TESTS!r} if name in sys.modules]
            ours = sorted(name for name in sys.modules if name.split(".")[0] == "pytest_mlab")
            with open("loaded.json", "w") as out:
                json.dump({{"heavy": loaded, "ours": ours}}, out)
        """)
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", xdist)
    result.assert_outcomes(passed=1)
    loaded = json.loads((pytester.path / "loaded.json").read_text())
    assert loaded["heavy"] == []
    assert set(loaded["ours"]) <= PLAIN_TEST_MODULES, sorted(set(loaded["ours"]) - PLAIN_TEST_MODULES)


@pytest.mark.parametrize("xdist", [("-p", "no:xdist"), ("-n", "2")])
def test_collect_only_of_specs_imports_no_report_library(pytester, toy_project, mlab_cache, xdist) -> None:
    """The report's libraries load in the background only for a session that will run something:
    ``--collect-only`` writes no report, so it does not pay the second of CPU they cost."""
    pytester.makeconftest("""
        import sys

        def pytest_unconfigure(config):
            if not hasattr(config, "workerinput"):  # the controller, or the only process
                loaded = [name for name in ("pandas", "matplotlib") if name in sys.modules]
                open("loaded.txt", "w").write(",".join(loaded) or "-")
        """)
    result = run_specs(pytester, "--collect-only", "-q", *xdist, cache_dir=mlab_cache, subprocess=True)
    assert result.ret == pytest.ExitCode.OK, output_of(result)
    assert (pytester.path / "loaded.txt").read_text() == "-"


def test_a_bad_option_value_is_a_usage_error_even_when_no_spec_is_collected(pytester) -> None:
    """Setting an option asks for pytest-mlab: it is checked at start-up, as before any run."""
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--seeds=0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--seeds=0: must be at least 1*"])

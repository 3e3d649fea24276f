"""Every problem of a spec file at once, each at its own line, and the checks beyond the schema:
finite numbers, thresholds and limits in bounds, tags ``-m`` can select by, import names, and
specs of one kind in another kind's folder. Also which broken Agent and Action files a session needs."""

from __future__ import annotations

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import task_checks
from pytest_mlab.spec.problems import Problems
from pytest_mlab.spec.yaml_lines import LineMap
from tests.helpers import task_yaml
from tests.spec.support import Layout


def task_lines(layout: Layout, text: str) -> list[str]:
    """The rendered problems of a task spec written as specs/tasks/t.yaml."""
    layout.write("specs/tasks/t.yaml", text)
    return layout.task_error("specs/tasks/t.yaml").render().splitlines()


def action_error(layout: Layout, text: str) -> SpecError:
    layout.write("specs/actions/mine.yaml", text)
    with pytest.raises(SpecError) as excinfo:
        layout.project().action("Mine")
    return excinfo.value


ACTION = """\
    kind: Action
    name: Mine
    description: Count the lines of a file.
    arguments:
      file_name: {type: string, description: a workspace file}
    returns: The number of lines.
    implementation: pytest_mlab.actions.files:read_file
    """


# ------------------------------------------------------------------ every problem at once


def test_every_problem_of_a_task_file_is_reported_at_once(layout: Layout) -> None:
    lines = task_lines(layout, """\
        kind: Task
        name: t
        description: Four rounds of fixing, before.
        tags: [tabular, not]
        assets: task_assets/toy
        colour: blue
        data:
          mini: {prepare: "prepare.py:make", requires: {packages: [scikit-learn]}}
        metric:
          name: error
          direction: up
          grader: "grader.py:scor"
        baseline: {mini: .inf, full: 1.0}
        success: {improvement: -5}
        limits: {max_steps: 100000000000000000000000000, max_time: 31d}
        """)
    assert lines == [
        "specs/tasks/t.yaml:4: tags[1]: 'not' cannot be a tag: -m reads and, or and not as its own words, so no "
        "expression could select it; rename it (e.g. 'not-tasks')",
        "specs/tasks/t.yaml:6: colour: unknown key 'colour'; allowed keys: assets, baseline, data, description, "
        "extends, kind, limits, metric, mlagentbench, name, read_only, reference, requires, sandbox, starter, success, "
        "tags",
        "specs/tasks/t.yaml:8: data.mini.prepare: task_assets/toy/prepare.py has no function 'make'; it defines: mini",
        "specs/tasks/t.yaml:8: data.mini.requires.packages[0]: 'scikit-learn' is a pip name: "
        "use the import name 'sklearn'",
        "specs/tasks/t.yaml:11: metric.direction: 'up' is not one of ['maximize', 'minimize']",
        "specs/tasks/t.yaml:12: metric.grader: task_assets/toy/grader.py has no function 'scor'; did you mean 'score'?",
        "specs/tasks/t.yaml:13: baseline.mini: inf is not a finite number; write a real number",
        "specs/tasks/t.yaml:13: baseline.full: no data variant 'full'; the task has: mini",
        "specs/tasks/t.yaml:14: success.improvement: -5 is less than the minimum of 0 (a fraction of the baseline: "
        "0.10 = more than 10% better than baseline, 0 = any improvement)",
        "specs/tasks/t.yaml:15: limits.max_steps: 100000000000000000000000000 is more than 1,000,000, "
        "the most pytest-mlab accepts",
        "specs/tasks/t.yaml:15: limits.max_time: '31d' is longer than 30 days, the longest limit pytest-mlab accepts",
    ]


def test_the_missing_keys_of_one_mapping_are_one_problem_naming_them_all(layout: Layout) -> None:
    error = action_error(layout, "kind: Action\nname: Mine\narguments:\n  x: {type: string}\n"
                                 "implementation: pytest_mlab.actions.files:read_file\n")
    assert error.render().splitlines() == [
        "specs/actions/mine.yaml:1: (top level): missing required keys 'description', 'returns'",
        "specs/actions/mine.yaml:4: arguments.x: missing required key 'description'",
    ]


def test_every_problem_of_an_action_file_is_reported_at_once(layout: Layout) -> None:
    error = action_error(layout, ACTION.replace("{type: string,", "{type: strng,").replace(
        "files:read_file", "files:nope").replace("    returns: The number of lines.\n", ""))
    assert error.render().splitlines() == [
        "specs/actions/mine.yaml:1: (top level): missing required key 'returns'",
        "specs/actions/mine.yaml:5: arguments.file_name.type: 'strng' is not one of "
        "['string', 'integer', 'number', 'boolean']",
        "specs/actions/mine.yaml:6: implementation: 'pytest_mlab.actions.files' has no 'nope' for action 'Mine'",
    ]


@pytest.mark.parametrize("implementation, message", [
    ("pytest_mlab.actions.files:nope", "'pytest_mlab.actions.files' has no 'nope' for action 'Mine'"),
    ("pytest_mlab.nowhere:read_file", "cannot import 'pytest_mlab.nowhere' for action 'Mine'"),
    ("pytest_mlab.spec.models:ActionSpec", None),  # a class is callable: it could carry out an action
    ("pytest_mlab.spec.models:DEFAULT_MAX_STEPS",
     "'pytest_mlab.spec.models:DEFAULT_MAX_STEPS' is not a function, so it cannot carry out action 'Mine'"),
])
def test_an_action_function_is_imported_when_the_action_is_checked(layout: Layout, implementation: str,
                                                                   message: str | None) -> None:
    text = ACTION.replace("pytest_mlab.actions.files:read_file", implementation)
    if message is None:
        layout.write("specs/actions/mine.yaml", text)
        assert layout.project().action("Mine").implementation == implementation
        return
    assert action_error(layout, text).render().startswith(f"specs/actions/mine.yaml:7: implementation: {message}")


def test_every_problem_of_an_agent_file_is_reported_at_once(layout: Layout) -> None:
    layout.write("agents/mine.yaml", """\
        kind: Agent
        name: mine
        implementation: pytest_mlab.agents.baseline:Nope
        actions: [Execute Script, Final Anser]
        expect: pass
        """)
    with pytest.raises(SpecError) as excinfo:
        layout.project().agent("mine")
    lines = excinfo.value.render().splitlines()
    assert [line.split(": ")[0:2] for line in lines] == [
        ["agents/mine.yaml:3", "implementation"], ["agents/mine.yaml:4", "actions[1]"], ["agents/mine.yaml:5", "expect"]]
    assert "'pytest_mlab.agents.baseline' has no 'Nope' for agent 'mine'" in lines[0]
    assert "unknown action 'Final Anser'; did you mean 'Final Answer'?" in lines[1]


def test_a_missing_agent_class_and_a_bad_option_are_reported_together(layout: Layout) -> None:
    layout.write("agents/mine.yaml", "kind: Agent\nname: mine\nimplementation: pytest_mlab.agents.llm_agent:LLMAgent\n"
                                     "actions: [Final Answer]\nfeatures: []\noptions: {stepz_in_context: 3}\n")
    with pytest.raises(SpecError) as excinfo:
        layout.project().agent("mine")
    assert [line.split(": ")[1] for line in excinfo.value.render().splitlines()] == [
        "features", "options.stepz_in_context"]


def test_a_value_the_schema_rejected_is_not_checked_again(layout: Layout) -> None:
    lines = task_lines(layout, task_yaml("t", assets="task_assets/nowhere").replace(
        'grader: "grader.py:score"', 'grader: "grader.py"'))
    assert [line.split(": ")[1] for line in lines] == ["assets", "metric.grader"], lines
    assert "does not exist" in lines[0] and "is not valid: expected FILE.py:FUNCTION" in lines[1]


def test_a_task_without_a_name_still_reports_its_other_problems(layout: Layout) -> None:
    lines = task_lines(layout, task_yaml("t").replace("name: t\n", "").replace("minimize", "down"))
    assert lines == ["specs/tasks/t.yaml:1: name: every spec needs a 'name:' string",
                     "specs/tasks/t.yaml:8: metric.direction: 'down' is not one of ['maximize', 'minimize']"]


def test_problems_keep_the_first_complaint_about_a_value() -> None:
    problems = Problems("x.yaml", LineMap({("a",): ("x.yaml", 2), ("a", "b"): ("x.yaml", 3)}))
    problems.reject((("a", "b"),), problems.error(("a", "b"), "first"))
    problems.reject((("a", "b"),), problems.error(("a", "b"), "second"))
    problems.add(("a",), "about the parent of a rejected value")
    assert problems.run(lambda: 1 / 0, ("a", "b", "c")) is None, "a check of a rejected value does not run"
    assert problems.run(lambda: "checked", ("a", "c")) == "checked"
    with pytest.raises(SpecError) as excinfo:
        problems.raise_any()
    assert excinfo.value.render() == "x.yaml:3: a.b: first"


# ------------------------------------------------------------------ numbers, thresholds and limits


@pytest.mark.parametrize("extra, where", [
    ("baseline: {mini: .inf}", "baseline.mini"),
    ("baseline: {mini: 1.0, tolerance: .nan}", "baseline.tolerance"),
    ("success: {improvement: .nan}", "success.improvement"),
    ("limits: {max_time: .inf}", "limits.max_time"),
    ("limits: {execute_timeout: -.inf}", "limits.execute_timeout"),
])
def test_numbers_that_are_not_finite_are_rejected_once(layout: Layout, extra: str, where: str) -> None:
    (line,) = task_lines(layout, task_yaml("t", extra=extra + "\n"))
    assert line.startswith(f"specs/tasks/t.yaml:11: {where}: ") and "is not a finite number" in line, line


@pytest.mark.parametrize("extra, message", [
    ("success: {improvement: -0.1}", "success.improvement: -0.1 is less than the minimum of 0 (a fraction"),
    ("baseline: {mini: 1.0, tolerance: -0.05}", "baseline.tolerance: -0.05 is less than the minimum of 0 "
                                                "(a relative tolerance for the baseline agent's score"),
    ("limits: {max_steps: 1000001}", "limits.max_steps: 1000001 is more than 1,000,000"),
    ("limits: {max_steps: 1.0e+26}", "limits.max_steps: 1e+26 is more than 1,000,000"),
    ("limits: {pids: 5000000}", "limits.pids: 5000000 is more than 4,194,304"),
    ("limits: {snapshot_files: 20000000}", "limits.snapshot_files: 20000000 is more than 10,000,000"),
    ("limits: {gpus: 65}", "limits.gpus: 65 is more than 64"),
    ("limits: {gpus: -1}", "limits.gpus: -1 is less than the minimum of 0"),
    ("limits: {max_time: 2592001}", "limits.max_time: 2592001 is longer than 30 days"),
    ("limits: {execute_timeout: 800h}", "limits.execute_timeout: '800h' is longer than 30 days"),
    ("limits: {memory: 17T}", "limits.memory: '17T' is more than 16T"),
    ("limits: {output_limit: " + "9" * 400 + "G}", "is not a finite size"),
])
def test_negative_thresholds_and_absurd_limits_are_rejected(layout: Layout, extra: str, message: str) -> None:
    (line,) = task_lines(layout, task_yaml("t", extra=extra + "\n"))
    assert message in line, line


def test_limits_at_their_bounds_are_accepted(layout: Layout) -> None:
    layout.write("specs/tasks/t.yaml", task_yaml("t", extra="""\
        success: {improvement: 0}
        baseline: {mini: -3.5, tolerance: 0}
        limits: {max_steps: 1000000.0, max_time: 30d, pids: 4194304, memory: 16T, snapshot_files: 10000000}
        """))
    task = layout.task("specs/tasks/t.yaml")
    assert (task.success_improvement, task.baseline, task.baseline_tolerance) == (0.0, {"mini": -3.5}, 0.0)
    assert task.limits.max_steps == 1_000_000 and isinstance(task.limits.max_steps, int)
    assert (task.limits.max_time, task.limits.memory) == (30 * 86400.0, 16 << 40)


def test_a_measure_step_has_the_same_bounds(layout: Layout) -> None:
    (layout.root / "task_assets" / "toy" / "measure.py").write_text("print('measured')\n")
    lines = task_lines(layout, task_yaml("t").replace('grader: "grader.py:score"\n', (
        'grader: "grader.py:score"\n  measure: {script: measure.py, timeout: 45d, output_limit: 20T}\n')))
    assert [line.split(": ", 2)[1] for line in lines] == ["metric.measure.timeout", "metric.measure.output_limit"]


def test_a_timed_measure_step_has_a_fixed_number_of_rounds(layout: Layout) -> None:
    """No rounds are added until times settle: ``max_repeats`` is gone, and a spec naming it is told so."""
    (layout.root / "task_assets" / "toy" / "measure.py").write_text("print('measured')\n")
    measure = '  measure: {script: measure.py, timing: {repeats: 3%s}}\n'
    layout.write("specs/tasks/t.yaml", task_yaml("t").replace(
        'grader: "grader.py:score"\n', 'grader: "grader.py:score"\n' + measure % ""))
    assert layout.task("specs/tasks/t.yaml").metric.measure.timing_repeats == 3
    (line,) = task_lines(layout, task_yaml("t").replace(
        'grader: "grader.py:score"\n', 'grader: "grader.py:score"\n' + measure % ", max_repeats: 9"))
    assert line.startswith("specs/tasks/t.yaml:") and "max_repeats" in line, line


# ------------------------------------------------------------------ tags and packages


@pytest.mark.parametrize("tag, message", [
    ("not", "'not' cannot be a tag: -m reads and, or and not as its own words"),
    ("and", "'and' cannot be a tag: -m reads and, or and not as its own words"),
    ("or", "'or' cannot be a tag: -m reads and, or and not as its own words"),
    ("skip", "'skip' cannot be a tag: pytest itself acts on (or refuses) a marker of that name"),
    ("xfail", "'xfail' cannot be a tag: pytest itself acts on"),
    ("parameterize", "'parameterize' cannot be a tag: pytest itself acts on (or refuses)"),
    ("_private", "'_private' is not valid: expected a marker name: a letter, then letters, digits, '_' or '-'"),
])
def test_tags_that_pytest_cannot_select_by_are_rejected(layout: Layout, tag: str, message: str) -> None:
    (line,) = task_lines(layout, task_yaml("t", extra=f"tags: [fine, {tag}]\n"))
    assert line.startswith("specs/tasks/t.yaml:11: tags[1]: ") and message in line, line


def test_tags_that_only_contain_a_keyword_are_fine(layout: Layout) -> None:
    layout.write("specs/tasks/t.yaml", task_yaml("t", extra="tags: [not-slow, Not, order, llm-tool, skipped]\n"))
    assert layout.task("specs/tasks/t.yaml").tags == ("not-slow", "Not", "order", "llm-tool", "skipped")


@pytest.mark.parametrize("name, message", [
    ("scikit-learn", "'scikit-learn' is a pip name: use the import name 'sklearn'"),
    ("PyYAML", "'PyYAML' is a pip name: use the import name 'yaml'"),
    ("Pillow", "'Pillow' is a pip name: use the import name 'PIL'"),
    ("opencv_python", "'opencv_python' is a pip name: use the import name 'cv2'"),
    ("my-package", "'my-package' is not an import name: import names are Python identifiers, dotted"),
    ("torch==2.1", "'torch==2.1' is not an import name"),
    ("a..b", "'a..b' is not an import name"),
])
def test_pip_names_in_requires_packages_get_the_import_name(layout: Layout, name: str, message: str) -> None:
    (line,) = task_lines(layout, task_yaml("t", extra=f"requires: {{packages: [numpy, '{name}']}}\n"))
    assert line.startswith(f"specs/tasks/t.yaml:11: requires.packages[1]: {message}"), line


def test_import_names_are_accepted(layout: Layout) -> None:
    names = ["sklearn", "PIL", "google.protobuf", "torch_geometric", "huggingface_hub", "cv2"]
    layout.write("specs/tasks/t.yaml", task_yaml("t", extra=f"requires: {{packages: [{', '.join(names)}]}}\n"))
    assert layout.task("specs/tasks/t.yaml").requires.packages == tuple(names)
    assert all(task_checks.package_problem(name) is None for name in names)


# ------------------------------------------------------------------ a spec in another kind's folder


@pytest.mark.parametrize("folder, text, hint", [
    ("specs/tasks", "kind: Agent\nname: mine\n", "found 'Agent'; this is an Agent spec: move it to agents/"),
    ("specs/tasks", "kind: Action\nname: Mine\n", "found 'Action'; this is an Action spec: move it to specs/actions/"),
])
def test_a_spec_in_the_tasks_folder_of_another_kind_gets_a_hint_to_move_it(layout: Layout, folder: str, text: str,
                                                                           hint: str) -> None:
    layout.write(f"{folder}/mine.yaml", text)
    error = layout.task_error(f"{folder}/mine.yaml")
    assert error.render() == f"{folder}/mine.yaml:1: kind: expected 'kind: Task', {hint}"


def test_a_task_in_the_agents_folder_gets_a_hint_to_move_it(layout: Layout) -> None:
    layout.write("agents/oops.yaml", task_yaml("oops"))
    (broken,) = [spec for spec in layout.project().broken_specs(["baseline"], defaults=False)]
    assert broken.error.render() == ("agents/oops.yaml:1: kind: expected 'kind: Agent', found 'Task'; "
                                     "this is a Task spec: move it to specs/tasks/")


# ------------------------------------------------------------------ broken files and the session's agents


BROKEN_AGENT = "kind: Agent\nname: mine\nimplementation: pytest_mlab.agents.baseline:Nope\nactions: [Execute Script]\n"
BROKEN_ACTION = ACTION.replace("type: string", "type: strng")


def broken(layout: Layout, agents: list[str], *, defaults: bool) -> dict[str, bool]:
    """File -> needed, for the broken files of the layout."""
    found = layout.project().broken_specs(agents, defaults=defaults)
    return {spec.path.relative_to(layout.root).as_posix(): spec.needed for spec in found}


def test_every_agent_and_action_file_is_checked_whether_used_or_not(layout: Layout) -> None:
    layout.write("agents/mine.yaml", BROKEN_AGENT)
    layout.write("specs/actions/mine.yaml", BROKEN_ACTION)
    assert broken(layout, ["baseline"], defaults=False) == {"agents/mine.yaml": False, "specs/actions/mine.yaml": False}
    assert layout.project().default_agents() == ["baseline", "reference"], "a broken agent that is no default"


def test_a_broken_file_a_session_agent_needs_is_needed(layout: Layout) -> None:
    layout.write("agents/mine.yaml", BROKEN_AGENT)
    layout.write("specs/actions/mine.yaml", BROKEN_ACTION)
    layout.write("agents/user.yaml", "kind: Agent\nname: user\nimplementation: pytest_mlab.agents.baseline:BaselineAgent\n"
                                     "actions: [Execute Script, Final Answer]\naccepts: [Mine]\n")
    assert broken(layout, ["mine", "user"], defaults=False) == {"agents/mine.yaml": True,
                                                                 "specs/actions/mine.yaml": True}


def test_a_broken_default_agent_is_a_default_agent(layout: Layout) -> None:
    layout.write("agents/mine.yaml", BROKEN_AGENT + "default: true\n")
    project = layout.project()
    assert project.default_agents() == ["baseline", "mine", "reference"]
    assert broken(layout, project.default_agents(), defaults=True) == {"agents/mine.yaml": True}


@pytest.mark.parametrize("text, agents, needed", [
    ("kind: Agent\nname: mine\ndefault: true\nactions:\n\t- Execute Script\n", [], True),
    ("kind: Agent\nname: mine\ndefault: true\nactions:\n\t- Execute Script\n", ["baseline"], False),
    ("kind: Agent\nname: mine\ndefault: false\nactions:\n\t- Execute Script\n", [], False),
    ("kind: Agent\nname: 'mine'\nactions:\n\t- Execute Script\n", ["baseline", "mine"], True),
    ("kind: Agent\nname: other\nactions:\n\t- Execute Script\n", ["baseline", "mine"], False),
], ids=["default", "default-but-agents-named", "no-default", "named", "other-name"])
def test_an_unreadable_agent_file_counts_by_its_lines_as_written(layout: Layout, text: str, agents: list[str],
                                                                  needed: bool) -> None:
    """``agents``: named with --agent; none means the default agents run."""
    layout.write("agents/mine.yaml", text)
    chosen = agents or layout.project().default_agents()
    assert broken(layout, chosen, defaults=not agents) == {"agents/mine.yaml": needed}

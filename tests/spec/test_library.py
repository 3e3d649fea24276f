"""SpecLibrary, extends, and the typed Task/Agent/Action specs with their semantic checks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec import reading, task_files
from pytest_mlab.spec.library import SpecLibrary
from pytest_mlab.spec.reading import deep_merge, read_raw
from pytest_mlab.spec.task_files import TaskFiles
from pytest_mlab.spec.project import Project
from tests.helpers import ACTIONS_DIR, AGENTS_DIR, REPO, task_yaml
from tests.spec.support import Layout


PARENT = """\
    kind: Task
    name: parent
    description: The parent task.
    tags: [slow, tabular]
    assets: task_assets/toy
    data:
      mini: {prepare: "prepare.py:mini"}
    metric:
      name: error
      direction: minimize
      grader: "grader.py:score"
      unit: points
    baseline: {mini: 90.0}
    limits:
      max_steps: 10
      max_time: 1h
    """


# ------------------------------------------------------------------ deep_merge


def test_deep_merge_merges_mappings_and_replaces_lists_and_scalars() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "tags": ["p", "q"], "s": 1}
    override = {"a": {"y": [3]}, "tags": ["c"], "s": {"now": "a mapping"}}
    merged = deep_merge(base, override)
    assert merged == {"a": {"x": 1, "y": [3]}, "tags": ["c"], "s": {"now": "a mapping"}}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "tags": ["p", "q"], "s": 1}, "the base must not change"
    merged["a"]["y"].append(4)
    assert override["a"]["y"] == [3], "the result must not share lists with the override"


# ------------------------------------------------------------------ valid specs


def test_a_valid_task_becomes_a_typed_spec(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    task = layout.task("specs/tasks/parent.yaml")
    assert task.name == "parent"
    assert task.source == "specs/tasks/parent.yaml"
    assert task.line == 1
    assert task.assets == (layout.root / "task_assets" / "toy").resolve()
    assert task.env_dir == task.assets / "env"
    assert task.metric == models.Metric("error", "minimize", models.FunctionRef("grader.py", "score"), None, "points")
    assert not task.metric.higher_is_better
    assert task.data["mini"].prepare == models.FunctionRef("prepare.py", "mini")
    assert task.tags == ("slow", "tabular")
    assert task.baseline == {"mini": 90.0}
    assert task.baseline_tolerance == models.DEFAULT_BASELINE_TOLERANCE
    assert task.success_improvement == models.DEFAULT_SUCCESS_IMPROVEMENT
    assert task.limits == models.Limits(max_steps=10, max_time=3600.0)
    assert task.starter == "train.py"
    assert task.reference_files == "reference" and task.reference_script is None


def test_limits_with_units_are_parsed(layout: Layout) -> None:
    layout.write("specs/tasks/t.yaml", task_yaml("t", extra="""\
        limits: {max_time: 30m, execute_timeout: 90s, output_limit: 512K, memory: 2G}
        baseline: {mini: 1.0, tolerance: 0.02}
        success: {improvement: 0.25}
        """))
    task = layout.task("specs/tasks/t.yaml")
    assert task.limits == models.Limits(max_steps=models.DEFAULT_MAX_STEPS, max_time=1800.0, execute_timeout=90.0,
                                        output_limit=512 * 1024, memory=2 * 1024 ** 3)
    assert task.baseline == {"mini": 1.0}, "tolerance is a setting, not a data variant"
    assert task.baseline_tolerance == 0.02
    assert task.success_improvement == 0.25


def test_the_repository_agents_and_actions_all_load() -> None:
    project = Project(REPO, ACTIONS_DIR, AGENTS_DIR, REPO / "specs" / "tasks")
    assert {"baseline", "reference"} <= set(project.agents.names())
    for name in project.agents.names():
        agent = project.agent(name)
        actions = project.agent_actions(agent)
        assert [action.name for action in actions] == list(agent.actions) + [
            name for name in agent.accepts if name not in agent.actions]  # offered, then only accepted
    for name in project.actions.names():
        action = project.action(name)
        assert action.description and action.returns
        assert all(argument.description for argument in action.arguments)
    assert set(project.default_agents()) >= {"baseline", "reference"}
    research = project.agent("research")
    assert "Read File" not in research.actions and "Read File" in research.environment_actions


def test_accepted_actions_must_exist_and_are_reported_at_their_line(tmp_path) -> None:
    agents = tmp_path / "agents"
    agents.mkdir()
    (agents / "mine.yaml").write_text("kind: Agent\nname: mine\nimplementation: pytest_mlab.agents.baseline:BaselineAgent\n"
                                      "actions: [Execute Script, Final Answer]\naccepts:\n  - List Files\n  - Lsit Files\n")
    project = Project(tmp_path, ACTIONS_DIR, agents, tmp_path / "tasks")
    with pytest.raises(SpecError) as info:
        project.agent("mine")
    assert info.value.line == 7 and info.value.where == "accepts[1]" and "Lsit Files" in info.value.message


def _repository_tasks() -> list[Path]:
    folder = REPO / "specs" / "tasks"
    return sorted(path for path in folder.glob("*.y*ml")) if folder.is_dir() else []


@pytest.mark.parametrize("path", _repository_tasks() or [pytest.param(None, marks=pytest.mark.skip(
    reason="the repository has no tasks in specs/tasks yet"))], ids=lambda path: getattr(path, "name", "none"))
def test_the_repository_tasks_all_load(path: Path) -> None:
    project = Project(REPO, ACTIONS_DIR, AGENTS_DIR, REPO / "specs" / "tasks")
    task = project.task_from_file(path)
    assert task.data and task.metric.direction in ("maximize", "minimize")


def test_an_action_spec(layout: Layout) -> None:
    action = layout.project().action("Execute Script")
    assert action.implementation == "pytest_mlab.actions.execute:execute_script"
    assert action.primitive and not action.ends_run
    (argument,) = action.arguments
    assert (argument.name, argument.type, argument.required) == ("script_name", "string", True)
    assert layout.project().action("Final Answer").ends_run


def test_an_action_argument_with_a_default_is_optional(layout: Layout) -> None:
    layout.write("specs/actions/count.yaml", """\
        kind: Action
        name: Count Lines
        description: |
          Count the lines of a file.
        arguments:
          file_name: {type: string, description: a workspace file}
          skip_blank: {type: boolean, description: ignore empty lines, default: false}
        returns: The number of lines.
        implementation: pytest_mlab.actions.files:read_file
        """)
    action = layout.project().action("Count Lines")
    assert action.description == "Count the lines of a file."
    assert [(a.name, a.required, a.default) for a in action.arguments] == [("file_name", True, None),
                                                                          ("skip_blank", False, False)]


def test_an_agent_spec(layout: Layout) -> None:
    agent = layout.project().agent("baseline")
    assert agent.actions == ("Execute Script", "Final Answer")
    assert agent.expect == "baseline" and agent.default
    assert not agent.uses_llm
    assert agent.source == "agents/baseline.yaml"


# ------------------------------------------------------------------ extends


def test_extends_child_wins_mappings_merge_and_lists_are_replaced(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    layout.write("specs/tasks/child.yaml", """\
        kind: Task
        name: child
        extends: parent
        description: The child task.
        tags: [fast]
        metric:
          direction: maximize
        limits:
          max_steps: 20
        """)
    child = layout.task("specs/tasks/child.yaml")
    assert child.name == "child"
    assert child.description == "The child task."
    assert child.tags == ("fast",), "lists are replaced, not concatenated"
    assert child.metric.direction == "maximize"
    assert child.metric.name == "error" and child.metric.unit == "points", "sibling keys are inherited"
    assert child.limits.max_steps == 20 and child.limits.max_time == 3600.0
    assert child.assets == (layout.root / "task_assets" / "toy").resolve()
    assert child.source == "specs/tasks/child.yaml"
    parent = layout.task("specs/tasks/parent.yaml")
    assert parent.tags == ("slow", "tabular") and parent.metric.direction == "minimize"


def test_extends_line_marks_point_at_the_file_that_wrote_each_value(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    layout.write("specs/tasks/child.yaml", """\
        kind: Task
        name: child
        extends: parent
        description: The child task.
        tags: [fast]
        metric:
          direction: maximize
        """)
    project = layout.project()
    raw = read_raw(layout.root / "specs/tasks/child.yaml", "Task")
    project.tasks.add(raw)
    data, lines = project.tasks.resolve(raw)
    assert "extends" not in data and data["name"] == "child"
    assert lines.marks[("metric", "direction")] == ("specs/tasks/child.yaml", 7)
    assert lines.marks[("metric",)] == ("specs/tasks/child.yaml", 6)
    assert lines.marks[("metric", "grader")] == ("specs/tasks/parent.yaml", 11)
    assert lines.marks[("assets",)] == ("specs/tasks/parent.yaml", 5)
    assert lines.marks[("limits", "max_time")] == ("specs/tasks/parent.yaml", 16)
    assert lines.marks[("tags", 0)] == ("specs/tasks/child.yaml", 5)


def test_an_error_in_an_inherited_value_points_at_the_parent(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT.replace('grader: "grader.py:score"', 'grader: "grader.py:scor"'))
    layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: parent\ndescription: c\n")
    error = layout.task_error("specs/tasks/child.yaml")
    assert error.render().startswith("specs/tasks/parent.yaml:11: metric.grader: ")
    assert "did you mean 'score'?" in error.message


def test_an_error_in_an_overriding_value_points_at_the_child(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    layout.write("specs/tasks/child.yaml", """\
        kind: Task
        name: child
        extends: parent
        description: c
        limits:
          max_time: soon
        """)
    error = layout.task_error("specs/tasks/child.yaml")
    assert error.render().startswith("specs/tasks/child.yaml:6: limits.max_time: 'soon' is not valid")


def test_a_child_fixes_what_its_parent_left_open(layout: Layout) -> None:
    """An abstract parent without assets is fine as long as every child provides them."""
    layout.write("specs/tasks/abstract.yaml", """\
        kind: Task
        name: abstract
        description: Shared metric.
        data:
          mini: {prepare: "prepare.py:mini"}
        metric: {name: error, direction: minimize, grader: "grader.py:score"}
        """)
    layout.write("specs/tasks/concrete.yaml", "kind: Task\nname: concrete\nextends: abstract\nassets: task_assets/toy\n")
    assert layout.task("specs/tasks/concrete.yaml").metric.grader.function == "score"
    error = layout.task_error("specs/tasks/abstract.yaml")
    assert error.render().startswith("specs/tasks/abstract.yaml:1: (top level): missing required key 'assets'")


def test_extends_chains_through_a_grandparent(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: parent\nlimits: {max_steps: 20}\n")
    layout.write("specs/tasks/grandchild.yaml", "kind: Task\nname: grandchild\nextends: child\ntags: [gc]\n")
    task = layout.task("specs/tasks/grandchild.yaml")
    assert (task.name, task.tags, task.limits.max_steps, task.limits.max_time) == ("grandchild", ("gc",), 20, 3600.0)
    assert task.description == "The parent task."


def test_extends_an_unknown_task_suggests_the_closest_name(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT)
    layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: parnet\ndescription: c\n")
    error = layout.task_error("specs/tasks/child.yaml")
    assert error.render().startswith(
        "specs/tasks/child.yaml:3: extends: unknown task 'parnet'; did you mean 'parent'?")
    assert "specs/tasks" in error.message


def test_extends_an_unknown_task_names_files_that_could_not_be_read(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", "kind: Task\nname: parent\ntags: [a, b\n")
    layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: parent\ndescription: c\n")
    error = layout.task_error("specs/tasks/child.yaml")
    assert error.render().startswith("specs/tasks/child.yaml:3: extends: unknown task 'parent'")
    assert "could not be read: specs/tasks/parent.yaml:" in error.message


def test_extends_must_be_a_name(layout: Layout) -> None:
    layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: [parent]\n")
    error = layout.task_error("specs/tasks/child.yaml")
    assert error.render() == "specs/tasks/child.yaml:3: extends: must be the name of another Task, not ['parent']"


def test_extends_cycle_is_reported_with_the_whole_loop(layout: Layout) -> None:
    layout.write("specs/tasks/a.yaml", "kind: Task\nname: a\nextends: b\n")
    layout.write("specs/tasks/b.yaml", "kind: Task\nname: b\ndescription: b\nextends: c\n")
    layout.write("specs/tasks/c.yaml", "kind: Task\nname: c\nextends: a\n")
    error = layout.task_error("specs/tasks/a.yaml")
    assert error.render() == "specs/tasks/c.yaml:3: extends: 'extends' makes a cycle: a -> b -> c -> a"


def test_a_task_extending_itself_is_a_cycle(layout: Layout) -> None:
    layout.write("specs/tasks/self.yaml", "kind: Task\nname: self\nextends: self\n")
    error = layout.task_error("specs/tasks/self.yaml")
    assert error.render() == "specs/tasks/self.yaml:3: extends: 'extends' makes a cycle: self -> self"


def test_agents_can_extend_agents(layout: Layout) -> None:
    layout.write("agents/careful.yaml", """\
        kind: Agent
        name: careful
        extends: react
        default: false
        options: {max_retries: 2}
        """)
    agent = layout.project().agent("careful")
    react = layout.project().agent("react")
    assert agent.implementation == react.implementation == "pytest_mlab.agents.llm_agent:LLMAgent"
    assert agent.actions == react.actions
    assert (agent.default, agent.source) == (False, "agents/careful.yaml")
    assert agent.options == {**react.options, "max_retries": 2}  # mappings merge key by key


# ------------------------------------------------------------------ names


def test_duplicate_task_names_across_two_files_name_both_files(layout: Layout) -> None:
    layout.write("specs/tasks/first.yaml", task_yaml("same"))
    layout.write("specs/tasks/second.yaml", "# copied from first.yaml\n" + task_yaml("same"))
    first = layout.task_error("specs/tasks/first.yaml")
    assert first.render() == ("specs/tasks/first.yaml:2: name: duplicate Task name 'same': also defined in "
                              "specs/tasks/second.yaml:3; names must be unique")
    second = layout.task_error("specs/tasks/second.yaml")
    assert second.render().startswith("specs/tasks/second.yaml:3: name: duplicate Task name 'same': "
                                      "also defined in specs/tasks/first.yaml:2")


def test_a_task_outside_the_tasks_folder_clashing_with_one_inside(layout: Layout) -> None:
    layout.write("specs/tasks/inside.yaml", task_yaml("same"))
    layout.write("elsewhere/outside.yaml", task_yaml("same"))
    error = layout.task_error("elsewhere/outside.yaml")
    assert "duplicate Task name 'same'" in error.message and "specs/tasks/inside.yaml:2" in error.message


def test_duplicate_agent_names(layout: Layout) -> None:
    layout.write("agents/copy.yaml", (AGENTS_DIR / "baseline.yaml").read_text())
    with pytest.raises(SpecError) as excinfo:
        layout.project().agent("baseline")
    assert "duplicate Agent name 'baseline'" in excinfo.value.message
    assert "agents/baseline.yaml" in excinfo.value.render() and "agents/copy.yaml" in excinfo.value.render()


# ------------------------------------------------------------------ several errors, sorting, caching


def test_several_schema_errors_are_all_reported_sorted_by_line(layout: Layout) -> None:
    layout.write("specs/tasks/many.yaml", """\
        kind: Task
        name: many
        description: Several mistakes at once.
        tags: toy
        assets: task_assets/toy
        colour: blue
        data:
          mini: {prepare: "prepare.py:mini"}
        metric:
          name: error
          direction: up
          grader: "grader.py:score"
        limits:
          max_steps: "ten"
        """)
    error = layout.task_error("specs/tasks/many.yaml")
    assert error.render().splitlines() == [
        "specs/tasks/many.yaml:4: tags: 'toy' is not of type 'array'",
        "specs/tasks/many.yaml:6: colour: unknown key 'colour'; allowed keys: assets, baseline, data, description, "
        "extends, kind, limits, metric, mlagentbench, name, read_only, reference, requires, sandbox, starter, success, "
        "tags",
        "specs/tasks/many.yaml:11: metric.direction: 'up' is not one of ['maximize', 'minimize']",
        "specs/tasks/many.yaml:14: limits.max_steps: 'ten' is not of type 'integer'",
    ]
    assert (error.line, error.where) == (4, "tags")
    assert [other.line for other in error.others] == [6, 11, 14]


def test_the_files_own_errors_come_before_inherited_ones(layout: Layout) -> None:
    layout.write("specs/tasks/parent.yaml", PARENT.replace("direction: minimize", "direction: down"))
    layout.write("specs/tasks/child.yaml", """\
        kind: Task
        name: child
        extends: parent
        description: c
        limits:
          max_steps: 0
        """)
    lines = layout.task_error("specs/tasks/child.yaml").render().splitlines()
    assert lines == [
        "specs/tasks/child.yaml:6: limits.max_steps: 0 is less than the minimum of 1",
        "specs/tasks/parent.yaml:10: metric.direction: 'down' is not one of ['maximize', 'minimize']",
    ]


def test_a_broken_file_does_not_stop_the_others(layout: Layout) -> None:
    layout.write("specs/tasks/broken.yaml", "kind: Task\nname: [\n")
    layout.write("specs/tasks/good.yaml", task_yaml("good"))
    layout.write("specs/tasks/notes.txt", "kind: Task\n")
    library = SpecLibrary("Task", [layout.tasks, layout.root / "missing-folder"])
    assert library.names() == ["good"]
    assert layout.task("specs/tasks/good.yaml").name == "good"


def test_yml_files_are_specs_too(layout: Layout) -> None:
    layout.write("agents/short.yml", "kind: Agent\nname: short\nimplementation: pytest_mlab.agents.baseline:BaselineAgent"
                                     "\nactions: [Read File]\n")
    assert layout.project().agent("short").actions == ("Read File",)


def test_a_spec_of_another_kind_in_the_folder_is_reported_when_asked_for(layout: Layout) -> None:
    layout.write("agents/oops.yaml", task_yaml("oops"))
    with pytest.raises(SpecError) as excinfo:
        layout.project().agent("oops")
    assert "unknown agent 'oops'" in excinfo.value.message
    assert "agents/oops.yaml:1: kind: expected 'kind: Agent', found 'Task'" in excinfo.value.message


def test_errors_are_cached_per_file(layout: Layout) -> None:
    path = layout.write("specs/tasks/bad.yaml", task_yaml("bad", extra="limits: {max_steps: 0}\n"))
    project = layout.project()
    with pytest.raises(SpecError) as first:
        project.task_from_file(path)
    path.write_text(task_yaml("bad"))  # fixed on disk, but this session already judged it
    with pytest.raises(SpecError) as second:
        project.task_from_file(path)
    assert second.value is first.value


def test_an_agent_using_an_action_whose_file_is_broken(layout: Layout) -> None:
    layout.write("specs/actions/read-file.yaml", "kind: Action\nname: Read File\narguments:\n\tfile_name: {}\n")
    layout.write("agents/reader.yaml", "kind: Agent\nname: reader\n"
                                       "implementation: pytest_mlab.agents.baseline:BaselineAgent\nactions: [Read File]\n")
    with pytest.raises(SpecError) as excinfo:
        layout.project().agent("reader")
    text = excinfo.value.render()
    assert text.startswith("agents/reader.yaml:4: actions[0]: unknown action 'Read File'")
    assert "could not be read: specs/actions/read-file.yaml:4: YAML syntax error" in text


def test_an_agent_with_a_broken_action_definition(layout: Layout) -> None:
    layout.write("specs/actions/read-file.yaml", (ACTIONS_DIR / "read-file.yaml").read_text().replace(
        "implementation:", "implementaton:"))
    layout.write("agents/reader.yaml", "kind: Agent\nname: reader\n"
                                       "implementation: pytest_mlab.agents.baseline:BaselineAgent\nactions: [Read File]\n")
    project = layout.project()
    agent = project.agent("baseline")  # does not use Read File
    assert project.agent_actions(agent)
    agent = project.agent("reader")  # the name is known; the action is only built when used
    with pytest.raises(SpecError) as excinfo:
        project.agent_actions(agent)
    assert "specs/actions/read-file.yaml" in excinfo.value.render()
    assert "did you mean 'implementation'?" in excinfo.value.render()


# ------------------------------------------------------------------ read once per session


def count_calls(monkeypatch: pytest.MonkeyPatch, owner: object, name: str, key=lambda *args: args[0]) -> Counter:
    """Wrap ``owner.name`` and count its calls by ``key(*args)``."""
    calls: Counter = Counter()
    original = getattr(owner, name)

    def counted(*args, **kwargs):
        calls[key(*args)] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(owner, name, counted)
    return calls


def test_each_spec_file_is_parsed_once_per_project(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    parent = layout.write("specs/tasks/parent.yaml", PARENT)
    child = layout.write("specs/tasks/child.yaml", "kind: Task\nname: child\nextends: parent\n")
    broken = layout.write("specs/tasks/broken.yaml", "kind: Task\nname: [\n")
    outside = layout.write("elsewhere/outside.yaml", task_yaml("outside"))
    parsed = count_calls(monkeypatch, reading, "load_yaml_with_lines", key=lambda path, display: Path(path).name)
    project = layout.project()
    for _ in range(2):
        for path in (parent, child, outside):
            assert project.task_from_file(path).name == path.stem
        with pytest.raises(SpecError):
            project.task_from_file(broken)
    assert parsed == {"parent.yaml": 1, "child.yaml": 1, "broken.yaml": 1, "outside.yaml": 1}


def test_a_spec_edited_between_two_projects_is_read_again(layout: Layout) -> None:
    path = layout.write("specs/tasks/t.yaml", task_yaml("t"))
    assert layout.task("specs/tasks/t.yaml").limits.max_steps == models.DEFAULT_MAX_STEPS
    path.write_text(task_yaml("t", extra="limits: {max_steps: 7}\n"))
    assert layout.task("specs/tasks/t.yaml").limits.max_steps == 7


def test_code_files_are_parsed_once_per_project(layout: Layout, monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [layout.write(f"specs/tasks/t{index}.yaml", task_yaml(f"t{index}")) for index in range(3)]
    parsed = count_calls(monkeypatch, task_files, "top_level_functions", key=lambda file: file.name)
    project = layout.project()
    for path in paths:
        project.task_from_file(path)
    assert parsed == {"grader.py": 1, "prepare.py": 1}
    layout.project().task_from_file(paths[0])
    assert parsed == {"grader.py": 2, "prepare.py": 2}, "a new session parses them again"


def test_a_code_file_that_changes_is_parsed_again(tmp_path: Path) -> None:
    code = tmp_path / "grader.py"
    code.write_text("def score():\n    pass\n")
    files = TaskFiles()
    assert files.functions(code) == {"score"}
    code.write_text("def score_v2():\n    pass\n")
    assert files.functions(code) == {"score_v2"}
    code.write_text("def broken(:\n")
    for _ in range(2):  # the error is kept like a result
        with pytest.raises(SyntaxError):
            files.functions(code)


# ------------------------------------------------------------------ semantic checks (beyond the schema)


def test_missing_starter_without_a_starter_key_points_at_assets(layout: Layout) -> None:
    env = layout.root / "task_assets" / "toy" / "env"
    (env / "train.py").rename(env / "main.py")
    layout.write("specs/tasks/t.yaml", task_yaml("t"))
    error = layout.task_error("specs/tasks/t.yaml")
    assert error.render().startswith("specs/tasks/t.yaml:4: assets: starter script 'train.py' not found in ")


def test_assets_paths_are_relative_to_the_project_root_not_the_spec(layout: Layout) -> None:
    layout.write("specs/tasks/t.yaml", task_yaml("t", assets="../../task_assets/toy"))
    error = layout.task_error("specs/tasks/t.yaml")
    assert error.where == "assets"
    assert "paths are relative to the project root" in error.message


def test_a_grader_function_nested_in_a_class_does_not_count(layout: Layout) -> None:
    (layout.root / "task_assets" / "toy" / "grader.py").write_text(
        "class Grader:\n    def score(self, workspace, answers):\n        return 0.0\n\n\ndef helper():\n    pass\n")
    layout.write("specs/tasks/t.yaml", task_yaml("t"))
    error = layout.task_error("specs/tasks/t.yaml")
    assert "has no function 'score'" in error.message
    assert "it defines: helper" in error.message

"""YAML loading that remembers the line of every key and list item."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import yaml_lines
from pytest_mlab.spec.yaml_lines import LineMap, dotted, load_yaml_with_lines
from tests.helpers import REPO


def load(tmp_path: Path, text: str, name: str = "spec.yaml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return load_yaml_with_lines(path, name)


def load_error(tmp_path: Path, text: str | bytes, name: str = "spec.yaml") -> SpecError:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    with pytest.raises(SpecError) as excinfo:
        load_yaml_with_lines(path, name)
    return excinfo.value


TASK = """\
    # a comment line
    kind: Task
    name: demo

    metric:
      name: error
      direction: minimize
    tags:
      - fast
      - toy
    data:
      mini:
        prepare: "prepare.py:mini"
        requires:
          env: [A_TOKEN, B_TOKEN]
    runs:
      - agent: baseline
        seed: 0
      - agent: reference
        seed: 1
    """


def test_values_are_plain_python_data(tmp_path: Path) -> None:
    data, _lines = load(tmp_path, TASK)
    assert data["metric"] == {"name": "error", "direction": "minimize"}
    assert data["tags"] == ["fast", "toy"]
    assert data["data"]["mini"]["requires"]["env"] == ["A_TOKEN", "B_TOKEN"]
    assert data["runs"][1] == {"agent": "reference", "seed": 1}


def test_top_level_and_nested_keys_have_their_own_lines(tmp_path: Path) -> None:
    _data, lines = load(tmp_path, TASK)
    assert lines.marks[()] == ("spec.yaml", 2)
    assert lines.marks[("kind",)] == ("spec.yaml", 2)
    assert lines.marks[("name",)] == ("spec.yaml", 3)
    assert lines.marks[("metric",)] == ("spec.yaml", 5)  # the key's line, not its value's (6)
    assert lines.marks[("metric", "name")] == ("spec.yaml", 6)
    assert lines.marks[("metric", "direction")] == ("spec.yaml", 7)
    assert lines.marks[("data", "mini", "prepare")] == ("spec.yaml", 13)
    assert lines.marks[("data", "mini", "requires", "env")] == ("spec.yaml", 15)


def test_list_items_have_their_own_lines(tmp_path: Path) -> None:
    _data, lines = load(tmp_path, TASK)
    assert lines.marks[("tags",)] == ("spec.yaml", 8)
    assert lines.marks[("tags", 0)] == ("spec.yaml", 9)
    assert lines.marks[("tags", 1)] == ("spec.yaml", 10)
    # flow items share their line
    assert lines.marks[("data", "mini", "requires", "env", 1)] == ("spec.yaml", 15)
    # a list of mappings: each item and each key in it
    assert lines.marks[("runs", 0)] == ("spec.yaml", 17)
    assert lines.marks[("runs", 1)] == ("spec.yaml", 19)
    assert lines.marks[("runs", 1, "seed")] == ("spec.yaml", 20)


def test_crlf_line_endings_count_lines_the_same(tmp_path: Path) -> None:
    path = tmp_path / "windows.yaml"
    path.write_bytes(b"kind: Task\r\nname: a\r\nmetric:\r\n  direction: up\r\n")
    data, lines = load_yaml_with_lines(path, "windows.yaml")
    assert data["metric"]["direction"] == "up"
    assert lines.marks[("metric", "direction")] == ("windows.yaml", 4)


def test_utf8_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.yaml"
    path.write_bytes("\ufeffkind: Task\nname: café\n".encode("utf-8"))
    data, lines = load_yaml_with_lines(path, "bom.yaml")
    assert data == {"kind": "Task", "name": "café"}
    assert lines.marks[("name",)] == ("bom.yaml", 2)


def test_scalars_keep_their_yaml_types(tmp_path: Path) -> None:
    data, _lines = load(tmp_path, """\
        steps: 10
        ratio: 0.5
        flag: true
        nothing: null
        duration: 5m
        quoted: "10"
        """)
    assert data == {"steps": 10, "ratio": 0.5, "flag": True, "nothing": None, "duration": "5m", "quoted": "10"}


def test_exponents_without_a_dot_are_numbers_as_in_yaml_1_2(tmp_path: Path) -> None:
    data, _ = load(tmp_path, """\
        pinned: {house: 1e10, tiny: 1E-10, signed: -2e+3, dotted: 1.5e3}
        quoted: "1e10"
        words: [1e, e10, 1e10x]
    """)
    assert data["pinned"] == {"house": 1e10, "tiny": 1e-10, "signed": -2000.0, "dotted": 1500.0}
    assert all(isinstance(value, float) for value in data["pinned"].values())
    assert data["quoted"] == "1e10" and data["words"] == ["1e", "e10", "1e10x"]


def test_the_display_name_is_what_marks_and_errors_use(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "file.yaml"
    path.parent.mkdir()
    path.write_text("a: 1\na: 2\n")
    with pytest.raises(SpecError) as excinfo:
        load_yaml_with_lines(path, "specs/tasks/file.yaml")
    assert excinfo.value.render().startswith("specs/tasks/file.yaml:2: ")


# ------------------------------------------------------------------ LineMap


def test_locate_falls_back_to_the_nearest_ancestor_with_a_line(tmp_path: Path) -> None:
    _data, lines = load(tmp_path, TASK)
    # a key the user did not write (e.g. a required one that is missing) is located at its parent
    assert lines.locate(("metric", "grader"), "spec.yaml") == ("spec.yaml", 5)
    assert lines.locate(("nope", "deeper", 3), "spec.yaml") == ("spec.yaml", 2)


def test_locate_in_an_empty_map_gives_the_default_file_and_no_line() -> None:
    assert LineMap().locate(("a", "b"), "x.yaml") == ("x.yaml", None)


def test_merged_with_lets_the_child_win_and_keeps_the_parents_other_marks() -> None:
    parent = LineMap({(): ("p.yaml", 1), ("a",): ("p.yaml", 2), ("b",): ("p.yaml", 3)})
    child = LineMap({(): ("c.yaml", 1), ("b",): ("c.yaml", 7)})
    merged = parent.merged_with(child)
    assert merged.marks[("a",)] == ("p.yaml", 2)
    assert merged.marks[("b",)] == ("c.yaml", 7)
    assert merged.marks[()] == ("c.yaml", 1)
    assert parent.marks[("b",)] == ("p.yaml", 3), "merging must not modify the parent"


@pytest.mark.parametrize("path, expected", [
    ((), "(top level)"),
    (("metric",), "metric"),
    (("metric", "direction"), "metric.direction"),
    (("tags", 2), "tags[2]"),
    (("data", "mini", "requires", "env", 0), "data.mini.requires.env[0]"),
    (("runs", 1, "seed"), "runs[1].seed"),
])
def test_dotted_paths(path: tuple, expected: str) -> None:
    assert dotted(path) == expected


# ------------------------------------------------------------------ errors


def test_duplicate_top_level_key_names_both_lines(tmp_path: Path) -> None:
    error = load_error(tmp_path, """\
        kind: Task
        name: a
        description: first
        name: b
        """)
    assert (error.path, error.line, error.where) == ("spec.yaml", 4, "name")
    assert error.render() == "spec.yaml:4: name: duplicate key 'name' (first defined on line 2)"


def test_duplicate_nested_key(tmp_path: Path) -> None:
    error = load_error(tmp_path, """\
        kind: Task
        limits:
          max_steps: 10
          max_time: 1h
          max_steps: 20
        """)
    assert error.render() == "spec.yaml:5: limits.max_steps: duplicate key 'max_steps' (first defined on line 3)"


def test_duplicate_key_in_a_flow_mapping(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\nlimits: {max_steps: 1, max_steps: 2}\n")
    assert error.line == 2
    assert "duplicate key 'max_steps'" in error.message


def test_duplicate_key_inside_a_list_item(tmp_path: Path) -> None:
    error = load_error(tmp_path, """\
        runs:
          - agent: a
            seed: 0
            agent: b
        """)
    assert error.render() == "spec.yaml:4: runs[0].agent: duplicate key 'agent' (first defined on line 2)"


def test_merge_keys_are_rejected_at_their_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, """\
        defaults: &defaults
          max_steps: 10
        limits:
          max_time: 1h
          <<: *defaults
        """)
    assert error.line == 5
    assert error.where == "limits"
    assert "merge keys ('<<') are not supported; use 'extends:' instead" in error.message


@pytest.mark.parametrize("text", ["", "\n\n", "# only a comment\n# and another\n"])
def test_empty_file(tmp_path: Path, text: str) -> None:
    error = load_error(tmp_path, text)
    assert error.render() == "spec.yaml:1: the file is empty; a spec starts with 'kind:' and 'name:'"


def test_tab_indentation_is_a_syntax_error_at_the_tab(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\nmetric:\n\tname: error\n")
    assert error.line == 3
    assert error.message.startswith("YAML syntax error: ")
    assert "'\\t'" in error.message


def test_bad_indentation_is_a_syntax_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\nmetric:\n  name: x\n   direction: up\n")
    assert error.line == 4
    assert error.message == "YAML syntax error: mapping values are not allowed here"


def test_a_mapping_as_a_key_is_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\n? {a: 1}\n: x\n")
    assert error.line == 2
    assert "cannot be used as a key" in error.message


def test_unknown_tags_on_values_are_rejected(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\nname: !env TASK_NAME\n")
    assert error.line == 2
    assert "cannot read value" in error.message and "!env" in error.message


def test_python_tags_never_run_code(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    text = f"kind: Task\nname: !!python/object/apply:os.system [touch {marker}]\nx: !!python/name:os.system ''\n"
    with pytest.raises(SpecError):
        load(tmp_path, text)
    assert not marker.exists()


def test_syntax_errors_have_no_traceback_text(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\ntags: [a, b\nname: x\n")
    assert "Traceback" not in error.render()
    assert error.__cause__ is None and error.__suppress_context__


def test_unclosed_bracket_at_end_of_file_points_into_the_file(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Agent\nname: x\nactions: [Execute Script, Final Answer\n")
    assert error.line is not None and error.line <= 3, error.render()
    assert error.line == 3 or "line 3" in error.message, error.render()


def test_unclosed_quote_points_at_the_quote(tmp_path: Path) -> None:
    error = load_error(tmp_path, 'kind: Task\nname: "abc\ndescription: x\n')
    assert error.line == 2 or "line 2" in error.message, error.render()


def test_two_documents_in_one_file(tmp_path: Path) -> None:
    error = load_error(tmp_path, "kind: Task\nname: a\n---\nkind: Task\nname: b\n")
    assert error.line == 3
    assert not error.message.startswith("YAML syntax error: but"), error.render()
    assert "document" in error.message


def test_non_utf8_file_names_the_line(tmp_path: Path) -> None:
    error = load_error(tmp_path, b"kind: Task\nname: caf\xe9\n", name="latin.yaml")
    assert "UTF-8" in error.message
    assert error.render().startswith("latin.yaml:2: "), error.render()


def test_non_utf8_file_is_a_spec_error(tmp_path: Path) -> None:
    error = load_error(tmp_path, b"kind: Task\nname: caf\xe9\n", name="latin.yaml")
    assert error.path == "latin.yaml"
    assert re.search(r"not UTF-8", error.message)


@pytest.mark.parametrize("fast", [True, False], ids=["libyaml", "pyyaml"])
def test_a_nul_byte_names_its_line_and_column(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool) -> None:
    if not fast:
        monkeypatch.setattr(yaml_lines, "FAST_LOADER", None)
    error = load_error(tmp_path, b"kind: Task\nname: nul\ndescription: a\x00b\n", name="nul.yaml")
    assert error.render() == ("nul.yaml:3: YAML syntax error: unacceptable character #x0000 in column 15: "
                              "YAML does not allow it (a control or special character); remove it")
    assert "position" not in error.message


# ------------------------------------------------------------------ libyaml and the pure Python parser

needs_libyaml = pytest.mark.skipif(yaml_lines.FAST_LOADER is None, reason="PyYAML was built without libyaml")
REAL_SPECS = sorted([*(REPO / "specs").rglob("*.yaml"), *(REPO / "agents").glob("*.yaml")])


def outcome(path: Path, monkeypatch: pytest.MonkeyPatch, *, fast: bool) -> tuple:
    """What loading ``path`` gives: the data and every line mark, or the rendered error."""
    with monkeypatch.context() as patch:
        if not fast:
            patch.setattr(yaml_lines, "FAST_LOADER", None)
        try:
            data, lines = load_yaml_with_lines(path, path.name)
        except SpecError as exc:
            return ("error", exc.render())
    return ("loaded", data, lines.marks)


@needs_libyaml
@pytest.mark.parametrize("path", REAL_SPECS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_libyaml_reads_every_real_spec_as_pyyaml_does(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert yaml_lines.fast_loader_agrees(path.read_text(encoding="utf-8")), "the fast path must be the one taken"
    assert outcome(path, monkeypatch, fast=True) == outcome(path, monkeypatch, fast=False)


@needs_libyaml
@pytest.mark.parametrize("text", [
    "kind: Task\nname: a\t\n",  # libyaml accepts a trailing tab, PyYAML does not
    "kind: Task\ntags: [what?, b]\n",  # '?' ends a plain scalar in a flow collection for PyYAML only
    "kind: Task\ntags: [!!str, b]\n",  # a tag in a flow collection: PyYAML takes the ',' into the tag
    "kind: Task\nname: a\ufeffb\ndescription: x\n",  # a byte order mark after the start
    "kind: Task\ndescription: a\x85b\nname: c\n",  # NEL is a line break for PyYAML
    "kind: Task\ndescription: a\u2028b\nname: c\n",  # and so is LS
])
def test_text_libyaml_reads_differently_is_left_to_pyyaml(text: str, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    assert not yaml_lines.fast_loader_agrees(text)
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8")
    assert outcome(path, monkeypatch, fast=True) == outcome(path, monkeypatch, fast=False)


@needs_libyaml
def test_deep_nesting_is_left_to_pyyaml() -> None:
    """libyaml recurses in C and would overflow the C stack long before Python stops a recursion."""
    assert not yaml_lines.fast_loader_agrees("a: " + "[" * 6000 + "]" * 6000 + "\n")
    assert yaml_lines.fast_loader_agrees("a: " + "[" * 100 + "]" * 100 + "\n")


@needs_libyaml
def test_errors_libyaml_finds_carry_pyyamls_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = "kind: Task\nmetric:\n  name: x\n   direction: up\n"
    assert yaml_lines.fast_loader_agrees(text)
    error = load_error(tmp_path, text)
    assert (error.line, error.message) == (4, "YAML syntax error: mapping values are not allowed here")
    assert outcome(tmp_path / "spec.yaml", monkeypatch, fast=True) == outcome(tmp_path / "spec.yaml", monkeypatch,
                                                                            fast=False)

"""CI runs what the README tells a new user to run, in an environment of its own: the set-up
command (after the README's virtual environment) and the test command, word for word."""

from __future__ import annotations

import re
import subprocess

from tests.helpers import REPO

CI = (REPO / ".ci" / "run").read_text()
README = (REPO / "README.md").read_text()
VENV = re.compile(r"^python3 -m venv (?P<venv>\S+) && \. (?P=venv)/bin/activate && (?P<install>.+)$", re.M)


def ci_commands() -> list[str]:
    """.ci/run's lines that are commands, without comments and continuation lines."""
    return [line.strip() for line in CI.splitlines() if line.strip() and not line.lstrip().startswith("#")]


def test_ci_installs_exactly_what_the_readme_set_up_installs():
    found = VENV.search(README)
    assert found, "README.md: no set-up line of the form 'python3 -m venv DIR && . DIR/bin/activate && ...'"
    assert found["install"] in ci_commands()


def test_ci_runs_the_readme_test_command_last():
    assert "pytest tests/ -n 2     # the project's own tests (what CI runs)" in README
    assert ci_commands()[-1] == "pytest tests/ -n 2"


def test_ci_installs_into_a_fresh_virtual_environment_outside_the_checkout():
    commands = ci_commands()
    made = next(index for index, line in enumerate(commands) if line == 'venv="$ci_folder/venv"')
    assert commands[made + 1] == 'python3 -m venv "$venv"'
    assert commands[made + 2] == '. "$venv/bin/activate"'
    install = commands.index(VENV.search(README)["install"])
    assert made < install  # nothing is pip-installed before the environment is made and active
    assert not any(line.startswith(("pip ", "python -m pip", "python3 -m pip")) for line in commands[:made])


def test_ci_removes_its_virtual_environment_when_it_ends_even_on_failure(tmp_path):
    """Each CI run's environment holds about 4 GB: left behind run after run, they fill the disk."""
    commands = ci_commands()
    made = next(index for index, line in enumerate(commands) if line.startswith('ci_folder="$(mktemp -d'))
    assert commands[made + 1].startswith("trap ")
    script = "\n".join(["set -e", *commands[made:made + 3], 'mkdir -p "$venv"', 'echo "$ci_folder"', "false"])
    ended = subprocess.run(["bash", "-c", script], capture_output=True, text=True, env={"TMPDIR": str(tmp_path)})
    assert ended.returncode != 0
    folder = ended.stdout.strip()
    assert folder.startswith(str(tmp_path))
    assert not any(tmp_path.iterdir()), "the CI folder outlived the run"

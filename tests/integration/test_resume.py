"""--mlab-resume over real sessions of the toy project: runs that ended on the agent's account are
kept, runs that Ctrl-C or the harness cut short are run again."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.helpers import UNRELATED_PLUGINS, copy_toy_project, output_of, read_results

pytestmark = pytest.mark.slow

# Each agent writes the exact answer, then ends its own way, unless the project holds a file
# "fixed": then it gives its final answer, so a row shows whether the run was taken again.
ENDINGS = {
    "raiser": "raise RuntimeError('agent bug')",  # the agent's own crash: kept
    "unlucky": "raise LLMError('the provider failed after every retry')",  # the harness's: run again
    "quitter": "raise KeyboardInterrupt",  # Ctrl-C: the session stops there; run again
}


@pytest.fixture
def project(pytester: pytest.Pytester) -> Path:
    root = copy_toy_project(pytester.path)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    lines = ["import os", "from pytest_mlab.agents import Agent", "from pytest_mlab.llm import LLMError", ""]
    for name, ending in ENDINGS.items():
        lines.append(textwrap.dedent(f"""
            class {name.title()}(Agent):
                def run(self, env):
                    env.step("Write File", {{"file_name": "submission.txt", "content": "100"}})
                    if not os.path.exists("fixed"):
                        {ending}
                    env.step("Final Answer", {{"final_answer": "done"}})
            """))
        (root / "agents" / f"{name}.yaml").write_text(
            f"kind: Agent\nname: {name}\nimplementation: endings:{name.title()}\nactions: [Write File, Final Answer]\n")
    (root / "endings.py").write_text("\n".join(lines))
    return root


def session(pytester: pytest.Pytester, project: Path, *args: str) -> tuple[pytest.RunResult, dict[str, dict]]:
    result = pytester.runpytest_subprocess("specs", "-p", "no:cacheprovider", *UNRELATED_PLUGINS, "--mlab-cache",
                                           str(project / ".cache"), "--agent=baseline,raiser,unlucky,quitter",
                                           *args, timeout=300)
    return result, {row["agent"]: row for row in read_results(project)["runs"]}


def test_resume_keeps_the_agents_own_endings_and_reruns_interrupted_and_harness_failures(pytester, project):
    first, rows = session(pytester, project)

    assert first.ret == pytest.ExitCode.INTERRUPTED  # the quitter, last, stopped the session
    assert sorted(rows) == ["baseline", "quitter", "raiser", "unlucky"], output_of(first)  # the quitter's from disk
    assert rows["raiser"]["end_reason"] == "crashed" and not rows["raiser"]["infrastructure"]
    assert rows["unlucky"]["end_reason"] == "crashed" and rows["unlucky"]["infrastructure"]
    assert rows["quitter"]["end_reason"] == "interrupted"

    (project / "fixed").write_text("")
    second, rows = session(pytester, project, "--mlab-resume")

    assert second.ret == pytest.ExitCode.TESTS_FAILED  # the raiser's kept crash still fails its item
    kept = {agent for agent, row in rows.items() if row["resumed"]}
    assert kept == {"baseline", "raiser"}
    table = output_of(second)
    assert "PASS (resumed)" in table and "FAIL: crashed (resumed)" in table  # the printed table says which
    assert rows["raiser"]["end_reason"] == "crashed"
    for agent in ("unlucky", "quitter"):
        assert rows[agent]["end_reason"] == "final answer" and rows[agent]["passed"]
        assert not rows[agent]["infrastructure"]

"""Measure step of the LLM-tool tasks (literature-review-tool, bibtex-generation). Runs INSIDE the
run's sandbox, never in the grader.

For each case of inputs/tool_cases.json (the public part of the hidden cases: the command-line
arguments and input files, never what the output must contain), it copies the workspace's
regular files into a scratch folder, puts the task's own helper modules (inputs/LLM.py,
inputs/papers.py) over the agent's copies, writes the case's input files, and runs
``python SCRIPT ARGS`` there with a per-case timeout. LLM.py answers from inputs/llm_script.yaml
and papers.py from inputs/papers.json (MLAB_TOOL_LLM_SCRIPT, MLAB_TOOL_PAPERS), and they log
every prompt and search to out/case-N/llm.log and out/case-N/papers.jsonl. When the tool ends
or times out, it and everything it started are killed (this process is their subreaper, so even
a double-forked, detached child is found); the sandbox's end kills anything left. The case's
output files, the logs and run.json (exit status, time-out, the end of the tool's output) go to
out/case-N/ for the grader.

The logs are written by code running in the same sandbox as the tool: a tool can forge them.
"""

import ctypes
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import mlab_measure

OUTPUT_KEPT = 20000  # characters of the tool's output kept in run.json
OUTPUT_FILE_LIMIT = 16 << 20  # largest output file brought back
_PR_SET_CHILD_SUBREAPER = 36

inputs, out = mlab_measure.folders()
inputs, out = os.path.abspath(inputs), os.path.abspath(out)
workspace = os.getcwd()
measure_dir = os.path.dirname(inputs)


def become_subreaper() -> None:
    """Orphaned descendants of the tool are re-parented to this process, not to init, so they
    can all be found and killed after each case."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def descendants() -> list[int]:
    """Every live process below this one."""
    parents = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as handle:
                    data = handle.read()
                parents[int(name)] = int(data[data.rfind(b")") + 2:].split()[1])
            except (OSError, ValueError, IndexError):
                continue
    found, frontier = set(), {os.getpid()}
    while frontier:
        frontier = {pid for pid, parent in parents.items() if parent in frontier and pid not in found}
        found |= frontier
    return sorted(found)


def kill_all(process: subprocess.Popen) -> None:
    """The tool's process group, then every descendant, until none is left; all reaped."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass
    for _ in range(50):
        left = descendants()
        if not left:
            break
        for pid in left:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
        reap()
    process.wait()
    reap()


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def copy_workspace(folder: str) -> None:
    """The workspace's regular files and folders, without links and without the measurement's own folder."""
    for directory, dirnames, filenames in os.walk(workspace):
        if os.path.abspath(directory) == workspace:
            dirnames[:] = [name for name in dirnames if os.path.join(directory, name) != measure_dir]
        dirnames[:] = [name for name in dirnames if not os.path.islink(os.path.join(directory, name))]
        target = os.path.join(folder, os.path.relpath(directory, workspace))
        os.makedirs(target, exist_ok=True)
        for name in filenames:
            source = os.path.join(directory, name)
            if os.path.isfile(source) and not os.path.islink(source):
                shutil.copyfile(source, os.path.join(target, name))


def tail(path: str) -> str:
    with open(path, "rb") as handle:
        handle.seek(max(0, os.fstat(handle.fileno()).st_size - 4 * OUTPUT_KEPT))
        return handle.read().decode("utf-8", "replace")[-OUTPUT_KEPT:]


def run_case(index: int, case: dict, tool: dict) -> None:
    case_out = os.path.join(out, f"case-{index}")
    os.makedirs(case_out)
    folder = tempfile.mkdtemp(prefix=f"tool-case-{index}-")
    copy_workspace(folder)
    for name in tool["helpers"]:
        shutil.copyfile(os.path.join(inputs, name), os.path.join(folder, name))
    for name, text in case.get("files", {}).items():
        with open(os.path.join(folder, name), "w", encoding="utf-8") as handle:
            handle.write(text)
    env = {key: value for key, value in os.environ.items() if key != mlab_measure.PHASE_VARIABLE}
    env.update(MLAB_TOOL_LLM_SCRIPT=os.path.join(inputs, "llm_script.yaml"),
               MLAB_TOOL_PAPERS=os.path.join(inputs, "papers.json"),
               MLAB_TOOL_LLM_LOG=os.path.join(case_out, "llm.log"),
               MLAB_TOOL_PAPERS_LOG=os.path.join(case_out, "papers.jsonl"))
    log = os.path.join(tempfile.mkdtemp(prefix="tool-output-"), "output")
    with open(log, "wb") as sink:
        process = subprocess.Popen([sys.executable, tool["script"], *case["args"]], cwd=folder, env=env,
                                   stdin=subprocess.DEVNULL, stdout=sink, stderr=subprocess.STDOUT,
                                   start_new_session=True)
        try:
            returncode = process.wait(timeout=tool["timeout"])
        except subprocess.TimeoutExpired:
            returncode = None
        finally:
            kill_all(process)
    for name in tool["outputs"]:
        source = os.path.join(folder, name)
        if os.path.isfile(source) and not os.path.islink(source) and os.path.getsize(source) <= OUTPUT_FILE_LIMIT:
            shutil.copyfile(source, os.path.join(case_out, name))
    with open(os.path.join(case_out, "run.json"), "w", encoding="utf-8") as handle:
        json.dump({"returncode": returncode, "timed_out": returncode is None, "output": tail(log)}, handle)


def main() -> None:
    with open(os.path.join(inputs, "tool_cases.json"), encoding="utf-8") as handle:
        tool = json.load(handle)
    become_subreaper()
    for index, case in enumerate(tool["cases"]):
        run_case(index, case, tool)
    mlab_measure.finish(out, cases=len(tool["cases"]))


main()

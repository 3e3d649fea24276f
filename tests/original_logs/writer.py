"""A small writer of run folders in the original MLAgentBench's layout (5d71205), for the import's
tests: what its Environment, research agent, LLM.py and runner leave per run."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class OriginalRunFolder:
    """One run's log folder: ``<root>/<experiment>/<task>/<run>/``."""

    experiment: str = "no_retrieval"
    task: str = "toy"
    run: str = "0001"
    # (action name, action args, observation) per step
    steps: list[tuple[str, dict, str]] = field(default_factory=list)
    # step index (0-based) -> {file: text}: traces/step_N_files, the files the original saved after it;
    # None: every step saves the final files
    step_files: dict[int, dict[str, str]] | None = None
    final_files: dict[str, str] | None = None  # traces/step_final_files (written after a clean exit)
    error: str | None = None  # env_log/error.txt
    overall_time: float | None = 42.0  # env_log/overall_time.txt; None: the process died
    main_log: str = ""
    log: str = ""
    benchmark_folder: str | None = None  # env_log/<folder>/scripts/research_problem.txt; default: task
    # agent step -> [(model, prompt, completion)]: agent_log/step_N_log.log as LLM.py writes it
    calls: dict[int, list[tuple[str, str, str]]] = field(default_factory=dict)

    def write(self, root: Path) -> Path:
        folder = root / self.experiment / self.task / self.run
        env_log = folder / "env_log"
        (env_log / "traces").mkdir(parents=True)
        (env_log / "tool_logs").mkdir()
        trace = {"steps": [{"action": {"name": name, "args": args}, "observation": observation,
                            "timestamp": 1_700_000_000.0 + 10 * index}
                           for index, (name, args, observation) in enumerate(self.steps)],
                 "low_level_steps": [], "action_infos": {}, "task_description": "Predict the sum."}
        (env_log / "trace.json").write_text(json.dumps(trace, indent=4))
        for index in range(len(self.steps)):
            files = (self.step_files or {}).get(index) if self.step_files is not None else (self.final_files or {})
            if files is not None:
                _write_files(env_log / "traces" / f"step_{index}_files", files)
        if self.final_files is not None:
            _write_files(env_log / "traces" / "step_final_files", self.final_files)
        if self.error is not None:
            (env_log / "error.txt").write_text(self.error)
        if self.overall_time is not None:
            (env_log / "overall_time.txt").write_text(str(self.overall_time))
        benchmark = env_log / (self.benchmark_folder or self.task)
        (benchmark / "scripts").mkdir(parents=True)
        (benchmark / "env").mkdir()
        (benchmark / "scripts" / "research_problem.txt").write_text("Predict the sum of the numbers.")
        agent_log = folder / "agent_log"
        agent_log.mkdir()
        (agent_log / "main_log").write_text(self.main_log)
        for step, calls in self.calls.items():
            text = ""
            for model, prompt, completion in calls:
                text += ("\n===================prompt=====================\n"
                         f"\n\nHuman: {prompt} \n\nAssistant:"
                         f"\n==================={model} response (2000)=====================\n"
                         f"{completion}"
                         "\n===================tokens=====================\n"
                         f"Number of prompt tokens: {len(prompt.split())}\n"
                         f"Number of sampled tokens: {len(completion.split())}\n\n\n")
            (agent_log / f"step_{step}_log.log").write_text(text)
        (folder / "log").write_text(self.log)
        return folder


def _write_files(folder: Path, files: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)


def final_answer_run(**changes) -> OriginalRunFolder:
    """A run that wrote the right answer and ended with Final Answer."""
    values = dict(steps=[("List Files", {"dir_path": "."}, "train.py\n"),
                         ("Edit Script (AI)", {"script_name": "train.py", "edit_instruction": "predict 100",
                                               "save_name": "train.py"}, "The edited file is saved to train.py."),
                         ("Execute Script", {"script_name": "train.py"},
                          "The script has been executed. Here is the output:\npredicted 100.0\n"),
                         ("Final Answer", {"final_answer": "It predicts 100."}, "end")],
                  final_files={"train.py": "print('predicted 100.0')\n", "submission.txt": "100\n"},
                  log="Final message:  Finished due to env.is_final() == True\n",
                  calls={0: [("claude-v1", "You are a helpful research assistant.", "Action: List Files")]})
    values.update(changes)
    return OriginalRunFolder(**values)

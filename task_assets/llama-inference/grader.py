"""Grader for the llama-inference task: how fast ``generate`` of the workspace's inference.py is,
relative to the unchanged starter's, and whether it still generates the same text.

The agent's code never runs here. The measure step (measure.py, in the run's sandbox) imports
inference.py, calls ``load_model()`` and runs ``generate(model, input_ids)`` once on every batch
of prompts drawn from the grading's seed (fresh at each grading), in a fresh process and sandbox
for each of ``timing.repeats`` repeats, interleaved with the unchanged starter's inference.py on
the same prompts and with start-up alone (imports). The harness times each whole process from
outside: CPU seconds on a CPU (CPU time barely moves when other work shares the machine), and
wall-clock seconds when the starter ran on a GPU; loading the model is counted too. Score: the
relative time of pytest_mlab.grading.timing (1.0 = the starter's speed, lower is better).

Every output of every repeat must be the prompts followed by the right number of new tokens,
and at least MIN_AGREEMENT of the new tokens must equal the unchanged starter's plain greedy
continuation of the same prompts: a faster generate must still generate the same text (small
numeric differences may flip a few tokens).
"""

from __future__ import annotations

import json
import pathlib

import numpy as np

from pytest_mlab.task_api import InvalidSubmission, relative_time, saved_arrays, starter_array

MIN_AGREEMENT = 0.9

_STAGES = {
    "load": "importing inference.py or calling load_model() raised",
    "generate": "generate(model, input_ids) raised",
    "output": "generate must return a tensor of token ids of the same shape for every batch; converting it raised",
}


def _check(output: np.ndarray, prompts: np.ndarray, expected: np.ndarray, where: str) -> None:
    new_tokens = expected.shape[-1] - prompts.shape[-1]
    if output.ndim != expected.ndim + 1 or output.shape[1:] != expected.shape:
        raise InvalidSubmission(
            f"inference.py: generate returned shape {tuple(output.shape[2:])} for a batch of prompts "
            f"{tuple(prompts.shape[1:])}{where}; expected {tuple(expected.shape[1:])}: the prompts followed by "
            f"exactly {new_tokens} new tokens")
    for generated in output:
        if not np.array_equal(generated[..., :prompts.shape[-1]], prompts):
            raise InvalidSubmission(f"inference.py: generate must return the prompt tokens unchanged, followed by "
                                    f"the new tokens{where}")
        agreement = float(np.mean(generated[..., prompts.shape[-1]:] == expected[..., prompts.shape[-1]:]))
        if agreement < MIN_AGREEMENT:
            raise InvalidSubmission(
                f"inference.py: only {agreement:.1%} of the generated tokens match the model's greedy decoding"
                f"{where} (at least {MIN_AGREEMENT:.0%} must); a faster generate must produce the same text, "
                f"every time it is called")


def score(workspace: pathlib.Path, answers: pathlib.Path, measured: pathlib.Path) -> float:
    workspace, answers, measured = pathlib.Path(workspace), pathlib.Path(answers), pathlib.Path(measured)
    if not (workspace / "inference.py").is_file():
        raise InvalidSubmission("inference.py: file not found in the workspace; the grader imports "
                                "load_model() and generate() from it")
    context = json.loads((answers / "prompts_config.json").read_text(encoding="utf-8"))["context"]
    expected = starter_array(measured)[0]  # the unchanged starter's first pass, on this grading's prompts
    prompts = expected[..., :context]
    what = (f"the measurement process (import inference, load_model() and generate on {prompts.shape[0]} "
            f"batches of prompts)")
    for output, where in saved_arrays(measured, source="inference.py", what=what, stages=_STAGES,
                                      label="inference.py: generate"):
        _check(output, prompts, expected, where)
    return relative_time(measured, "inference.py")

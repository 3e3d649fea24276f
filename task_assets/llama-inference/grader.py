"""Grader for the llama-inference task: time ``generate`` from the workspace's inference.py.

Printed timings are ignored. A fresh Python process (one thread) imports ``inference`` from the
workspace (its ``main()`` is not run), calls ``load_model()``, warms up once, then times
``generate(model, input_ids)`` on every hidden batch of prompts, three times over. Score: CPU
milliseconds per generated token of the fastest pass (lower is better). CPU time rather than
wall-clock time barely moves when other work shares the machine.

The output must be the prompts followed by the right number of new tokens, and at least
MIN_AGREEMENT of the new tokens must equal the model's plain greedy continuation: a faster
generate must still generate the same text (small numeric differences may flip a few tokens).
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from pytest_mlab.grading import InvalidSubmission

REPEATS = 3
TIMEOUT_S = 600
MIN_AGREEMENT = 0.9

# Runs inside the workspace (cwd), so ``import inference`` finds the agent's inference.py.
_RUNNER = r'''
import json, sys, time, traceback
clock = time.process_time  # bound before inference.py is imported, so it cannot replace it
inputs_path, output_path, result_path, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])

def finish(**result):
    with open(result_path, "w") as handle:
        json.dump(result, handle)
    sys.exit(0)

def failure(stage):
    kind, error, tb = sys.exc_info()
    lines = [f.lineno for f in traceback.extract_tb(tb) if f.filename.endswith("inference.py")]
    detail = f"{kind.__name__}: {error}".rstrip(": ") + (f" (at inference.py line {lines[-1]})" if lines else "")
    finish(error=stage, detail=detail)

import numpy as np
import torch
torch.set_num_threads(1)
prompts = np.load(inputs_path)
try:
    import inference
    model, _ = inference.load_model()
    generate = inference.generate
except BaseException:
    failure("load")
try:
    generate(model, torch.from_numpy(prompts[0].copy()))  # warm-up, untimed
except BaseException:
    failure("generate")
times, outputs = [], []
for attempt in range(repeats):
    total = 0.0
    for batch in prompts:
        batch = torch.from_numpy(batch.copy())
        try:
            start = clock()
            output = generate(model, batch)
            total += clock() - start
        except BaseException:
            failure("generate")
        if attempt == 0:
            try:
                outputs.append(np.asarray(output.detach().cpu().numpy() if hasattr(output, "detach") else output,
                                          dtype=np.int64))
            except BaseException:
                failure("output")
    times.append(total)
try:
    np.save(output_path, np.stack(outputs), allow_pickle=False)
except BaseException:
    failure("output")
finish(times=times)
'''

_STAGES = {
    "load": "importing inference.py or calling load_model() raised",
    "generate": "generate(model, input_ids) raised",
    "output": "generate must return a tensor of token ids of the same shape for every batch; converting it raised",
}


def score(workspace: pathlib.Path, answers: pathlib.Path) -> float:
    workspace, answers = pathlib.Path(workspace), pathlib.Path(answers)
    if not (workspace / "inference.py").is_file():
        raise InvalidSubmission("inference.py: file not found in the workspace; the grader imports "
                                "load_model() and generate() from it")
    with np.load(answers / "prompts.npz") as case:
        prompts, expected = case["input_ids"], case["expected"]
    new_tokens = expected.shape[-1] - prompts.shape[-1]

    with tempfile.TemporaryDirectory(prefix="mlab-llama-") as tmp:
        # The timing process runs the agent's code: it gets the prompts, never the expected output.
        inputs_path, output_path, result_path = (pathlib.Path(tmp, name) for name in
                                                 ("prompts.npy", "output.npy", "result.json"))
        np.save(inputs_path, prompts, allow_pickle=False)
        env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1", OMP_NUM_THREADS="1", MKL_NUM_THREADS="1",
                   HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
        try:
            completed = subprocess.run([sys.executable, "-c", _RUNNER, str(inputs_path), str(output_path),
                                        str(result_path), str(REPEATS)], cwd=workspace, env=env,
                                       stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise InvalidSubmission(f"inference.py: loading the model and {REPEATS + 1} passes of generate over "
                                    f"{prompts.shape[0]} batches did not finish within {TIMEOUT_S} s") from None
        if not result_path.is_file():
            tail = (completed.stderr or completed.stdout or "").strip()[-1500:]
            raise InvalidSubmission(f"inference.py: the timing process exited with status {completed.returncode} "
                                    f"before reporting a result; output: {tail or '(none)'}")
        result = json.loads(result_path.read_text())
        if "error" in result:
            raise InvalidSubmission(f"inference.py: {_STAGES[result['error']]} {result['detail']}")
        output = np.load(output_path, allow_pickle=False)

    if output.shape != expected.shape:
        raise InvalidSubmission(
            f"inference.py: generate returned shape {tuple(output.shape[1:])} for a batch of prompts "
            f"{tuple(prompts.shape[1:])}; expected {tuple(expected.shape[1:])}: the prompts followed by exactly "
            f"{new_tokens} new tokens")
    if not np.array_equal(output[..., :prompts.shape[-1]], prompts):
        raise InvalidSubmission("inference.py: generate must return the prompt tokens unchanged, followed by the new "
                                "tokens")
    agreement = float(np.mean(output[..., prompts.shape[-1]:] == expected[..., prompts.shape[-1]:]))
    if agreement < MIN_AGREEMENT:
        raise InvalidSubmission(
            f"inference.py: only {agreement:.1%} of the generated tokens match the model's greedy decoding "
            f"(at least {MIN_AGREEMENT:.0%} must); a faster generate must produce the same text")
    return 1000.0 * min(result["times"]) / output[..., prompts.shape[-1]:].size

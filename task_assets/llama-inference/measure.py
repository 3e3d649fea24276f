"""Measure step of the llama-inference task. Runs INSIDE the run's sandbox, never in the grader.

Phase "run": load the hidden prompts, import inference.py from the workspace, call
``load_model()`` once, then ``generate(model, input_ids)`` on every batch of prompts, PASSES
times over, and save every output (out/output.npy: int64 token ids of shape
(PASSES, batches, batch size, context + new tokens), no pickles) for the grader to check.
Phase "overhead": the same imports (numpy, torch, transformers' auto classes), nothing else;
no code of the workspace runs.

The harness times each whole process from outside (CPU seconds, as the sandbox counts them) and
subtracts the overhead process's time; nothing this process or inference.py reports is a time.
"""

import os

import mlab_measure

PASSES = 2  # passes of generate over the prompts in one process: generation dominates the time

inputs, out = mlab_measure.folders()
mlab_measure.single_thread()
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

import numpy as np  # noqa: E402  (after the thread settings)
import torch  # noqa: E402
from transformers import AutoModelForCausalLM, AutoTokenizer  # noqa: E402,F401  (what the starter imports)

torch.set_num_threads(1)
if mlab_measure.overhead_phase():
    mlab_measure.finish(out)

prompts = np.load(os.path.join(inputs, "prompts_inputs.npy"), allow_pickle=False)
try:
    inference = mlab_measure.import_workspace("inference")
    model, _ = inference.load_model()
    generate = inference.generate
except BaseException:
    mlab_measure.failure(out, "load", "inference.py")

outputs = []
for _ in range(PASSES):
    for batch in prompts:
        try:
            output = generate(model, torch.from_numpy(batch.copy()))
        except BaseException:
            mlab_measure.failure(out, "generate", "inference.py")
        try:
            outputs.append(np.asarray(output.detach().cpu().numpy() if hasattr(output, "detach") else output,
                                      dtype=np.int64))
        except BaseException:
            mlab_measure.failure(out, "output", "inference.py")
try:
    stacked = np.stack(outputs).reshape(PASSES, len(prompts), *outputs[0].shape)
except BaseException:
    mlab_measure.failure(out, "output", "inference.py")
np.save(os.path.join(out, "output.npy"), stacked, allow_pickle=False)
mlab_measure.finish(out, passes=PASSES)

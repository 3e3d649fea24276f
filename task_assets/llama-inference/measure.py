"""Measure step of the llama-inference task. Runs INSIDE the run's sandbox, never in the grader.

Phase "run": load the hidden prompts, import inference.py from the workspace, call
``load_model()`` once, then ``generate(model, input_ids)`` on every batch of prompts, PASSES
times over, and save every output (out/output.npy: int64 token ids of shape
(PASSES, batches, batch size, context + new tokens), no pickles) for the grader to check.
Phase "overhead": the same imports (numpy, torch, the transformers classes that loading a LLaMA
model and generating with it import), nothing else; no code of the workspace runs.

On a CPU the harness times each whole process from outside (CPU seconds, as the sandbox counts
them) and subtracts the overhead process's time; nothing this process or inference.py reports is
a time. With a GPU, whose work that count does not see, this script adds up the wall-clock time
of the ``generate`` calls alone, the GPU synchronised before and after each, with a stopwatch made
before inference.py is imported, and reports it (``gpu_seconds``); loading the model is not timed.
"""

import contextlib
import os

import mlab_measure

PASSES = 1  # passes of generate over the prompts in one process: each batch once, as the original times it

inputs, out = mlab_measure.folders()
mlab_measure.single_thread()
os.environ.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")

import numpy as np  # noqa: E402  (after the thread settings)
import torch  # noqa: E402
# What the starter imports, and the classes its loading imports lazily (a LLaMA model, a fast
# tokenizer, generation): library start-up, which the overhead phase must count too.
from transformers import (  # noqa: E402,F401
    AutoModelForCausalLM, AutoTokenizer, GenerationMixin, LlamaForCausalLM, LlamaTokenizerFast,
    PreTrainedTokenizerFast)

torch.set_num_threads(1)
if mlab_measure.overhead_phase():
    mlab_measure.finish(out)
on_gpu = torch.cuda.is_available()
timer = mlab_measure.Stopwatch(torch.cuda.synchronize) if on_gpu else contextlib.nullcontext()

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
        input_ids = torch.from_numpy(batch.copy())
        try:
            with timer:
                output = generate(model, input_ids)
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
mlab_measure.finish(out, passes=PASSES, **({"gpu_seconds": timer.seconds} if on_gpu else {}))

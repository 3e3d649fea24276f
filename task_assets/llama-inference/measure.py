"""Measure step of the llama-inference task. Runs INSIDE the run's sandbox, never in the grader.

Phase "run": draw the prompts from the grading's seed (fresh for each grading, the same for the
starter's and the submission's executions; the shape and vocabulary come from the hidden
prompts_config.json), import inference.py from the workspace, call ``load_model()`` once, then
``generate(model, input_ids)`` on every batch of prompts, PASSES times over, and save every
output (out/output.npy: int64 token ids of shape (PASSES, batches, batch size, context + new
tokens), no pickles) for the grader to check against the unchanged starter's.
Phase "overhead": the same imports (numpy, torch, the transformers classes that loading a LLaMA
model and generating with it import), nothing else; no code of the workspace runs.

The harness times each whole process from outside and subtracts the overhead process's time:
CPU seconds, as the sandbox counts them, on a CPU; wall-clock seconds, by the harness's clock,
when the starter's executions say they ran on a GPU (``on_gpu``), whose work the CPU count does
not see. Nothing this process or inference.py reports is a time: the agent's code runs here and
could change any clock of this process.
"""

import json
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
with open(os.path.join(inputs, "prompts_config.json"), encoding="utf-8") as handle:
    config = json.load(handle)
rng = np.random.default_rng(mlab_measure.grading_seed())  # before any code of the workspace runs
vocabulary = np.setdiff1d(np.arange(config["vocab_size"]), config["special_ids"])
prompts = rng.choice(vocabulary, size=(config["batches"], config["batch"], config["context"])).astype(np.int64)
prompts[..., 0] = config["bos_token_id"]
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
mlab_measure.finish(out, passes=PASSES, **{mlab_measure.ON_GPU: torch.cuda.is_available()})

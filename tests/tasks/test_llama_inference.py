"""The llama-inference task's data recipes and timing grader (starter and reference run in the main job).

Grading goes through the harness's path (tests.tasks.support.grade): the submitted
inference.py runs in a sandbox, timed against the starter in one round (three executions), so a
submission that runs to the end costs a round (marked slow); one that fails stops the measurement
at once. No GPU is needed: the measure script is run with a CUDA build's answers faked; the GPU
timing itself (the harness's wall clock) is checked in tests/grading and tests/security."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from pytest_mlab.in_sandbox import mlab_measure
from pytest_mlab.task_api import InvalidSubmission
from tests.grading.support import measured_folder
from tests.shared_data import shared_mini
from tests.tasks.support import ASSETS, grade as grade_task, load_function, load_spec, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it builds the task's LLaMA model (mini data)
# and times generate.
pytestmark = pytest.mark.slow

TASK = "llama-inference"
CONTEXT, NEW_TOKENS, BATCH = 128, 1, 4  # the original's context_length, generation_length, batch_size


@pytest.fixture(scope="module")
def mini_data():
    return shared_mini(TASK)


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    """One round of the timing: these tests are about what the grader says of the output."""
    return grade_task(TASK, workspace, hidden, rounds=1)


def workspace_with(tmp_path: pathlib.Path, public: pathlib.Path, generate_body: str) -> pathlib.Path:
    """The starter's workspace with generate() replaced by ``generate_body``."""
    workspace = tmp_path / "ws"
    shutil.copytree(public, workspace)
    starter = (ASSETS / TASK / "env" / "inference.py").read_text()
    head, rest = starter.split("def generate(", 1)
    tail = rest[rest.index("\ndef main("):]
    body = textwrap.indent(textwrap.dedent(generate_body).strip(), "    ")
    (workspace / "inference.py").write_text(f"{head}def generate(model, input_ids):\n{body}\n\n{tail}")
    return workspace


def drawn_prompts(hidden: pathlib.Path, seed: int) -> np.ndarray:
    """Prompts as the measure step draws them for a grading's seed."""
    config = json.loads((hidden / "prompts_config.json").read_text())
    vocabulary = np.setdiff1d(np.arange(config["vocab_size"]), config["special_ids"])
    prompts = np.random.default_rng(seed).choice(
        vocabulary, size=(config["batches"], config["batch"], config["context"])).astype(np.int64)
    prompts[..., 0] = config["bos_token_id"]
    return prompts


def test_mini_has_the_real_layout(mini_data):
    from transformers import AutoConfig, AutoTokenizer

    public, hidden = mini_data
    assert AutoConfig.from_pretrained(public / "llama-7b").model_type == "llama"
    tokenizer = AutoTokenizer.from_pretrained(public / "llama-7b")
    lines = (public / "wikitext" / "test.txt").read_text().splitlines()
    assert any(line.startswith(" = ") and line.endswith(" = ") for line in lines)
    ids = tokenizer(lines[1])["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and tokenizer.unk_token_id not in ids
    config = json.loads((hidden / "prompts_config.json").read_text())
    assert (config["batches"], config["batch"], config["context"]) == (load_function(TASK, "prepare.py:BATCHES"),
                                                                       BATCH, CONTEXT)
    assert config["vocab_size"] == len(tokenizer) and config["bos_token_id"] == tokenizer.bos_token_id
    assert sorted(path.name for path in hidden.iterdir()) == ["prompts_config.json"], "no prompts are prepared"


def test_the_agents_text_is_whole_and_gives_the_starter_its_batches(mini_data, tmp_path, monkeypatch):
    """The agent develops on the original's inputs: the whole text, from which the starter's
    prompts() takes its 100 batches; the timed prompts are drawn at grading, not taken from it."""
    import torch
    from transformers import AutoTokenizer

    public, _ = mini_data
    rows = load_function(TASK, "prepare.py:_rows")(np.random.default_rng(0), 520)
    assert (public / "wikitext" / "test.txt").read_text() == "".join(rows)
    tokenizer = AutoTokenizer.from_pretrained(public / "llama-7b")
    monkeypatch.chdir(public)
    threads = torch.get_num_threads()
    try:  # the starter pins one thread on the CPU when it is loaded
        batches = load_function(TASK, "env/inference.py:prompts")(tokenizer)
    finally:
        torch.set_num_threads(threads)
    assert len(batches) == 100 and all(tuple(batch.shape) == (BATCH, CONTEXT) for batch in batches)


def test_starter_and_reference_keep_the_originals_workload():
    for folder in ("env", "reference"):
        source = (ASSETS / TASK / folder / "inference.py").read_text()
        for constant in ("GENERATION_LENGTH = 1 ", "CONTEXT_LENGTH = 128 ", "BATCH_SIZE = 4\n", "NUM_BATCHES = 100\n"):
            assert constant in source, f"{folder}/inference.py: {constant.strip()}"
        assert 'print("Average per token generation time: ", total_time / len(batches))' in source
    starter = (ASSETS / TASK / "env" / "inference.py").read_text()
    assert "model.generate(input_ids=input_ids" in starter and "max_length=GENERATION_LENGTH + CONTEXT_LENGTH" in starter
    assert "for _ in range(GENERATION_LENGTH)" not in starter, "the starter generates with model.generate"
    assert load_function(TASK, "prepare.py:BATCHES") == 100
    assert "accelerate" in load_spec(TASK)["description"]


@pytest.mark.parametrize("native", [True, False])
def test_the_reference_uses_bfloat16_only_where_the_cpu_computes_it_natively(mini_data, monkeypatch, native):
    """Most of the reference's speed on a CPU comes from bfloat16 weights (a third of the
    starter's time on mini), which are slower than float32 where the CPU lacks native bfloat16;
    its tokens must still pass the grader's agreement rule on drawn prompts."""
    import torch

    public, hidden = mini_data
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        monkeypatch.setattr(torch.cpu, name, lambda: native, raising=False)
    monkeypatch.chdir(public)
    threads = torch.get_num_threads()
    try:  # the reference pins one thread on the CPU when it is loaded
        prompts = drawn_prompts(hidden, 11)[:25]
        starter_load = load_function(TASK, "env/inference.py:load_model")
        starter_model, _ = starter_load()
        expected = np.stack([starter_load.__globals__["generate"](starter_model, torch.from_numpy(batch.copy())).numpy()
                             for batch in prompts])
        load_model = load_function(TASK, "reference/inference.py:load_model")
        model, _ = load_model()
        generate = load_model.__globals__["generate"]
        generated = np.stack([generate(model, torch.from_numpy(batch.copy())).numpy() for batch in prompts])
    finally:
        torch.set_num_threads(threads)
    assert model.model.layers[0].mlp.up_proj.weight.dtype == (torch.bfloat16 if native else torch.float32)
    assert model.lm_head.weight.dtype == torch.float32, "the vocabulary's scores are compared in float32"
    assert np.array_equal(generated[..., :CONTEXT], prompts)
    agreement = np.mean(generated[..., CONTEXT:] == expected[..., CONTEXT:])
    assert agreement >= load_function(TASK, "grader.py:MIN_AGREEMENT") and (native or agreement == 1.0), agreement


def test_mini_is_deterministic(mini_data, tmp_path):
    public, hidden = prepare(TASK, tmp_path)
    assert tree_digest(public) == tree_digest(mini_data[0])
    assert tree_digest(hidden) == tree_digest(mini_data[1])


@pytest.mark.parametrize("body, message", [
    # the one wrong output run through the real model and measure step; the grader's other verdicts
    # on wrong outputs are checked on measured folders below, which cost no timing round
    pytest.param("return torch.cat([input_ids, torch.zeros(input_ids.shape[0], 1, dtype=torch.long)], dim=1)",
                 r"only .*% of the generated tokens match the model's greedy decoding"),
    ("raise RuntimeError('out of memory')", r"generate\(model, input_ids\) raised RuntimeError: out of memory "
                                            r"\(at inference.py line \d+\)"),
    ("import os\nos._exit(3)", "exited with status 3 before reporting a result"),
])
def test_wrong_generate_is_explained(mini_data, tmp_path, body, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(workspace_with(tmp_path, mini_data[0], body), mini_data[1])


@pytest.mark.parametrize("wrong, message", [
    (lambda right: right[..., :CONTEXT], r"returned shape \(4, 128\).*expected \(4, 129\)"),
    (lambda right: np.concatenate([right[..., :CONTEXT], np.zeros_like(right[..., CONTEXT:])], axis=-1),
     r"only .*% of the generated tokens match the model's greedy decoding"),
    (lambda right: np.concatenate([np.zeros_like(right[..., :1]), right[..., 1:]], axis=-1),
     "must return the prompt tokens unchanged"),
], ids=["prompts only", "wrong new tokens", "prompt changed"])
def test_wrong_outputs_are_explained(mini_data, tmp_path, wrong, message):
    """What generate returned, as the measure step saves it, judged by the grader."""
    hidden = mini_data[1]
    measured = measured_folder(tmp_path, submission=[50.0] * 3, starter=[40.0] * 3, overhead=[5.0] * 3)
    prompts = drawn_prompts(hidden, 5)
    expected = np.concatenate([prompts, prompts[..., -1:]], axis=-1)  # what the starter's execution saved
    np.save(measured / "starter" / "0" / "out" / "output.npy", expected[None])
    (measured / "starter" / "0" / "out" / "result.json").write_text("{}")
    right = np.stack([expected] * 2)
    for index in range(3):
        out = measured / "submission" / str(index) / "out"
        np.save(out / "output.npy", wrong(right))
        (out / "result.json").write_text("{}")
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "inference.py").write_text("")
    score = load_function(TASK, load_spec(TASK)["metric"]["grader"])
    with pytest.raises(InvalidSubmission, match=message):
        score(tmp_path / "ws", hidden, measured)


def test_missing_script(mini_data, tmp_path):
    with pytest.raises(InvalidSubmission, match="inference.py was not written"):
        grade(tmp_path, mini_data[1])


def test_full_recipe_against_fake_hub(monkeypatch, mini_data, tmp_path):
    """HF datasets and the Hub replaced at their boundary; the fake hub serves the mini model and
    the fake dataset rows of the mini text's kind, enough for the original's 100 batches."""
    import datasets
    import huggingface_hub

    rows = load_function(TASK, "prepare.py:_rows")(np.random.default_rng(0), 520)
    test = [""] + [row for pair in zip(rows, [""] * len(rows)) for row in pair]  # blank rows, as WikiText has
    loaded, fetched = [], []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, **kw: loaded.append((name, kw))
                        or datasets.Dataset.from_dict({"text": test}))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id, local_dir: fetched.append(repo_id) or
                        shutil.copytree(mini_data[0] / "llama-7b", local_dir))
    public, hidden, downloads = tmp_path / "public", tmp_path / "hidden", tmp_path / "downloads"
    for folder in (public, hidden, downloads):
        folder.mkdir()
    load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])(public, hidden, 0, downloads)

    assert loaded[0][0] == "Salesforce/wikitext"
    assert (loaded[0][1]["data_dir"], loaded[0][1]["split"]) == ("wikitext-103-v1", "test")
    assert fetched == ["huggyllama/llama-7b"]
    shown = (public / "wikitext" / "test.txt").read_text()
    assert shown == "".join(row if row.endswith("\n") or not row else row + "\n" for row in test), \
        "the agent's text is the whole test split, as the original's script reads it"
    config = json.loads((hidden / "prompts_config.json").read_text())
    assert (config["batches"], config["batch"], config["context"]) == (100, BATCH, CONTEXT)


# --- the measure script: no GPU needed -----------------------------------------------------------

MEASURE_PROBE = """
import runpy, sys, torch
if sys.argv[3] == "gpu":  # a CUDA build's answers, on any machine
    torch.cuda.is_available = lambda: True
sys.argv = ["measure.py", sys.argv[1], sys.argv[2]]
runpy.run_path("measure.py", run_name="__main__")
"""
FAKE_INFERENCE = """
import torch

def load_model():
    return None, None

def generate(model, input_ids):
    return torch.cat([input_ids, input_ids[:, -1:]], dim=1)
"""


@pytest.mark.parametrize("device", ["cpu", "gpu"])
def test_measure_script_says_whether_it_ran_on_a_gpu_and_reports_no_time(mini_data, tmp_path, device):
    """measure.py run as the sandbox runs it (without the sandbox), on an inference.py that needs no
    model: each drawn batch is generated once; the script says where it ran and reports no time
    (the harness times it from outside)."""
    shutil.copy(ASSETS / TASK / "measure.py", tmp_path / "measure.py")
    shutil.copy(pathlib.Path(mlab_measure.__file__), tmp_path / "mlab_measure.py")
    (tmp_path / "inference.py").write_text(FAKE_INFERENCE)
    inputs, out = tmp_path / "inputs", tmp_path / "out"
    inputs.mkdir()
    out.mkdir()
    shutil.copy(mini_data[1] / "prompts_config.json", inputs)
    completed = subprocess.run([sys.executable, "-c", MEASURE_PROBE, str(inputs), str(out), device], cwd=tmp_path,
                               capture_output=True, text=True, timeout=300,
                               env={**os.environ, mlab_measure.SEED_VARIABLE: "5"})
    assert completed.returncode == 0, completed.stderr
    result = json.loads((out / "result.json").read_text())
    assert result == {"passes": 1, "on_gpu": device == "gpu"}
    output = np.load(out / "output.npy")
    assert np.array_equal(output[0, ..., :CONTEXT], drawn_prompts(mini_data[1], 5))

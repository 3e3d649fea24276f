"""The llama-inference task's data recipes and timing grader (starter and reference run in the main job).

Grading goes through the harness's path (tests.tasks.test_smoke_tasks.grade): the submitted
inference.py runs in a sandbox, timed against the starter, so a submission that runs to the end
costs a full timing (marked slow); one that fails stops the measurement at once."""

from __future__ import annotations

import pathlib
import shutil
import textwrap

import numpy as np
import pytest

from pytest_mlab.grading import InvalidSubmission
from tests.tasks.test_smoke_tasks import ASSETS, grade as grade_task, load_function, load_spec, prepare, tree_digest

TASK = "llama-inference"


@pytest.fixture(scope="module")
def mini_data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("llama-mini"))


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def workspace_with(tmp_path: pathlib.Path, public: pathlib.Path, generate_body: str) -> pathlib.Path:
    """The starter's workspace with generate() replaced by ``generate_body``."""
    workspace = tmp_path / "ws"
    shutil.copytree(public, workspace)
    starter = (ASSETS / TASK / "env" / "inference.py").read_text()
    head, rest = starter.split("def generate(", 1)
    tail = rest[rest.index("\ndef prompts("):]
    body = textwrap.indent(textwrap.dedent(generate_body).strip(), "    ")
    (workspace / "inference.py").write_text(f"{head}def generate(model, input_ids):\n{body}\n\n{tail}")
    return workspace


def test_mini_has_the_real_layout(mini_data):
    from transformers import AutoConfig, AutoTokenizer

    public, hidden = mini_data
    assert AutoConfig.from_pretrained(public / "llama-7b").model_type == "llama"
    tokenizer = AutoTokenizer.from_pretrained(public / "llama-7b")
    lines = (public / "wikitext" / "test.txt").read_text().splitlines()
    assert any(line.startswith(" = ") and line.endswith(" = ") for line in lines)
    ids = tokenizer(lines[1])["input_ids"]
    assert ids[0] == tokenizer.bos_token_id and tokenizer.unk_token_id not in ids
    with np.load(hidden / "prompts.npz") as case:
        assert case["input_ids"].shape == (2, 4, 64) and case["expected"].shape == (2, 4, 96)
        assert np.array_equal(case["expected"][..., :64], case["input_ids"])
    assert not list(public.rglob("prompts*")), "the prompts the grader times must stay hidden"
    with np.load(hidden / "prompts.npz") as case:
        inputs = np.load(hidden / "prompts_inputs.npy", allow_pickle=False)
        assert np.array_equal(inputs, case["input_ids"]), "the measure step's input is the prompts alone"


def test_mini_is_deterministic(mini_data, tmp_path):
    public, hidden = prepare(TASK, tmp_path)
    assert tree_digest(public) == tree_digest(mini_data[0])
    assert tree_digest(hidden) == tree_digest(mini_data[1])


@pytest.mark.parametrize("body, message", [
    pytest.param("return input_ids", r"returned shape \(4, 64\).*expected \(4, 96\)", marks=pytest.mark.slow),
    pytest.param("return torch.cat([input_ids, torch.zeros(input_ids.shape[0], 32, dtype=torch.long)], dim=1)",
                 r"only .*% of the generated tokens match the model's greedy decoding", marks=pytest.mark.slow),
    pytest.param("out = model.generate(input_ids, max_new_tokens=32, min_new_tokens=32, do_sample=False)\n"
                 "out[:, 0] = 0\nreturn out", "must return the prompt tokens unchanged", marks=pytest.mark.slow),
    ("raise RuntimeError('out of memory')", r"generate\(model, input_ids\) raised RuntimeError: out of memory "
                                            r"\(at inference.py line \d+\)"),
    ("import os\nos._exit(3)", "exited with status 3 before reporting a result"),
])
def test_wrong_generate_is_explained(mini_data, tmp_path, body, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(workspace_with(tmp_path, mini_data[0], body), mini_data[1])


def test_missing_script(mini_data, tmp_path):
    with pytest.raises(InvalidSubmission, match="inference.py was not written"):
        grade(tmp_path, mini_data[1])


def test_full_recipe_against_fake_hub(monkeypatch, mini_data, tmp_path):
    """HF datasets and the Hub replaced at their boundary; the fake hub serves the mini model."""
    import datasets
    import huggingface_hub

    lines = (mini_data[0] / "wikitext" / "test.txt").read_text().splitlines()
    splits = {"test": lines[:100], "validation": lines[100:], "train": lines[:10]}
    loaded, fetched = [], []
    monkeypatch.setattr(datasets, "load_dataset", lambda name, **kw: loaded.append((name, kw)) or datasets.DatasetDict(
        {split: datasets.Dataset.from_dict({"text": text}) for split, text in splits.items()}))
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id, local_dir: fetched.append(repo_id) or
                        shutil.copytree(mini_data[0] / "llama-7b", local_dir))
    public, hidden, downloads = tmp_path / "public", tmp_path / "hidden", tmp_path / "downloads"
    for folder in (public, hidden, downloads):
        folder.mkdir()
    load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])(public, hidden, 0, downloads)

    assert loaded[0][0] == "Salesforce/wikitext" and loaded[0][1]["data_dir"] == "wikitext-103-raw-v1"
    assert fetched == ["huggyllama/llama-7b"]
    assert (public / "wikitext" / "test.txt").read_text().splitlines() == splits["test"]
    with np.load(hidden / "prompts.npz") as case:
        assert case["expected"].shape == (2, 4, 96)

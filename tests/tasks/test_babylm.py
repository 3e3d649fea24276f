"""The BabyLM task's data recipes and perplexity grader (starter and reference run in the main job)."""

from __future__ import annotations

import math
import pathlib
import shutil
import zipfile

import pytest

from pytest_mlab.grading import InvalidSubmission
from tests.data.fakes import FileServer
from tests.tasks.test_smoke_tasks import ASSETS, grade as grade_task, load_function, load_spec, prepare, tree_digest

TASK = "babylm"
SOURCES = ["aochildes", "bnc_spoken", "cbt", "children_stories", "gutenberg", "open_subtitles", "qed",
           "simple_wikipedia", "switchboard", "wikipedia"]


@pytest.fixture(scope="module")
def mini_data(tmp_path_factory):
    return prepare(TASK, tmp_path_factory.mktemp("babylm-mini"))


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def save_model(workspace: pathlib.Path, hidden: pathlib.Path, *, vocab_delta: int = 0, positions: int = 128,
               nan: bool = False) -> pathlib.Path:
    """An untrained GPT-2 in workspace/output, as train.py saves it."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    tokenizer = AutoTokenizer.from_pretrained(hidden / "gpt2")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(tokenizer) + vocab_delta, n_positions=positions, n_embd=16,
                                       n_layer=1, n_head=2))
    if nan:
        with torch.no_grad():
            model.transformer.wte.weight.fill_(float("nan"))
    model.save_pretrained(workspace / "output")
    return workspace


def test_mini_has_the_release_layout(mini_data):
    public, hidden = mini_data
    for folder, extension, root in (("babylm_10M", "train", public / "babylm_data"),
                                    ("babylm_dev", "dev", public / "babylm_data"), ("babylm_test", "test", hidden)):
        assert sorted(p.name for p in (root / folder).iterdir()) == sorted(f"{s}.{extension}" for s in SOURCES)
    assert not (public / "babylm_data" / "babylm_test").exists(), "the test split must stay hidden"
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(public / "gpt2")
    line = (hidden / "babylm_test" / "qed.test").read_text().splitlines()[0]
    assert tokenizer.unk_token_id not in tokenizer(line)["input_ids"]
    assert tree_digest(public / "gpt2") == tree_digest(hidden / "gpt2")


def test_mini_is_deterministic(mini_data, tmp_path):
    public, hidden = prepare(TASK, tmp_path)
    assert tree_digest(public) == tree_digest(mini_data[0])
    assert tree_digest(hidden) == tree_digest(mini_data[1])


def test_untrained_model_scores_about_the_vocabulary_size(mini_data, tmp_path):
    from transformers import AutoTokenizer

    score = grade(save_model(tmp_path, mini_data[1]), mini_data[1])
    vocab = len(AutoTokenizer.from_pretrained(mini_data[1] / "gpt2"))
    assert math.isfinite(score) and vocab / 2 < score < vocab * 2  # a random model is near uniform


def test_grader_uses_its_own_tokenizer(mini_data, tmp_path):
    save_model(tmp_path, mini_data[1])
    (tmp_path / "gpt2").mkdir()
    (tmp_path / "gpt2" / "tokenizer.json").write_text("{}")  # an agent's broken copy changes nothing
    assert grade(tmp_path, mini_data[1]) == grade(save_model(tmp_path / "b", mini_data[1]), mini_data[1])


@pytest.mark.parametrize("kwargs, message", [
    ({"vocab_delta": -3}, r"predicts \d+ token types but the gpt2 tokenizer has \d+"),
    ({"positions": 32}, "accepts 32 positions; the grader scores windows of 128"),
    ({"nan": True}, "test loss is not finite"),
])
def test_unusable_models_are_explained(mini_data, tmp_path, kwargs, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(save_model(tmp_path, mini_data[1], **kwargs), mini_data[1])


def test_missing_or_pickled_output_is_rejected(mini_data, tmp_path):
    with pytest.raises(InvalidSubmission, match="output/config.json: not found"):
        grade(tmp_path, mini_data[1])
    save_model(tmp_path, mini_data[1])
    weights = tmp_path / "output" / "model.safetensors"
    weights.rename(weights.with_name("pytorch_model.bin"))
    with pytest.raises(InvalidSubmission, match="no .safetensors weights"):
        grade(tmp_path, mini_data[1])
    (tmp_path / "output" / "pytorch_model.bin").unlink()
    shutil.copy(ASSETS / TASK / "grader.py", tmp_path / "output" / "model.safetensors")  # not weights
    with pytest.raises(InvalidSubmission, match="transformers cannot load a causal language model"):
        grade(tmp_path, mini_data[1])


def test_full_recipe_from_a_fake_server_with_a_cut_download(monkeypatch, mini_data, tmp_path):
    """The release zip served over loopback, cut halfway once (the download resumes); fake hub."""
    import huggingface_hub

    public_mini, hidden_mini = mini_data
    served = tmp_path / "served"
    served.mkdir()
    with zipfile.ZipFile(served / "babylm_data.zip", "w") as bundle:
        for folder, root in (("babylm_10M", public_mini / "babylm_data"), ("babylm_dev", public_mini / "babylm_data"),
                             ("babylm_test", hidden_mini)):
            for path in sorted((root / folder).iterdir()):
                bundle.write(path, f"babylm_data/{folder}/{path.name}")
        bundle.writestr("__MACOSX/babylm_data/._babylm_10M", "junk")
    monkeypatch.setattr(huggingface_hub, "snapshot_download", lambda repo_id, local_dir:
                        shutil.copytree(public_mini / "gpt2", local_dir) if repo_id == "gpt2" else None)
    recipe = load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])
    public, hidden, downloads = tmp_path / "public", tmp_path / "hidden", tmp_path / "downloads"
    for folder in (public, hidden, downloads):
        folder.mkdir()
    with FileServer(served, cut={"babylm_data.zip": 1}) as server:
        monkeypatch.setitem(recipe.__globals__, "FULL_URL", server.url("babylm_data.zip"))
        recipe(public, hidden, 0, downloads)
    assert [r for _, r in server.log][-1] is not None, "the cut transfer must be resumed with a Range request"
    assert tree_digest(public / "babylm_data") == tree_digest(public_mini / "babylm_data")
    assert tree_digest(hidden / "babylm_test") == tree_digest(hidden_mini / "babylm_test")
    assert tree_digest(hidden / "gpt2") == tree_digest(public / "gpt2")


def test_full_recipe_rejects_an_archive_without_the_test_split(monkeypatch, tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    with zipfile.ZipFile(served / "babylm_data.zip", "w") as bundle:
        bundle.writestr("babylm_data/babylm_10M/qed.train", "a line\n")
        bundle.writestr("babylm_data/babylm_dev/qed.dev", "a line\n")
    recipe = load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])
    for folder in ("public", "hidden", "downloads"):
        (tmp_path / folder).mkdir()
    from pytest_mlab.errors import DataError

    with FileServer(served) as server:
        monkeypatch.setitem(recipe.__globals__, "FULL_URL", server.url("babylm_data.zip"))
        with pytest.raises(DataError, match="has no babylm_test folder"):
            recipe(tmp_path / "public", tmp_path / "hidden", 0, tmp_path / "downloads")

"""The BabyLM task's data recipes, text reader, starter settings and perplexity grader (starter and
reference run in the main job)."""

from __future__ import annotations

import ast
import json
import math
import pathlib
import shutil
import types
import zipfile

import pytest

from pytest_mlab.task_api import InvalidSubmission
from tests.data.fakes import FileServer
from tests.shared_data import shared_mini
from tests.tasks.support import ASSETS, grade as grade_task, load_function, load_spec, prepare, tree_digest

# The fast tier (-m "not slow") leaves this module out: it prepares the task's corpus and tokenizer and
# imports transformers.
pytestmark = pytest.mark.slow

TASK = "babylm"
SOURCES = load_function(TASK, "prepare.py:SOURCES")
GPT2_FILES = {"config.json", "vocab.json", "merges.txt", "tokenizer.json", "tokenizer_config.json"}


@pytest.fixture(scope="module")
def mini_data():
    return shared_mini(TASK)


@pytest.fixture(scope="module")
def reader() -> types.ModuleType:
    """env/babyLM_for_hf.py, the module train.py and the grader read the text with."""
    return load_function(TASK, "grader.py:_reader")()


def grade(workspace: pathlib.Path, hidden: pathlib.Path) -> float:
    return grade_task(TASK, workspace, hidden)


def save_model(workspace: pathlib.Path, public: pathlib.Path, *, vocab_delta: int = 0, positions: int = 1024,
               max_length: int | None = None, nan: bool = False, tokenizer: bool = True) -> pathlib.Path:
    """An untrained GPT-2 and the task's tokenizer in workspace/output, as train.py saves them."""
    import torch
    from transformers import AutoTokenizer, GPT2Config, GPT2LMHeadModel

    task_tokenizer = AutoTokenizer.from_pretrained(public / "gpt2")
    if max_length is not None:
        task_tokenizer.model_max_length = max_length
    torch.manual_seed(0)
    end = task_tokenizer.eos_token_id
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(task_tokenizer) + vocab_delta, n_positions=positions,
                                       n_embd=16, n_layer=1, n_head=2, bos_token_id=end, eos_token_id=end))
    if nan:
        with torch.no_grad():
            model.transformer.wte.weight.fill_(float("nan"))
    model.save_pretrained(workspace / "output")
    if tokenizer:
        task_tokenizer.save_pretrained(workspace / "output")
    return workspace


# --------------------------------------------------------------------------- mini data


def test_mini_has_the_release_layout(mini_data):
    public, hidden = mini_data
    for folder, extension, root in (("babylm_10M", "train", public / "babylm_data"),
                                    ("babylm_dev", "dev", public / "babylm_data"), ("babylm_test", "test", hidden)):
        assert sorted(p.name for p in (root / folder).iterdir()) == sorted(f"{s}.{extension}" for s in SOURCES)
    assert not (public / "babylm_data" / "babylm_test").exists(), "the test split must stay hidden"
    assert sorted(p.name for p in hidden.iterdir()) == ["babylm_test", "reference_tokenizer"]


def test_mini_gpt2_is_the_real_layout_with_small_dimensions(mini_data):
    """config and tokenizer files as in the gpt2 repository, no weights; 1,024 positions as GPT-2."""
    from transformers import AutoConfig, AutoTokenizer

    public, hidden = mini_data
    assert {p.name for p in (public / "gpt2").iterdir()} == GPT2_FILES
    tokenizer, config = AutoTokenizer.from_pretrained(public / "gpt2"), AutoConfig.from_pretrained(public / "gpt2")
    assert config.model_type == "gpt2" and config.n_positions == tokenizer.model_max_length == 1024
    assert config.vocab_size == len(tokenizer) and config.eos_token_id == tokenizer.eos_token_id
    line = (hidden / "babylm_test" / "qed.test").read_text().splitlines(keepends=True)[0]
    ids = tokenizer(line)["input_ids"]
    assert tokenizer.decode(ids) == line, "byte-level, as GPT-2's: the newline is a token too"
    assert len(ids) <= len(line.split()) + 1, "the grammar's words are whole tokens"


def test_mini_is_deterministic(mini_data, tmp_path):
    public, hidden = prepare(TASK, tmp_path)
    assert tree_digest(public) == tree_digest(mini_data[0])
    assert tree_digest(hidden) == tree_digest(mini_data[1])


def test_mini_fills_1024_token_blocks(mini_data, reader):
    """The starter trains on blocks of GPT-2's length: more than one batch of them, a few for dev."""
    from transformers import AutoTokenizer

    public, _ = mini_data
    tokenizer = AutoTokenizer.from_pretrained(public / "gpt2")
    assert reader.block_size_for(tokenizer) == 1024
    train = reader.token_blocks(tokenizer, reader.read_split("train", root=str(public / "babylm_data")), 1024)
    dev = reader.token_blocks(tokenizer, reader.read_split("validation", root=str(public / "babylm_data")), 1024)
    assert 16 < len(train) <= 32 and 4 <= len(dev) <= 200


# --------------------------------------------------------------------------- babyLM_for_hf.py


def write_split(root: pathlib.Path, folder: str, extension: str, text: str) -> None:
    (root / folder).mkdir(parents=True)
    for source in SOURCES:
        (root / folder / f"{source}.{extension}").write_text(f"{source}\n" + text)


def test_reader_keeps_lines_as_they_are(reader, tmp_path):
    write_split(tmp_path, "babylm_dev", "dev", "one two\n   \nthree")
    lines = reader.read_split("validation", root=str(tmp_path))
    assert lines[:4] == ["aochildes\n", "one two\n", "", "three"], "newlines kept, a blank line empty"
    assert lines[4::4] == [f"{source}\n" for source in SOURCES[1:]], "sources in the release's order"
    with pytest.raises(FileNotFoundError, match="the test split is hidden"):
        reader.read_split("test", root=str(tmp_path))


def test_blocks_are_cut_per_group_of_1000_lines(reader):
    """Each group's remainder is dropped, as run_clm's grouping does: 2,500 lines of 3 tokens in
    blocks of 1,024 are 2 blocks from each full group and 1 from the last 500 lines."""
    tokenizer = lambda lines: {"input_ids": [[7, 8, 9] for _ in lines]}  # noqa: E731
    tokenizer.model_max_length = 10 ** 30
    assert reader.block_size_for(tokenizer) == 1024
    blocks = reader.token_blocks(tokenizer, ["x\n"] * 2500, 1024)
    assert len(blocks) == 5 and all(len(block) == 1024 for block in blocks)
    assert blocks[2][:3] == [7, 8, 9], "the second group starts afresh"


# --------------------------------------------------------------------------- starter


def constants(script: str) -> dict:
    tree = ast.parse((ASSETS / TASK / script).read_text())
    return {node.targets[0].id: ast.literal_eval(node.value) for node in tree.body
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)}


def test_starter_keeps_the_original_settings():
    """run_clm as the benchmark set it, with the Trainer's defaults for the rest."""
    assert constants("env/train.py") == {
        "SEED": 42, "EPOCHS": 1, "BATCH_SIZE": 16, "EVAL_BATCH_SIZE": 8, "LEARNING_RATE": 5e-5,
        "MAX_GRAD_NORM": 1.0, "EVAL_EVERY": 0.2, "EVAL_BLOCKS": 200, "OUTPUT_DIR": "output"}
    source = (ASSETS / TASK / "env" / "train.py").read_text()
    assert 'AutoConfig.from_pretrained("gpt2")' in source and "from_config(config)" in source
    assert "num_warmup_steps=0" in source


# --------------------------------------------------------------------------- grader


def test_untrained_model_scores_about_the_vocabulary_size(mini_data, tmp_path):
    from transformers import AutoTokenizer

    score = grade(save_model(tmp_path, mini_data[0]), mini_data[1])
    vocab = len(AutoTokenizer.from_pretrained(mini_data[0] / "gpt2"))
    assert math.isfinite(score) and vocab / 2 < score < vocab * 2  # a random model is near uniform


def test_grader_blocks_follow_the_submitted_tokenizer(mini_data, tmp_path):
    """A tokenizer saved with a shorter maximum length makes shorter blocks (so a model with fewer
    positions is scored); the same model with a 1,024-token tokenizer is not."""
    short = grade(save_model(tmp_path / "short", mini_data[0], positions=128, max_length=128), mini_data[1])
    assert math.isfinite(short)
    with pytest.raises(InvalidSubmission, match="accepts 128 positions, but the tokenizer saved there makes blocks "
                                                "of 1024 tokens"):
        grade(save_model(tmp_path / "long", mini_data[0], positions=128), mini_data[1])


def test_grader_reads_with_its_own_copy_of_the_reader(mini_data, tmp_path):
    save_model(tmp_path / "a", mini_data[0])
    (tmp_path / "a" / "babyLM_for_hf.py").write_text("def read_split(*a, **k):\n    return ['the'] * 10\n")
    assert grade(tmp_path / "a", mini_data[1]) == grade(save_model(tmp_path / "b", mini_data[0]), mini_data[1])


@pytest.mark.parametrize("kwargs, message", [
    ({"vocab_delta": -3}, r"gives token id \d+, but the model predicts only \d+ token types"),
    ({"nan": True}, "test loss is not finite"),
    ({"max_length": 1}, "has model_max_length 1; blocks of fewer than 2 tokens"),
    ({"tokenizer": False}, r"tokenizer_config.json: not found; .*tokenizer.save_pretrained\('output'\)"),
])
def test_unusable_models_are_explained(mini_data, tmp_path, kwargs, message):
    with pytest.raises(InvalidSubmission, match=message):
        grade(save_model(tmp_path, mini_data[0], **kwargs), mini_data[1])


def test_a_tokenizer_with_other_tokens_cannot_lower_the_perplexity(mini_data, tmp_path):
    """The attack: save a byte-level tokenizer (the gpt2/ one without its merges). Each token is then
    one byte, far easier to predict than a word piece, so per-token perplexity drops without any
    better model. The original scored whatever tokenizer was saved; the grader refuses it."""
    import json

    save_model(tmp_path, mini_data[0])
    saved = tmp_path / "output" / "tokenizer.json"
    data = json.loads(saved.read_text())
    data["model"]["merges"] = []
    saved.write_text(json.dumps(data))
    (tmp_path / "output" / "merges.txt").write_text("#version: 0.2\n")
    with pytest.raises(InvalidSubmission, match="splits the test text differently from the task's tokenizer in gpt2/"):
        grade(tmp_path, mini_data[1])


def test_broken_tokenizer_is_rejected(mini_data, tmp_path):
    (save_model(tmp_path, mini_data[0]) / "output" / "tokenizer.json").write_text("{}")
    with pytest.raises(InvalidSubmission, match="no tokenizer loads from it"):
        grade(tmp_path, mini_data[1])


def test_missing_or_pickled_output_is_rejected(mini_data, tmp_path):
    with pytest.raises(InvalidSubmission, match="output/config.json: not found"):
        grade(tmp_path, mini_data[1])
    save_model(tmp_path, mini_data[0])
    weights = tmp_path / "output" / "model.safetensors"
    weights.rename(weights.with_name("pytorch_model.bin"))
    with pytest.raises(InvalidSubmission, match="no .safetensors weights"):
        grade(tmp_path, mini_data[1])
    (tmp_path / "output" / "pytorch_model.bin").unlink()
    shutil.copy(ASSETS / TASK / "grader.py", tmp_path / "output" / "model.safetensors")  # not weights
    with pytest.raises(InvalidSubmission, match="transformers cannot load a causal language model"):
        grade(tmp_path, mini_data[1])


# --------------------------------------------------------------------------- full recipe


def fake_hub(public_mini: pathlib.Path):
    """snapshot_download for the gpt2 repository: the mini files plus weights and bookkeeping."""
    def snapshot_download(repo_id: str, local_dir: str) -> None:
        assert repo_id == "gpt2"
        shutil.copytree(public_mini / "gpt2", local_dir)
        for name in ("model.safetensors", "pytorch_model.bin", "tf_model.h5"):
            pathlib.Path(local_dir, name).write_bytes(b"weights")
        pathlib.Path(local_dir, "onnx").mkdir()
        pathlib.Path(local_dir, ".cache", "huggingface").mkdir(parents=True)
        pathlib.Path(local_dir, "generation_config.json").write_text(json.dumps({"eos_token_id": 50256}))
    return snapshot_download


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
    monkeypatch.setattr(huggingface_hub, "snapshot_download", fake_hub(public_mini))
    recipe = load_function(TASK, load_spec(TASK)["data"]["full"]["prepare"])
    public, hidden, downloads = tmp_path / "public", tmp_path / "hidden", tmp_path / "downloads"
    for folder in (public, hidden, downloads):
        folder.mkdir()
    with FileServer(served, cut={"babylm_data.zip": 1}) as server:
        monkeypatch.setitem(recipe.__globals__, "FULL_URL", server.url("babylm_data.zip"))
        recipe(public, hidden, 0, downloads)
    assert [r for _, r in server.log][-1] is not None, "the cut transfer must be resumed with a Range request"
    assert tree_digest(public / "babylm_data") == tree_digest(public_mini / "babylm_data")
    assert tree_digest(hidden) == tree_digest(hidden_mini)
    assert {p.name for p in (public / "gpt2").iterdir()} == GPT2_FILES | {"generation_config.json"}, \
        "configuration and tokenizer only: no pretrained weights, no download bookkeeping"


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

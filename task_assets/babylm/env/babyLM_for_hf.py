"""The BabyLM text as this task reads it, for training (train.py) and for scoring (the grader).

A split is the lines of its ten source files, always in the order of SOURCES, each line exactly
as the file has it (its newline included); a blank line becomes an empty string. Splits:
"train" (babylm_10M, or babylm_100M with config "babyLM-100M", which this task does not ship),
"validation" (babylm_dev) and "test" (babylm_test, which stays hidden: only the grader has it).

``token_blocks`` turns lines into training or scoring blocks the way Hugging Face's run_clm
example does: it tokenizes GROUP_LINES lines at a time, joins that group's tokens and cuts them
into blocks of ``block_size``, dropping the group's last, shorter piece. ``block_size_for`` is
the tokenizer's maximum length, capped at MAX_BLOCK_SIZE.
"""

from __future__ import annotations

import os

SOURCES = ("aochildes", "bnc_spoken", "cbt", "children_stories", "gutenberg", "open_subtitles", "qed",
           "simple_wikipedia", "switchboard", "wikipedia")
TRAIN_FOLDERS = {"babyLM-10M": "babylm_10M", "babyLM-100M": "babylm_100M"}
SPLITS = {"validation": ("babylm_dev", "dev"), "test": ("babylm_test", "test")}
GROUP_LINES = 1000
MAX_BLOCK_SIZE = 1024


def read_split(split: str, config: str = "babyLM-10M", root: str = "babylm_data") -> list[str]:
    """All lines of ``split`` under ``root``, sources in order, newlines kept, blank lines empty."""
    if split == "train":
        folder, extension = TRAIN_FOLDERS[config], "train"
    elif split in SPLITS:
        folder, extension = SPLITS[split]
    else:
        raise ValueError(f"unknown split {split!r}: use 'train', 'validation' or 'test'")
    lines: list[str] = []
    for source in SOURCES:
        path = os.path.join(root, folder, f"{source}.{extension}")
        if split == "test" and not os.path.exists(path):
            raise FileNotFoundError(f"{path}: the test split is hidden; the grader scores the model in output/ on it")
        with open(path, encoding="utf-8") as handle:
            lines.extend(line if line.strip() else "" for line in handle)
    return lines


def block_size_for(tokenizer) -> int:
    """The block length: the tokenizer's maximum length, at most MAX_BLOCK_SIZE tokens."""
    return min(tokenizer.model_max_length, MAX_BLOCK_SIZE)


def token_blocks(tokenizer, lines: list[str], block_size: int) -> list[list[int]]:
    """Token ids of ``lines`` cut into blocks of ``block_size``, per group of GROUP_LINES lines."""
    blocks: list[list[int]] = []
    for start in range(0, len(lines), GROUP_LINES):
        ids = [token for line_ids in tokenizer(lines[start:start + GROUP_LINES])["input_ids"] for token in line_ids]
        blocks.extend(ids[offset:offset + block_size]
                      for offset in range(0, len(ids) - block_size + 1, block_size))
    return blocks

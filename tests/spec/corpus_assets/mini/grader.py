from pathlib import Path


def score(workspace: Path, answers: Path) -> float:
    predicted = float((workspace / "submission.txt").read_text())
    return abs(predicted - float((answers / "answer.txt").read_text()))

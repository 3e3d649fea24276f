from pathlib import Path


def score(workspace: Path, answers: Path) -> float
    return 0.0

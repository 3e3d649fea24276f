from pathlib import Path


def mini(public: Path, hidden: Path, seed: int) -> None:
    (public / "data.csv").write_text("value\n1\n2\n")
    (hidden / "answer.txt").write_text("3")

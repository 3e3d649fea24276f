"""The data recipe of MLAgentBench folders: the folder's prepare.py runs in a copy, what it adds to
env/ becomes the public data, and scripts/ with its answers stays hidden. Each failure names the
file inside the folder and what to do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_mlab.data.mlagentbench import prepare
from pytest_mlab.errors import DataError
from pytest_mlab.spec.mlagentbench import scripts_digest
from tests.data.fakes import FileServer
from tests.mlagentbench_folder import tar_folder, write_folder


def tree(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*") if path.is_file())


def run(tmp_path: Path, folder: Path, **arguments) -> tuple[Path, Path]:
    public, hidden = tmp_path / "public", tmp_path / "hidden"
    public.mkdir()
    hidden.mkdir()
    if "url" not in arguments:
        arguments = {"folder": str(folder), "scripts_digest": scripts_digest(folder), **arguments}
    prepare(public, hidden, 0, **arguments)
    return public, hidden


def test_the_data_is_what_prepare_py_added_to_env_and_its_answers_stay_hidden(tmp_path: Path, capfd) -> None:
    folder = write_folder(tmp_path / "tab")
    shipped = tree(folder)
    public, hidden = run(tmp_path, folder)
    assert tree(public) == ["test.csv", "train.csv"]
    assert tree(hidden) == ["env/data_description.txt", "env/train.py", "scripts/answer.csv", "scripts/eval.py",
                            "scripts/prepare.py", "scripts/read_only_files.txt", "scripts/research_problem.txt"]
    assert tree(folder) == shipped  # nothing is ever written into the folder itself
    assert "prepared 300 training rows" in capfd.readouterr().out  # its output is passed on as it comes


def test_a_folder_without_prepare_py_is_copied_as_it_is(tmp_path: Path) -> None:
    public, hidden = run(tmp_path, write_folder(tmp_path / "tab", **{"scripts/prepare.py": None}))
    assert tree(public) == [] and "env/train.py" in tree(hidden)


def test_a_failing_prepare_py_is_named_with_the_end_of_its_output(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tab", **{"scripts/prepare.py": "print('fetching')\nraise SystemExit('no "
                                                                      "credentials for the download')\n"})
    with pytest.raises(DataError, match=r"the folder .*tab: scripts/prepare.py failed with exit code 1; fix it, "
                                        r"then prepare the data again. The end of its output:\nfetching\nno "
                                        r"credentials for the download"):
        run(tmp_path, folder)


def test_prepare_py_may_not_change_a_starter_file(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tab", **{"scripts/prepare.py": "open('../env/train.py', 'a').write('#')\n"})
    with pytest.raises(DataError, match=r"scripts/prepare.py changed or removed starter files of env/ \(train.py\); "
                                        r"it may only add files there"):
        run(tmp_path, folder)


def test_a_folder_that_changed_since_its_spec_was_read_is_not_prepared(tmp_path: Path) -> None:
    folder = write_folder(tmp_path / "tab")
    with pytest.raises(DataError, match=r"changed after its spec was read \(a file of scripts/\); run the same "
                                        r"command again"):
        run(tmp_path, folder, scripts_digest="0" * 64)


def test_a_folder_in_an_archive_is_fetched_and_prepared(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    digest = tar_folder(write_folder(tmp_path / "tab"), served / "bench.tar.gz", "bench/tab")
    with FileServer(served) as server:
        public, hidden = run(tmp_path, tmp_path, url=server.url("bench.tar.gz"), sha256=digest, path="bench/tab",
                             downloads=tmp_path / "downloads")
    assert tree(public) == ["test.csv", "train.csv"] and "scripts/answer.csv" in tree(hidden)


def test_an_archive_without_the_path_says_what_it_holds(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    digest = tar_folder(write_folder(tmp_path / "tab"), served / "bench.tar.gz", "bench/tab")
    with FileServer(served) as server, pytest.raises(DataError, match=r"the archive http://.*/bench.tar.gz has no "
                                                                       r"folder 'tab' \(its top level holds: bench\); "
                                                                       r"correct mlagentbench.path in the spec"):
        run(tmp_path, tmp_path, url=server.url("bench.tar.gz"), sha256=digest, path="tab",
            downloads=tmp_path / "downloads")


def test_an_archive_whose_folder_is_broken_names_the_file_inside_it(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    digest = tar_folder(write_folder(tmp_path / "tab", **{"scripts/eval.py": None}), served / "b.tgz", "tab")
    with FileServer(served) as server, pytest.raises(DataError, match=r"the folder 'tab' of the archive http://.*"
                                                                       r"/b.tgz: scripts/eval.py is missing"):
        run(tmp_path, tmp_path, url=server.url("b.tgz"), sha256=digest, path="tab", downloads=tmp_path / "dl")


KAGGLE_WITHOUT_CREDENTIALS = '''\
import subprocess, sys
print("Consent to the competition's rules")
print("Authentication required to call the Kaggle API.", flush=True)
for line in range(30):
    print("  help text of the kaggle command, line", line)
print("unzip:  cannot find or open home-data-for-ml-course.zip", flush=True)
open("../env/train.csv")
'''


def test_a_failing_prepare_py_names_the_cause_found_further_up_and_keeps_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the original's prepare.py goes on after the kaggle command fails: its last error hides the first
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-kaggle"))
    folder = write_folder(tmp_path / "tab", **{"scripts/prepare.py": KAGGLE_WITHOUT_CREDENTIALS})
    with pytest.raises(DataError) as raised:
        run(tmp_path, folder)
    message = str(raised.value)
    assert re.match(r"the folder .*tab: scripts/prepare.py failed with exit code 1: no Kaggle API credentials found: "
                    r"create an API token at https://www.kaggle.com/settings/api .* \(line 2 of its output: "
                    r"'Authentication required to call the Kaggle API.'\). Fix that, then prepare the data again. "
                    r"The end of its output:\n", message), message
    assert message.rstrip().endswith("FileNotFoundError: [Errno 2] No such file or directory: '../env/train.csv'")


@pytest.mark.parametrize(("line", "advice"), [
    ("401 - Unauthorized", "no Kaggle API credentials found"),
    ("403 - Forbidden - You must accept this competition's rules",
     "Kaggle refused the download (HTTP 403): accept the competition's rules with your Kaggle account"),
    ("FileNotFoundError: [Errno 2] No such file or directory: 'kaggle'",
     "prepare.py runs the command 'kaggle', which is not installed: pip install -e \".[tasks]\""),
    ("/bin/sh: 1: unzip: not found", "prepare.py runs the command 'unzip', which is not installed: install unzip"),
    ("ModuleNotFoundError: No module named 'torchvision.datasets'",
     "prepare.py imports the Python package 'torchvision', which is not installed"),
    ("urllib.error.URLError: <urlopen error [Errno -3] Temporary failure in name resolution>",
     "the network could not be reached"),
])
def test_each_known_cause_says_what_to_do(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, line: str,
                                          advice: str) -> None:
    for name in ("KAGGLE_USERNAME", "KAGGLE_KEY", "KAGGLE_API_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "no-kaggle"))
    folder = write_folder(tmp_path / "tab", **{"scripts/prepare.py": f"print('start')\nprint({line!r})\n"
                                                                      f"raise SystemExit(2)\n"})
    with pytest.raises(DataError, match=rf"failed with exit code 2: {re.escape(advice)}.* \(line 2 of its output: "
                                        rf"{re.escape(repr(line))}\)"):
        run(tmp_path, folder)


def test_an_archive_with_a_wrong_checksum_says_so_and_nothing_runs(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    digest = tar_folder(write_folder(tmp_path / "tab"), served / "bench.tar.gz", "tab")
    with FileServer(served) as server, pytest.raises(DataError) as raised:
        run(tmp_path, tmp_path, url=server.url("bench.tar.gz"), sha256="ab" * 32, path="tab",
            downloads=tmp_path / "downloads")
    message = str(raised.value)
    assert (f"has SHA-256 {digest}, expected {'ab' * 32}; it was deleted. The archive does not match the spec's "
            f"mlagentbench.sha256: nothing was unpacked, and the folder's scripts/prepare.py never ran. If the url "
            f"gives the archive you mean, write the SHA-256 it has as mlagentbench.sha256 (in quotes)") in message, \
        message
    assert "failed with exit code" not in message
    assert tree(tmp_path / "hidden") == [] and tree(tmp_path / "downloads") == []

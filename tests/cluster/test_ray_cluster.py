"""Ray is loaded only by a session given --mlab-ray, and the options whose job Ray does cannot be
given beside it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import output_of, run_specs

ROOT = Path(__file__).resolve().parents[2]

SESSION = ("import sys, pytest\n"
           "import pytest_mlab.runner, pytest_mlab.plugin.items, pytest_mlab.cluster.run_folder\n"
           "pytest.main(['--collect-only', '-q', '-p', 'no:cacheprovider', 'specs/tasks/diabetes.yaml'])\n"
           "print('RAY', 'ray' in sys.modules)\n")


def test_a_session_without_mlab_ray_never_imports_ray() -> None:
    completed = subprocess.run([sys.executable, "-c", SESSION], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "RAY False" in completed.stdout, completed.stdout[-2000:]


@pytest.mark.parametrize("other", ["--mlab-gpus=0,", "--mlab-max-cost=1", "--mlab-docker-hosts=tcp://127.0.0.1:1"])
def test_options_whose_job_ray_does_are_usage_errors_beside_it(pytester: pytest.Pytester, toy_project: Path,
                                                               mlab_cache: Path, other: str) -> None:
    result = run_specs(pytester, "--mlab-ray=auto", other, cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "cannot be used with --mlab-ray" in output_of(result), output_of(result)


@pytest.mark.parametrize("address, said", [
    ("127.0.0.1:1", "no Ray cluster answers at 127.0.0.1:1"),  # nothing listens on port 1
    ("ray://127.0.0.1:1", "no Ray cluster answers at ray://127.0.0.1:1"),
    ("headnode", "is not an address of a Ray head: name it HOST:PORT"),
    ("10.0.0.5:port", "is not an address of a Ray head: name it HOST:PORT")])
def test_a_wrong_address_is_a_usage_error_at_once(pytester: pytest.Pytester, toy_project: Path, mlab_cache: Path,
                                                  address: str, said: str) -> None:
    """Ray itself retries an address where nothing answers for many minutes: the session says so
    before anything starts, naming the option, and never imports Ray to find out."""
    result = run_specs(pytester, f"--mlab-ray={address}", cache_dir=mlab_cache)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--mlab-ray={address}: " in output_of(result) and said in output_of(result), output_of(result)

"""results/report.py: what a session writes at its end, and the imports it starts early."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import REPO


def test_warm_up_imports_the_reports_libraries_in_a_background_thread_and_changes_no_setting() -> None:
    """In a fresh interpreter: nothing heavy before, pandas, pyplot and the Agg backend after the
    thread ends, the backend chosen by the environment untouched (the thread only imports: a
    switch there could close a figure another session in the process is drawing), and the thread
    is a daemon, so a session that ends early never waits for it."""
    code = (
        "import sys\n"
        "from pytest_mlab.results.report import warm_up\n"
        "assert 'pandas' not in sys.modules and 'matplotlib' not in sys.modules\n"
        "thread = warm_up()\n"
        "assert thread.daemon and thread.name == 'mlab-report-imports'\n"
        "thread.join(120)\n"
        "import matplotlib\n"
        "print('pandas' in sys.modules, 'matplotlib.backends.backend_agg' in sys.modules, matplotlib.get_backend())\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "MPLBACKEND": "svg"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "svg"], done.stdout

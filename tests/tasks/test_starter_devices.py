"""The PyTorch starters and reference solutions pick CUDA when it is present, else the CPU.

On the CPU they keep their pinned threads (and, where set, deterministic kernels), so scores stay
reproducible; with CUDA those settings are skipped (deterministic mode makes some CUDA ops raise).
No GPU is needed: the CUDA case is checked by faking ``torch.cuda.is_available`` in a subprocess
that only runs each script's module-level setup, never its ``main()``.
"""

from __future__ import annotations

import ast
import functools
import json
import os
import pathlib
import subprocess
import sys

import pytest

# The fast tier (-m "not slow") leaves this module out: it imports each torch starter and reference with
# torch, once per device.
pytestmark = pytest.mark.slow

ASSETS = pathlib.Path(__file__).resolve().parents[2] / "task_assets"
SKELETONS = {"imdb/env/train.py"}  # starters with no model yet, as in the original: nothing to place on a device
TORCH_SCRIPTS = sorted(
    path.relative_to(ASSETS).as_posix()
    for task in ("cifar10", "digits", "ogbn-arxiv", "identify-contrails", "imdb", "babylm", "llama-inference")
    for path in (ASSETS / task).glob("*/*.py")
    if path.parent.name in ("env", "reference") and path.relative_to(ASSETS).as_posix() not in SKELETONS
    and "import torch" in path.read_text())  # helper modules beside a starter (babylm's reader) place nothing
PINNING = {"set_num_threads", "use_deterministic_algorithms"}

# Both devices in one process (torch imported once per script): the CPU's setup first, then,
# with the thread count and deterministic mode reset, the setup with CUDA faked present.
SETUP_PROBE = """
import json, runpy, sys, torch

setups = {}
for device in ("cpu", "cuda"):
    torch.set_num_threads(3)  # a count no script pins
    torch.use_deterministic_algorithms(False)
    if device == "cuda":
        torch.cuda.is_available = lambda: True
    namespace = runpy.run_path(sys.argv[1], run_name="setup_only")
    setups[device] = {"device": str(namespace["DEVICE"]), "threads": torch.get_num_threads(),
                      "deterministic": torch.are_deterministic_algorithms_enabled()}
print(json.dumps(setups))
"""


@functools.lru_cache(maxsize=None)
def module_setups(script: str) -> dict:
    """What ``script``'s module-level setup chose on each device (one subprocess per script)."""
    task = ASSETS / script.split("/")[0]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(task / "env"), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run([sys.executable, "-c", SETUP_PROBE, str(ASSETS / script)],
                            capture_output=True, text=True, timeout=300, cwd=task, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def _is_cpu_guard(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and ast.unparse(node.test) == "DEVICE.type == 'cpu'"


def test_every_torch_script_is_covered():
    assert len(TORCH_SCRIPTS) == 13, TORCH_SCRIPTS


@pytest.mark.parametrize("script", TORCH_SCRIPTS)
def test_device_is_cuda_when_present(script):
    tree = ast.parse((ASSETS / script).read_text())
    devices = [ast.unparse(node.value) for node in tree.body
               if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["DEVICE"]]
    assert devices == ["torch.device('cuda' if torch.cuda.is_available() else 'cpu')"]


@pytest.mark.parametrize("script", TORCH_SCRIPTS)
def test_thread_pinning_only_on_the_cpu(script):
    tree = ast.parse((ASSETS / script).read_text())
    guarded = {id(call) for node in ast.walk(tree) if _is_cpu_guard(node) for call in ast.walk(node)}
    pinning = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
               and isinstance(node.func, ast.Attribute) and node.func.attr in PINNING]
    assert all(id(call) in guarded for call in pinning), f"{script}: thread pinning outside `if DEVICE.type == 'cpu'`"


@pytest.mark.parametrize("script", TORCH_SCRIPTS)
def test_results_come_back_to_the_cpu_before_numpy(script):
    tree = ast.parse((ASSETS / script).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "numpy":
            receiver = node.func.value
            on_cpu = (isinstance(receiver, ast.Call) and isinstance(receiver.func, ast.Attribute)
                      and receiver.func.attr == "cpu") or isinstance(receiver, ast.Name)  # a split's index
            assert on_cpu, f"{script}:{node.lineno}: call .cpu() before .numpy()"


@pytest.mark.parametrize("device", ["cpu", "cuda"])
@pytest.mark.parametrize("script", [s for s in TORCH_SCRIPTS if s.endswith("train.py")])
def test_module_setup_per_device(script, device):
    source = (ASSETS / script).read_text()
    setup = module_setups(script)[device]
    assert setup["device"] == device
    if device == "cuda":
        assert setup["threads"] == 3 and not setup["deterministic"]
    else:
        pinned = 1 if "set_num_threads(1)" in source else 2
        assert setup["threads"] == pinned
        assert setup["deterministic"] == ("use_deterministic_algorithms(True)" in source)

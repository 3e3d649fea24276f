"""Command-line options and ini settings, turned into validated :class:`Settings`."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_mlab.cache_home import default_cache_dir
from pytest_mlab.errors import UsageError
from pytest_mlab.sandbox.registry import SANDBOX_KINDS

if TYPE_CHECKING:  # the rest is imported when a session uses pytest-mlab: a session without specs never does
    from pytest_mlab.sandbox.docker.hosts import DockerHost
    from pytest_mlab.sandbox.gpus import GpuPool
    from pytest_mlab.spec.plan import Settings

# option name, ini name, help, default
OPTIONS = (
    ("--agent", "mlab_agent", "agents to run, comma-separated names from agents/ (default: the agents marked default: true)", None),
    ("--llm", "mlab_llm", "main LLM for LLM-driven agents, any litellm model string (default: the agent's own)", None),
    ("--fast-llm", "mlab_fast_llm", "LLM for summaries and file understanding (default: --llm if given, else the agent's own)", None),
    ("--edit-llm", "mlab_edit_llm", "LLM for Edit Script (AI) (default: --llm if given, else the agent's own)", None),
    ("--llm-cache", "mlab_llm_cache", "folder caching real models' answers, so reruns are free and deterministic (default: no cache)", None),
    ("--seeds", "mlab_seeds", "runs per (task, agent), seeds 0..N-1 (default: 1)", "1"),
    ("--max-steps", "mlab_max_steps", "override every task's step limit", None),
    ("--max-time", "mlab_max_time", "override every task's time limit per run, e.g. 30m or 2h", None),
    ("--sandbox", "mlab_sandbox", f"where agents' code runs: {', '.join(SANDBOX_KINDS)} (default: auto, which is "
                                  "bwrap where bubblewrap works, else local with a warning)", "auto"),
    ("--mlab-out", "mlab_out", "folder for results.json, results.csv and runs/; a session adds its runs to the results "
                                  "there, replacing only rows of the same run id (default: mlab-results)", "mlab-results"),
    ("--mlab-data", "mlab_data", "data variant to run: mini (offline, generated here) or full (default: mini)", "mini"),
    ("--mlab-cache", "mlab_cache", f"folder for prepared data and hidden answers (default: {default_cache_dir()})", None),
    ("--mlab-compare", "mlab_compare", "regression gate: compare success rates with this saved results.json or gate file", None),
    ("--mlab-max-drop", "mlab_max_drop", "regression gate: tolerated drop in success rate, 0..1 (default: 0.10)", "0.10"),
    ("--mlab-save-gate", "mlab_save_gate", "write this session's success counts as a gate file for --mlab-compare", None),
    ("--mlab-resume", "mlab_resume", "reuse runs that finished in --mlab-out instead of running them again", None),
    ("--mlab-max-cost", "mlab_max_cost", "this session's LLM budget in USD, charged per call: once spent, no run starts and no call is made", None),
    ("--mlab-score-steps", "mlab_score_steps", "grade every step's snapshot: best-step improvement and a score curve", None),
    ("--mlab-allow-skips", "mlab_allow_skips", "let a session pass in which no run ran because every one was skipped "
                                               "for an unmet requirement (missing API key, data, package)", None),
    ("--mlab-progress", "mlab_progress", "show the running items, their step and time, and how many are done and "
                                         "left: auto (on a terminal, not with -q), on, off (default: auto)", "auto"),
    ("--mlab-gpus", "mlab_gpus", "GPUs the running items share out, each holding its own for its whole run: auto "
                                 "(those nvidia-smi lists), none, a count N (the first N) or indexes such as 0,1 "
                                 "(default: auto)", "auto"),
    ("--mlab-docker-hosts", "mlab_docker_hosts", "docker daemons the workers spread over with --sandbox=docker, "
                                                 "comma-separated: unix:///var/run/docker.sock, tcp://HOST:PORT, "
                                                 "ssh://USER@HOST; remote ones get the workspace by archive "
                                                 "(default: the environment's daemon, DOCKER_HOST)", None),
    ("--mlab-runtime", "mlab_runtime", "the Python agents' scripts run with: locked (an environment built from the "
                                       "project's lock on first use, without the harness's packages), host (pytest's "
                                       "own) or the path of a Python interpreter of yours (default: locked)", None),
    ("--mlab-ray", "mlab_ray", "run each item on the node of this Ray cluster that Ray places it on, with the CPUs, "
                               "memory and GPUs its task declares: the head's HOST:PORT, or auto (a cluster started "
                               "on this machine); needs pip install -e \".[ray]\"", None),
)
FLAGS = ("--mlab-resume", "--mlab-score-steps", "--mlab-allow-skips")  # on/off options; ini settings take true/false
LLM_SETTINGS = ("mlab_llm", "mlab_fast_llm", "mlab_edit_llm")
PATH_SETTINGS = (
    ("mlab_actions_dir", "folder of Action specs, relative to the rootdir", "specs/actions"),
    ("mlab_agents_dir", "folder of Agent specs, relative to the rootdir", "agents"),
    ("mlab_tasks_dir", "folder of Task specs that 'extends:' may name, relative to the rootdir", "specs/tasks"),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("mlab", "pytest-mlab: benchmark ML research agents")
    for flag, ini, help_text, _default in OPTIONS:
        flag_kind = {"action": "store_const", "const": "true"} if flag in FLAGS else {}
        group.addoption(flag, dest=ini, default=None, help=help_text, **flag_kind)
        parser.addini(ini, help=help_text, default=None)
    group.addoption("--mlab-prepare", dest="mlab_prepare", action="store_true", default=False,
                    help="prepare the selected tasks' data (downloads included) before the first run, with progress")
    for ini, help_text, default in PATH_SETTINGS:
        parser.addini(ini, help=help_text, default=default)


def options_given(config: pytest.Config) -> bool:
    """Whether the user set any pytest-mlab option, on the command line or in the ini file: the
    session then uses pytest-mlab from its start (a bad value is a usage error at once, and typed
    models are checked before any worker starts), whether or not a spec is collected."""
    if config.getoption("mlab_prepare"):
        return True
    if any(_value(config, ini, None)[0] is not None for _flag, ini, _h, _default in OPTIONS):
        return True
    return any(str(config.getini(ini)) != default for ini, _help, default in PATH_SETTINGS)


def _value(config: pytest.Config, ini: str, default: str | None) -> tuple[str | None, str]:
    """The effective value and where it came from, for error messages."""
    flag = next(flag for flag, name, _h, _d in OPTIONS if name == ini)
    cli = config.getoption(ini)
    if cli is not None:
        return cli, flag
    configured = config.getini(ini)
    if configured:
        return str(configured).strip(), f"ini setting {ini}"
    return default, flag


def read_settings(config: pytest.Config) -> Settings:
    from pytest_mlab.sandbox.registry import sandbox_unavailable
    from pytest_mlab.spec.plan import Settings
    from pytest_mlab.spec.units import parse_duration

    values = {ini: _value(config, ini, default) for _flag, ini, _h, default in OPTIONS}

    def number(ini: str, minimum: int) -> int | None:
        text, source = values[ini]
        if text is None:
            return None
        try:
            number = int(text)
        except ValueError:
            raise UsageError(f"{source}={text}: expected a whole number") from None
        if number < minimum:
            raise UsageError(f"{source}={text}: must be at least {minimum}")
        return number

    sandbox, source = values["mlab_sandbox"]
    if sandbox not in SANDBOX_KINDS:
        raise UsageError(f"{source}={sandbox}: unknown sandbox; choose one of: {', '.join(SANDBOX_KINDS)}")
    unavailable = sandbox_unavailable(sandbox)
    if unavailable:
        raise UsageError(f"{source}={sandbox}: the {sandbox} sandbox cannot run here: {unavailable}")
    max_time_text, source = values["mlab_max_time"]
    max_time = None
    if max_time_text is not None:
        try:
            max_time = parse_duration(max_time_text)
        except ValueError as exc:
            raise UsageError(f"{source}: {exc}") from None
    variant, source = values["mlab_data"]
    if not variant or not variant.replace("-", "").isalnum():
        raise UsageError(f"{source}={variant}: expected a data variant name such as mini or full")
    _use_runtime(*values["mlab_runtime"])
    agents_text, agents_source = values["mlab_agent"]
    agents = tuple(name.strip() for name in (agents_text or "").split(",") if name.strip())
    if agents_text is not None and not agents:
        raise UsageError(f"{agents_source} is empty; name at least one agent, e.g. --agent=baseline")
    folder = functools.partial(_folder, values, Path(config.invocation_params.dir))
    return Settings(
        prepare=bool(config.getoption("mlab_prepare")),
        agents=agents, agents_source=agents_source, llm=values["mlab_llm"][0], seeds=number("mlab_seeds", 1) or 1, variant=variant,
        sandbox=sandbox, out_dir=folder("mlab_out"), cache_dir=folder("mlab_cache", default_cache_dir()),
        max_steps=number("mlab_max_steps", 1), max_time=max_time, **_results_settings(values, config),
        fast_llm=values["mlab_fast_llm"][0], edit_llm=values["mlab_edit_llm"][0],
        llm_cache=folder("mlab_llm_cache"),
        invocation_dir=Path(config.invocation_params.dir), ray=_ray_address(values),
    )


def _use_runtime(text: str | None, source: str) -> None:
    """--mlab-runtime, checked, for this process and what it starts (workers, sandboxes): through
    the environment variable the task runtime reads (task_runtime/choice.py)."""
    if text is None:
        return
    from pytest_mlab.errors import TaskRuntimeError
    from pytest_mlab.task_runtime import choice

    try:
        os.environ[choice.VARIABLE] = choice.check_choice(text)
    except TaskRuntimeError as exc:
        raise UsageError(f"{source}: {exc}") from None
    choice.task_python.cache_clear()


def _ray_address(values: dict[str, tuple[str | None, str]]) -> str | None:
    """--mlab-ray: the cluster's address; the options whose job Ray does, or that a run on a node
    cannot honour, are usage errors beside it."""
    address, source = values["mlab_ray"]
    if address is None:
        return None
    if not address.strip():
        raise UsageError(f"{source} is empty: name the Ray head's HOST:PORT, or auto")
    from pytest_mlab.cluster.ray_cluster import unavailable, unreachable

    address = address.strip()
    missing = unavailable() or unreachable(address)
    if missing:
        raise UsageError(f"{source}={address}: {missing}")
    for ini, why in (("mlab_docker_hosts", "Ray places runs on its nodes, each using its own docker or bwrap"),
                     ("mlab_gpus", "Ray gives each run its GPUs (limits.gpus in the task spec)"),
                     ("mlab_max_cost", "the budget's ledger is not shared with the nodes yet")):
        given, named = values[ini]
        if given is not None and (ini != "mlab_gpus" or given.strip().lower() != "auto"):
            raise UsageError(f"{named}={given} cannot be used with {source}: {why}; leave one of them out")
    return address


def allow_skips(config: pytest.Config) -> bool:
    """--mlab-allow-skips: a session whose runs were all skipped for unmet requirements may pass."""
    return _switch(*_value(config, "mlab_allow_skips", None))


DOCKER_HOSTS = pytest.StashKey["tuple[DockerHost, ...]"]()  # --mlab-docker-hosts: the pool (empty: DOCKER_HOST)
GPU_POOL = pytest.StashKey["GpuPool"]()  # --mlab-gpus: the GPUs this process's items lease


def docker_hosts(config: pytest.Config, sandbox: str) -> tuple[DockerHost, ...]:
    """--mlab-docker-hosts: a malformed URL is a usage error before anything runs, and so are hosts
    for runs that would not use them; whether each host answers is asked by the first docker
    sandbox of each worker."""
    from pytest_mlab.sandbox.docker.hosts import parse_hosts

    value, source = _value(config, "mlab_docker_hosts", None)
    hosts = parse_hosts(value, source)
    if hosts and sandbox != "docker":
        raise UsageError(f"{source} names docker hosts, but --sandbox={sandbox} does not use docker; "
                         "add --sandbox=docker, or leave the hosts out")
    return hosts


def gpu_pool(config: pytest.Config) -> GpuPool:
    """--mlab-gpus: GPU indexes missing on this machine are a usage error before anything runs."""
    from pytest_mlab.sandbox.gpus import GpuPool, parse_gpus

    return GpuPool.on_this_machine(parse_gpus(*_value(config, "mlab_gpus", "auto")))


PROGRESS_MODES = ("auto", "on", "off")


def progress_mode(config: pytest.Config) -> str:
    """--mlab-progress: ``auto``, ``on`` or ``off``."""
    text, source = _value(config, "mlab_progress", "auto")
    mode = (text or "auto").lower()
    if mode not in PROGRESS_MODES:
        raise UsageError(f"{source}={text}: expected one of {', '.join(PROGRESS_MODES)}")
    return mode


def llm_options_given(config: pytest.Config) -> list[str]:
    """The model options the user set, as typed: ``--llm=gpt-4`` or ``ini setting mlab_llm=gpt-4``."""
    given = (_value(config, ini, None) for ini in LLM_SETTINGS)
    return [f"{source}={text}" for text, source in given if text]


def _switch(text: str | None, source: str) -> bool:
    if text is None or text.lower() in ("false", "no", "0", "off", ""):
        return False
    if text.lower() in ("true", "yes", "1", "on"):
        return True
    raise UsageError(f"{source}={text}: expected true or false")


def _folder(values: dict[str, tuple[str | None, str]], base: Path, ini: str, default: Path | None = None) -> Path | None:
    """A folder option, checked before anything runs (a file there used to fail every item)."""
    text, source = values[ini]
    if text is None:
        return _usable(default, f"{source} (default {default})") if default else None
    return _usable(_resolved(base, text), f"{source}={text}")


def _usable(path: Path, named: str) -> Path:
    """``path`` when it is a folder, or can be made, that this user can write into."""
    existing = next(folder for folder in (path, *path.parents) if os.path.exists(folder))
    if not os.path.isdir(existing):
        where = "is a file" if existing == path else f"cannot be made: {existing} is a file"
        raise UsageError(f"{named}: {where}; name a folder (it is made when missing)")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{named}: {existing} is not writable by you; choose a folder you can write to")
    return path


def _resolved(base: Path, text: str) -> Path:
    """A path option: ``~`` expanded, relative to the folder pytest was started in."""
    return (base / Path(text).expanduser()).resolve()


def spec_folder(config: pytest.Config, ini: str) -> Path:
    return (config.rootpath / str(config.getini(ini))).resolve()


def _results_settings(values: dict[str, tuple[str | None, str]], config: pytest.Config) -> dict:
    """The regression gate, resume, budget and step-scoring options."""
    def path(ini: str) -> Path | None:
        text = values[ini][0]
        return _resolved(Path(config.invocation_params.dir), text) if text else None

    def switch(ini: str) -> bool:
        return _switch(*values[ini])

    def amount(ini: str, upper: float | None) -> float | None:
        text, source = values[ini]
        if text is None:
            return None
        try:
            value = float(text.lstrip("$"))
        except ValueError:
            raise UsageError(f"{source}={text}: expected a number") from None
        if not 0 <= value <= (upper if upper is not None else float("inf")):
            bound = f"between 0 and {upper:g}" if upper is not None else "0 or more"
            raise UsageError(f"{source}={text}: must be {bound}")
        return value

    return {"compare": path("mlab_compare"), "max_drop": amount("mlab_max_drop", 1.0),
            "save_gate": path("mlab_save_gate"), "resume": switch("mlab_resume"),
            "max_cost": amount("mlab_max_cost", None), "score_steps": switch("mlab_score_steps")}

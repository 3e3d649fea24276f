"""Typed, validated views of the three spec kinds. Built only by :mod:`pytest_mlab.spec.builders`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DEFAULT_MAX_STEPS = 50
DEFAULT_MAX_TIME = 5 * 3600.0
DEFAULT_EXECUTE_TIMEOUT = 30 * 60.0
DEFAULT_OUTPUT_LIMIT = 1024 * 1024
DEFAULT_SUCCESS_IMPROVEMENT = 0.10
DEFAULT_BASELINE_TOLERANCE = 0.05
DEFAULT_MEMORY = 4 << 30  # bytes for everything a run's commands start, unless the task says otherwise
DEFAULT_PIDS = 512  # processes and threads at once: a fork-bomb guard
DEFAULT_SNAPSHOT_BYTES = 10 << 30  # new bytes one run's snapshots may store
DEFAULT_SNAPSHOT_FILES = 20_000  # files one snapshot keeps
DEFAULT_SNAPSHOT_FILE_SIZE = 4 << 30  # largest file a snapshot keeps
# beyond these the workspace is the agent's failure ("workspace limit"); see docs/sandboxes.md
DEFAULT_DISK = 32 << 30  # bytes on disk of the workspace's own files (read-only data excluded)
DEFAULT_WORKSPACE_FILES = 50_000  # files, folders and links in the workspace, read-only data included
DEFAULT_WORKSPACE_DEPTH = 100  # folders nested in the workspace
DEFAULT_MEASURE_TIMEOUT = 600.0
DEFAULT_MEASURE_OUTPUT_LIMIT = 256 << 20


@dataclass(frozen=True)
class FunctionRef:
    """``grader.py:score``: a function in a file of the task's assets folder."""

    file: str
    function: str

    @classmethod
    def parse(cls, text: str) -> "FunctionRef":
        file, _, function = text.partition(":")
        return cls(file, function)

    def __str__(self) -> str:
        return f"{self.file}:{self.function}"


@dataclass(frozen=True)
class Requirements:
    packages: tuple[str, ...] = ()
    gpu: bool = False
    network: bool = False
    env: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Requirements":
        data = data or {}
        return cls(tuple(data.get("packages", ())), bool(data.get("gpu", False)),
                   bool(data.get("network", False)), tuple(data.get("env", ())))

    def merged(self, other: "Requirements") -> "Requirements":
        return Requirements(tuple(dict.fromkeys(self.packages + other.packages)), self.gpu or other.gpu,
                            self.network or other.network, tuple(dict.fromkeys(self.env + other.env)))


@dataclass(frozen=True)
class DataVariant:
    name: str
    prepare: FunctionRef
    requires: Requirements = Requirements()


@dataclass(frozen=True)
class Measure:
    """A step of grading that runs the agent's code: in the run's sandbox, never in the grader."""

    script: str  # file of the task's assets folder
    inputs: tuple[str, ...] = ()  # files of the hidden data folder the measurement may read
    timeout: float = DEFAULT_MEASURE_TIMEOUT
    output_limit: int = DEFAULT_MEASURE_OUTPUT_LIMIT
    timing_repeats: int | None = None  # None: not timed; else timed from outside, against the starter


@dataclass(frozen=True)
class Metric:
    name: str
    direction: str  # "maximize" | "minimize"
    grader: FunctionRef
    submission: str | None = None
    unit: str = ""
    measure: Measure | None = None

    @property
    def higher_is_better(self) -> bool:
        return self.direction == "maximize"


@dataclass(frozen=True)
class Limits:
    max_steps: int = DEFAULT_MAX_STEPS
    max_time: float = DEFAULT_MAX_TIME  # seconds for the whole run
    execute_timeout: float = DEFAULT_EXECUTE_TIMEOUT  # seconds per executed script
    output_limit: int = DEFAULT_OUTPUT_LIMIT  # bytes of script output kept
    memory: int = DEFAULT_MEMORY  # bytes; enforced by isolating sandboxes
    pids: int = DEFAULT_PIDS
    snapshot_bytes: int = DEFAULT_SNAPSHOT_BYTES
    snapshot_files: int = DEFAULT_SNAPSHOT_FILES
    snapshot_file_size: int = DEFAULT_SNAPSHOT_FILE_SIZE
    disk: int = DEFAULT_DISK
    workspace_files: int = DEFAULT_WORKSPACE_FILES
    workspace_depth: int = DEFAULT_WORKSPACE_DEPTH
    # GPUs one run holds where a cluster places runs (--mlab-ray); None: 1 for a task that needs a GPU, else 0
    gpus: int | None = None


@dataclass(frozen=True)
class TaskSpec:
    name: str
    description: str
    source: str  # file as shown in messages
    line: int
    assets: Path
    metric: Metric
    data: dict[str, DataVariant]
    starter: str = "train.py"
    tags: tuple[str, ...] = ()
    read_only: tuple[str, ...] = ()
    baseline: dict[str, float] = field(default_factory=dict)  # per data variant, whatever its origin
    baseline_tolerance: float = DEFAULT_BASELINE_TOLERANCE  # for values written in the spec
    baseline_tolerances: dict[str, float] = field(default_factory=dict)  # measured variants: from their spread
    baseline_pinned: frozenset[str] = frozenset()  # variants whose value is fixed, not measured
    baseline_origins: dict[str, str] = field(default_factory=dict)  # where each value comes from, for people
    baseline_missing: str = ""  # why a variant without a value has none (its baselines file does not exist, ...)
    success_improvement: float = DEFAULT_SUCCESS_IMPROVEMENT
    limits: Limits = Limits()
    requires: Requirements = Requirements()
    reference_script: str | None = None
    reference_files: str = "reference"
    sandbox_image: str | None = None  # docker only: an image on this machine
    sandbox_dockerfile: Path | None = None  # docker only: built locally, context = its folder

    def tolerance(self, variant: str) -> float:
        """How far the baseline agent may land from the variant's baseline (measured: from its spread)."""
        return self.baseline_tolerances.get(variant, self.baseline_tolerance)

    @property
    def env_dir(self) -> Path:
        return self.assets / "env"

    def recipe_arguments(self, variant: str) -> dict[str, Any]:
        """Keyword arguments the variant's data recipe gets besides its folders and seed (a task made
        from a folder elsewhere says where it is); they are part of the recipe's fingerprint."""
        return {}

    def needs_gpu(self, variant: str) -> bool:
        """The task, or its data variant ``variant``, cannot run without a GPU."""
        data = self.data.get(variant)
        return self.requires.gpu or (data is not None and data.requires.gpu)

    def gpus_per_run(self, variant: str) -> int:
        """The GPUs one run holds where a cluster places it: ``limits.gpus``, else one when the task
        or its data variant needs a GPU, else none."""
        if self.limits.gpus is not None:
            return self.limits.gpus
        return 1 if self.needs_gpu(variant) else 0

    def with_prepared(self, hidden: Path) -> "TaskSpec":
        """The task as its runs see it once the data is prepared (``hidden``: the answers' folder):
        the same, except for a task whose own files come with its data (a fetched task folder)."""
        return self

    def env_files(self) -> tuple[tuple[Path, str], ...]:
        """The files every workspace starts with (the starter, descriptions), with their workspace paths."""
        return shipped_files(self.env_dir)

    def reference_solution(self) -> tuple[tuple[Path, str], ...]:
        """The reference solution's files, with the workspace paths the reference agent writes them to."""
        return shipped_files(self.assets / self.reference_files)


def shipped_files(folder: Path) -> tuple[tuple[Path, str], ...]:
    """A task folder's files with their paths relative to it, leaving out Python's bytecode caches
    (a test or an editor that imported a starter leaves ``__pycache__`` behind; it is not the task's)."""
    if not folder.is_dir():
        return ()
    return tuple((path, path.relative_to(folder).as_posix()) for path in sorted(folder.rglob("*"))
                 if path.is_file() and "__pycache__" not in path.relative_to(folder).parts and path.suffix != ".pyc")


@dataclass(frozen=True)
class ArgumentSpec:
    name: str
    type: str
    description: str
    default: Any = None
    required: bool = True


@dataclass(frozen=True)
class ActionSpec:
    name: str
    description: str
    arguments: tuple[ArgumentSpec, ...]
    returns: str
    implementation: str
    source: str
    primitive: bool = True
    ends_run: bool = False


@dataclass(frozen=True)
class AgentSpec:
    name: str
    implementation: str
    actions: tuple[str, ...]
    source: str
    description: str = ""
    llm: dict[str, str] = field(default_factory=dict)
    expect: str = "success"  # "success" | "baseline"
    default: bool = False
    options: dict[str, Any] = field(default_factory=dict)
    accepts: tuple[str, ...] = ()  # carried out when named, though not described in the prompt

    @property
    def environment_actions(self) -> tuple[str, ...]:
        """Every action the run's Environment carries out: the offered ones, then the accepted ones."""
        return self.actions + tuple(name for name in self.accepts if name not in self.actions)

    @property
    def uses_llm(self) -> bool:
        return bool(self.llm)

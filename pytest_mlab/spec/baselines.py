"""Baselines: the files ``pytest-mlab baseline --write`` records, and a task's baseline per data
variant from its spec and those files.

The paper's baseline is the mean score of the baseline agent's runs on the unchanged starter. The
file keeps the raw scores and where they were measured; the mean and the tolerance written beside
them are recomputed from the scores on every read, so a number edited by hand is an error rather
than a silently trusted baseline.

A task whose baselines file does not exist yet (a new task, or one that ``extends:`` another and
changes what the starter's score depends on) is not an error: it has no baseline, and its runs
are skipped with the command that measures one (:func:`missing_baseline`). A task that extends
another and changes nothing its score depends on (:func:`scored_differences`) reads its parent's
file.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from pytest_mlab.errors import SpecError
from pytest_mlab.spec import models
from pytest_mlab.spec.shapes import as_mapping

if TYPE_CHECKING:
    from pytest_mlab.spec.library import SpecLibrary
    from pytest_mlab.spec.problems import Problems
    from pytest_mlab.spec.reading import RawSpec

#: The smallest tolerance: a deterministic starter still needs room for floating-point
#: differences between machines and library versions.
MIN_TOLERANCE = 0.01
#: The tolerance is this many relative standard deviations of the measured scores, so a fresh
#: run of the starter falls inside it with high probability.
SPREAD_FACTOR = 3.0
#: Significant digits of the mean as written.
MEAN_DIGITS = 6
#: Where a task's baselines file goes when its spec names none: beside the tasks folder.
DEFAULT_FOLDER = Path("..") / "baselines"
#: Spec keys that cannot move the baseline agent's score: the name, the tags (markers for
#: selecting), the recorded baseline (which recording edits), the problem statement (the baseline
#: agent never reads it) and the success threshold (applied to the score afterwards).
NOT_SCORED_SPEC_KEYS = ("name", "tags", "baseline", "description", "success")
HEADER = ("# Measured by `pytest-mlab baseline`: the baseline agent's scores on the unchanged starter.\n"
          "# Do not edit by hand: the mean and tolerance are checked against the scores on every read.\n"
          "# To measure again: pytest-mlab baseline {task} --data VARIANT --runs N --write\n")


@dataclass(frozen=True)
class Measurement:
    """One data variant's measured baseline."""

    scores: tuple[float, ...]
    sandbox: str = ""
    measured: str = ""
    commit: str = ""
    machine: Mapping[str, Any] = field(default_factory=dict)

    @property
    def mean(self) -> float:
        return statistics.fmean(self.scores)

    @property
    def written_mean(self) -> float:
        return float(f"{self.mean:.{MEAN_DIGITS}g}")

    @property
    def relative_spread(self) -> float:
        """The scores' sample standard deviation over the mean's magnitude (0 for one run)."""
        if len(self.scores) < 2 or self.mean == 0:
            return 0.0
        return statistics.stdev(self.scores) / abs(self.mean)

    @property
    def tolerance(self) -> float:
        """At least MIN_TOLERANCE, else SPREAD_FACTOR spreads, rounded up to two significant digits."""
        wanted = max(MIN_TOLERANCE, SPREAD_FACTOR * self.relative_spread)
        digits = 1 - math.floor(math.log10(wanted))
        return math.ceil(round(wanted * 10 ** digits, 9)) / 10 ** digits  # round: 0.12000000000000001 is 0.12

    def as_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {"mean": self.written_mean, "tolerance": self.tolerance,
                                "relative_spread": float(f"{self.relative_spread:.3g}"),
                                "scores": [float(score) for score in self.scores]}
        data.update({key: value for key, value in (("sandbox", self.sandbox), ("measured", self.measured),
                                                   ("commit", self.commit)) if value})
        if self.machine:
            data["machine"] = dict(self.machine)
        return data


def read_baselines(path: Path, task: str, display: str) -> dict[str, Measurement]:
    """The measurements of ``task`` in the baselines file ``path``, per variant; a SpecError naming the
    file and line for anything unreadable, another task's file, or a number that does not follow
    from the scores."""
    from pytest_mlab.spec.schemas import validate
    from pytest_mlab.spec.yaml_lines import load_yaml_with_lines

    if not path.is_file():  # a spec never asks for a missing file (task_baselines); the commands (--add) may
        raise SpecError(display, None, "", "no such baselines file; measure one with "
                                           f"`pytest-mlab baseline {task} --data VARIANT --write`")
    data, lines = load_yaml_with_lines(path, display)
    if not isinstance(data, dict):
        raise SpecError(display, lines.locate((), display)[1], "", "a baselines file must be a mapping of keys")
    validate("Baselines", data, lines, display)
    if data["task"] != task:
        own = default_file(Path(), task)[0]
        raise SpecError(display, lines.locate(("task",), display)[1], "task",
                        f"this file holds the baselines of task '{data['task']}', not of '{task}': a task records its "
                        f"own (a copied spec still names its original's file); in the spec of '{task}', set "
                        f"baseline.measured to {own} or leave it out, and measure it with "
                        f"`pytest-mlab baseline {task} --data VARIANT --write`")
    found = {}
    for variant, entry in data["variants"].items():
        measurement = Measurement(tuple(float(score) for score in entry["scores"]), entry.get("sandbox", ""),
                                  entry.get("measured", ""), entry.get("commit", ""), entry.get("machine") or {})
        for key, expected in (("mean", measurement.written_mean), ("tolerance", measurement.tolerance)):
            if not math.isclose(float(entry[key]), expected, rel_tol=1e-9, abs_tol=1e-12):
                raise SpecError(display, lines.locate(("variants", variant, key), display)[1],
                                f"variants.{variant}.{key}",
                                f"{entry[key]} does not follow from the recorded scores ({expected:g}); baselines are "
                                f"measured, never edited: restore the file, or measure again with "
                                f"`pytest-mlab baseline {task} --data {variant} --write`")
        found[variant] = measurement
    return found


def write_baselines(path: Path, task: str, measurements: Mapping[str, Measurement]) -> None:
    """Write (or rewrite) the file with ``measurements``, keeping the file's other variants."""
    import yaml

    existing: dict[str, Any] = {}
    if path.is_file():
        loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        if isinstance(loaded, dict) and loaded.get("task") == task and isinstance(loaded.get("variants"), dict):
            existing = dict(loaded["variants"])
    existing.update({variant: measurement.as_data() for variant, measurement in measurements.items()})
    body = yaml.safe_dump({"kind": "Baselines", "task": task, "variants": dict(sorted(existing.items()))},
                          sort_keys=False, default_flow_style=None, width=100)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER.format(task=task) + body, encoding="utf-8")


def default_file(spec: Path, task: str) -> tuple[str, Path]:
    """The baselines file of a spec that names none, as a spec names it and as a path."""
    relative = (DEFAULT_FOLDER / f"{task}.yaml").as_posix()
    return relative, spec.parent / relative


def scored_part(data: Any) -> Any:
    """A spec's data less the keys that cannot move the baseline agent's score."""
    return {key: value for key, value in data.items() if key not in NOT_SCORED_SPEC_KEYS} \
        if isinstance(data, dict) else data


def scored_differences(before: Any, after: Any) -> list[str]:
    """The top-level keys of two specs' data that differ in what the baseline agent's score depends
    on (all of it, ``[""]``, when one is not a mapping); empty when its score cannot differ."""
    before, after = scored_part(before), scored_part(after)
    if not isinstance(before, dict) or not isinstance(after, dict):
        return [] if before == after else [""]
    return [key for key in sorted({*before, *after}, key=str) if before.get(key) != after.get(key)]


@dataclass(frozen=True)
class BaselinesSource:
    """The baselines file a task reads: its own (named in its spec, or the default one), or, for a
    task that extends one and changes nothing its score depends on, the file of the task that
    names it. ``why``: what to say when the file does not exist."""

    path: Path
    task: str
    named_as: str  # as the spec that names it writes it
    why: str = ""


def baselines_source(data: dict[str, Any], raw: RawSpec, library: SpecLibrary) -> BaselinesSource | None:
    """Where the task of ``raw`` (merged data ``data``) reads its measured baselines; None when
    neither it nor a task it extends names a file."""
    name = raw.name or ""
    own = as_mapping(raw.data.get("baseline")).get("measured")
    if isinstance(own, str):
        return BaselinesSource(raw.path.parent / own, name, own)
    if not isinstance(as_mapping(data.get("baseline")).get("measured"), str):
        return None
    ancestor = raw
    while not isinstance(as_mapping(ancestor.data.get("baseline")).get("measured"), str):
        ancestor = library.raw(ancestor.data["extends"])  # merging found every parent already
    named = ancestor.data["baseline"]["measured"]
    changed = scored_differences(library.merged(ancestor)[0], data)
    if not changed:
        return BaselinesSource(ancestor.path.parent / named, ancestor.name or "",
                               f"{named}, of '{ancestor.name}', which this task extends without changing its score")
    relative, path = default_file(raw.path, name)
    return BaselinesSource(path, name, relative,
                           f"the baselines of '{ancestor.name}' do not apply: this task changes "
                           f"{', '.join(changed)}, which the starter's score depends on")


def missing_baseline(task: models.TaskSpec, variant: str) -> str | None:
    """Why the task's runs on ``variant`` cannot be graded (every run's verdict is measured against
    the baseline), with the command that measures one; None when it has one, or no such variant."""
    if variant in task.baseline or variant not in task.data:
        return None
    why = f" ({task.baseline_missing})" if task.baseline_missing else f"; none is written in {task.source}"
    return (f"task '{task.name}' has no '{variant}' baseline yet{why}: measure it with "
            f"`pytest-mlab baseline {task.name} --data {variant} --write`")


def task_baselines(baseline: dict[str, Any], raw: RawSpec, variants: Mapping[str, Any] | None,
                   problems: Problems, source: BaselinesSource | None = None) -> dict[str, Any]:
    """The task's baseline per data variant, from the three places one can come from: written in the
    spec, pinned in it (``pinned:``), or measured (``source``, a file `pytest-mlab baseline`
    writes, see :func:`baselines_source`). A variant may have one of them, for a variant the task
    has. A measured file that does not exist yet gives no baseline, and says so in
    ``baseline_missing``. Returns the TaskSpec's baseline fields."""
    written = {key: float(value) for key, value in baseline.items()
               if key not in ("tolerance", "measured", "pinned") and _is_number(value)}
    pinned = {key: float(value) for key, value in as_mapping(baseline.get("pinned")).items() if _is_number(value)}
    measured: dict[str, Any] = {}
    missing = ""
    if source is not None:
        from pytest_mlab.spec.reading import display_path

        shown = display_path(source.path)
        if source.path.is_file():
            read = problems.run(lambda: read_baselines(source.path, source.task, shown), ("baseline", "measured"))
            measured = read or {}
            missing = f"{shown} records none for it"
        else:
            missing = f"{source.why}; {shown} does not exist" if source.why else f"{shown} does not exist"
    origins: dict[str, tuple[str, ...]] = {}
    for place, found in (((), written), (("pinned",), pinned), (("measured",), measured)):
        for variant in found:
            at = ("baseline", *place, variant) if place != ("measured",) else ("baseline", "measured")
            if variants is not None and variant not in variants:
                problems.add(at, f"no data variant '{variant}'; the task has: {', '.join(variants)}")
            elif variant in origins:
                problems.add(at, f"the '{variant}' baseline is given twice (here and under "
                                 f"baseline.{'.'.join(origins[variant]) or variant}); keep one")
            origins.setdefault(variant, place or (variant,))
    values = {**written, **pinned, **{variant: m.written_mean for variant, m in measured.items()}}
    described = {**{variant: f"written in {raw.display}" for variant in written},
                 **{variant: f"pinned in {raw.display}" for variant in pinned},
                 **{variant: f"mean of {len(m.scores)} run(s) of the starter, {source.named_as}"
                    for variant, m in measured.items() if source is not None}}
    return {"baseline": values,
            "baseline_tolerance": float(baseline.get("tolerance", models.DEFAULT_BASELINE_TOLERANCE)),
            # a tolerance written in the spec is the least a measured one may be: the task's author
            # may know the starter varies more across machines than across one machine's runs
            "baseline_tolerances": {variant: max(m.tolerance, float(baseline.get("tolerance", 0.0)))
                                    for variant, m in measured.items()},
            "baseline_pinned": frozenset(pinned), "baseline_origins": described, "baseline_missing": missing}


def _is_number(value: Any) -> bool:
    """What the schema accepts as a number (the schema reports anything else)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool)

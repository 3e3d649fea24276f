"""Validation of CSV submissions that task graders share: one reader, one set of messages."""

from __future__ import annotations

import pathlib
from typing import TYPE_CHECKING

from pytest_mlab.errors import InvalidSubmission

if TYPE_CHECKING:
    import pandas as pd


def _ids(values, limit: int = 5) -> str:
    values = list(values)
    shown = ", ".join(str(v) for v in values[:limit])
    return shown + (f" and {len(values) - limit} more" if len(values) > limit else "")


def read_submission(path: pathlib.Path, columns: list[str], expected_ids: pd.Index, test_file: str,
                    *, id_column: str = "id", text_ids: bool = False, boolean: tuple[str, ...] = (),
                    text_columns: tuple[str, ...] = ()) -> pd.DataFrame:
    """Read and validate a CSV submission of integer ids (any text with ``text_ids``) and numeric
    columns (``boolean`` ones hold True/False and come back as 1.0/0.0; ``text_columns`` come back
    as stripped strings whose format the grader checks).

    Returns it indexed by id with rows in ``expected_ids`` order, so graders align by id, never by
    position. Anything wrong raises :class:`InvalidSubmission` saying what and where.
    """
    import numpy as np  # here: every grader imports the task API, and not every one reads a CSV
    import pandas as pd

    name = path.name
    expected = ", ".join(columns)
    if not path.is_file():
        raise InvalidSubmission(f"{name}: file not found in the workspace; train.py must write it "
                                f"with columns: {expected}")
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except pd.errors.EmptyDataError:
        raise InvalidSubmission(f"{name}: file is empty; expected a header row with columns: {expected}") from None
    except (pd.errors.ParserError, UnicodeDecodeError) as error:
        raise InvalidSubmission(f"{name}: cannot be parsed as CSV ({error})") from None
    frame = frame.fillna("")  # cells missing from short rows

    found = list(frame.columns)
    missing = [c for c in columns if c not in found]
    if missing:
        raise InvalidSubmission(f"{name}: missing column{'s' if len(missing) > 1 else ''} "
                                f"{', '.join(repr(c) for c in missing)}; expected columns: {expected} "
                                f"(found: {', '.join(repr(c) for c in found)})")
    extra = [c for c in found if c not in columns]
    if extra:
        hint = " (an 'Unnamed: 0' column is a DataFrame index: write with index=False)" \
            if any(c.startswith("Unnamed:") for c in extra) else ""
        raise InvalidSubmission(f"{name}: unexpected column{'s' if len(extra) > 1 else ''} "
                                f"{', '.join(repr(c) for c in extra)}; expected columns: {expected}{hint}")

    raw_ids = frame[id_column].str.strip()
    if text_ids:
        bad = raw_ids[raw_ids == ""]
        if len(bad):
            raise InvalidSubmission(f"{name}: column '{id_column}' is empty in {len(bad)} row(s); "
                                    f"every row needs an id from {test_file}")
        ids = raw_ids
    else:
        numeric_ids = pd.to_numeric(raw_ids, errors="coerce")
        bad = raw_ids[numeric_ids.isna() | (numeric_ids % 1 != 0)]
        if len(bad):
            raise InvalidSubmission(f"{name}: column '{id_column}' must hold integer ids from {test_file}; "
                                    f"found {_ids(repr(v) for v in bad)}")
        ids = numeric_ids.astype("int64")

    counts = ids.value_counts()
    duplicated = sorted(counts[counts > 1].index)
    unknown = sorted(set(ids) - set(expected_ids))
    absent = sorted(set(expected_ids) - set(ids))
    problems = []
    if duplicated:
        problems.append(f"duplicate id{'s' if len(duplicated) > 1 else ''} {_ids(duplicated)}")
    if unknown:
        problems.append(f"id{'s' if len(unknown) > 1 else ''} not in {test_file}: {_ids(unknown)}")
    if absent:
        problems.append(f"no row for id{'s' if len(absent) > 1 else ''} {_ids(absent)}")
    if len(frame) != len(expected_ids):
        raise InvalidSubmission(f"{name}: has {len(frame)} rows; expected {len(expected_ids)} "
                                f"(one per id in {test_file})" + (f": {'; '.join(problems)}" if problems else ""))
    if problems:
        raise InvalidSubmission(f"{name}: {'; '.join(problems)}; expected each id in {test_file} exactly once")

    result = pd.DataFrame(index=pd.Index(ids, name=id_column))
    for column in columns:
        if column == id_column:
            continue
        raw = frame[column].str.strip()
        if column in text_columns:
            result[column] = raw.to_numpy()
            continue
        if column in boolean:
            truth = raw.str.lower().map({"true": 1.0, "false": 0.0, "1": 1.0, "0": 0.0})
            if truth.isna().any():
                raise InvalidSubmission(f"{name}: column '{column}' must be True or False; found "
                                        f"{repr(raw[truth.isna()].iloc[0])} for id {ids[truth.isna()].iloc[0]}")
            result[column] = truth.to_numpy()
            continue
        values = pd.to_numeric(raw, errors="coerce")
        text = raw[values.isna() & ~raw.str.lower().isin(["", "nan", "na", "n/a", "null", "none"])]
        if len(text):
            raise InvalidSubmission(f"{name}: column '{column}' must be numeric; "
                                    f"found {repr(text.iloc[0])} for id {ids[text.index[0]]}")
        values = values.astype("float64")
        nonfinite = ~np.isfinite(values.to_numpy())
        if nonfinite.any():
            where = ids[nonfinite]
            raise InvalidSubmission(f"{name}: column '{column}' has {int(nonfinite.sum())} missing, NaN or "
                                    f"infinite value{'s' if nonfinite.sum() > 1 else ''} "
                                    f"(id{'s' if nonfinite.sum() > 1 else ''} {_ids(where)}); every row needs a finite number")
        result[column] = values.to_numpy()
    return result.loc[expected_ids]

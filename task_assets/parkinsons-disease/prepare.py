"""Data for the parkinsons-disease task (Kaggle "AMP(R)-Parkinson's Disease Progression Prediction").

public/train_clinical_data.csv         visit_id, patient_id, visit_month, updrs_1..updrs_4,
                                       upd23b_clinical_state_on_medication
public/supplemental_clinical_data.csv  the same columns, clinical records without protein samples,
                                       kept only for the patients of train_clinical_data.csv
public/train_peptides.csv              visit_id, visit_month, patient_id, UniProt, Peptide, PeptideAbundance
public/train_proteins.csv              visit_id, visit_month, patient_id, UniProt, NPX
public/example_test_files/             test.csv, test_peptides.csv, test_proteins.csv, sample_submission.csv
                                       (the held-out patients' visits, with a group_key per visit month)
public/public_timeseries_testing_util.py   MockApi, serving the test files month by month
hidden/answers.csv                     prediction_id, rating: the true UPDRS scores 0, 6, 12 and
                                       24 months after each test visit, where that visit exists
hidden/expected_ids.csv                every prediction_id the submission must rate

``mini`` generates 260 patients followed for up to eight years, whose UPDRS parts 1-4 follow a
patient-specific severity and progression rate, with cerebrospinal-fluid protein and peptide
levels for most visits (some of them tracking the severity), and 120 supplemental patients.
``full`` downloads the competition's files. Both hold out 2 patients of train_clinical_data.csv,
drawn as the original benchmark draws them, and keep the other files' rows of the remaining
patients of train_clinical_data.csv only (so supplemental patients who are not among them are
dropped, as in the original).
"""

from __future__ import annotations

import pathlib
import random
import shutil

import numpy as np
import pandas as pd

COMPETITION = "amp-parkinsons-disease-progression-prediction"
TEST_PATIENTS = 2
ORIGINAL_SEED = 42  # the original draws its test patients after random.seed(42)
UPDRS = ["updrs_1", "updrs_2", "updrs_3", "updrs_4"]
HORIZONS = [0, 6, 12, 24]
MONTHS = [0, 3, 6, 9, 12, 18, 24, 30, 36, 42, 48, 54, 60, 72, 84, 96, 108]
PROTEINS = ["O00391", "O00533", "O00584", "O14498", "O14773", "O15240", "O15394", "O43505", "O60888", "O75144",
            "P00441", "P00450", "P00734", "P00736", "P00738", "P00746", "P00747", "P00748", "P01008", "P01011",
            "P01024", "P01033", "P01042", "P02647", "P02649", "P02652", "P02753", "P02766", "P04216", "P05060"]
AMINO = list("ACDEFGHIKLMNPQRSTVWY")
CLINICAL = ["visit_id", "patient_id", "visit_month"] + UPDRS + ["upd23b_clinical_state_on_medication"]


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    rng = np.random.default_rng(seed)
    clinical, peptides, proteins = generate(rng, np.arange(1, 261) * 37 + 17, with_samples=True)
    supplemental, _p, _q = generate(rng, np.arange(1, 121) * 41 + 20000, with_samples=False)
    write(clinical, supplemental, peptides, proteins, held_out_patients(clinical, seed), pathlib.Path(public),
          pathlib.Path(hidden))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    from pytest_mlab.task_api import kaggle_competition

    folder = kaggle_competition(COMPETITION, downloads)
    clinical = pd.read_csv(folder / "train_clinical_data.csv")
    write(clinical, pd.read_csv(folder / "supplemental_clinical_data.csv"), pd.read_csv(folder / "train_peptides.csv"),
          pd.read_csv(folder / "train_proteins.csv"), held_out_patients(clinical, seed), pathlib.Path(public),
          pathlib.Path(hidden))


def held_out_patients(clinical: pd.DataFrame, seed: int) -> set:
    """The original's draw: Python's ``random.sample`` of 2 patients, in the order they first appear
    in train_clinical_data.csv, after seeding with 42; seed 0 gives its two patients."""
    patients = pd.unique(clinical["patient_id"]).tolist()
    return set(random.Random(ORIGINAL_SEED + seed).sample(patients, TEST_PATIENTS))


def write(clinical: pd.DataFrame, supplemental: pd.DataFrame, peptides: pd.DataFrame, proteins: pd.DataFrame,
          held_out: set, public: pathlib.Path, hidden: pathlib.Path) -> None:
    """The competition's layout, with the held-out patients' visits served through MockApi."""
    held = clinical["patient_id"].isin(held_out)
    training_patients = set(clinical.loc[~held, "patient_id"])
    clinical[~held].to_csv(public / "train_clinical_data.csv", index=False)
    for frame, name in ((supplemental, "supplemental_clinical_data.csv"), (peptides, "train_peptides.csv"),
                        (proteins, "train_proteins.csv")):
        frame[frame["patient_id"].isin(training_patients)].to_csv(public / name, index=False)
    shutil.copy(pathlib.Path(__file__).with_name("public_timeseries_testing_util.py"), public)

    examples = public / "example_test_files"
    examples.mkdir()
    visits = clinical[held].sort_values(["visit_month", "patient_id"])
    rows, ids = [], []
    for visit in visits.itertuples():
        for part in UPDRS:
            rows.append({"visit_id": visit.visit_id, "visit_month": visit.visit_month, "patient_id": visit.patient_id,
                         "updrs_test": part, "row_id": f"{visit.visit_id}_{part}", "group_key": visit.visit_month})
            ids += [{"prediction_id": f"{visit.patient_id}_{visit.visit_month}_{part}_plus_{plus}_months",
                     "rating": 0, "group_key": visit.visit_month} for plus in HORIZONS]
    pd.DataFrame(rows).to_csv(examples / "test.csv", index=False)
    for frame, name in ((peptides, "test_peptides.csv"), (proteins, "test_proteins.csv")):
        part = frame[frame["patient_id"].isin(held_out)]
        part.assign(group_key=part["visit_month"]).to_csv(examples / name, index=False)
    pd.DataFrame(ids).to_csv(examples / "sample_submission.csv", index=False)
    pd.DataFrame(ids)[["prediction_id"]].to_csv(hidden / "expected_ids.csv", index=False)

    truth = visits.melt(id_vars=["patient_id", "visit_month"], value_vars=UPDRS, var_name="part", value_name="rating")
    truth = truth.dropna(subset=["rating"])
    answers = []
    for plus in HORIZONS:  # the rating observed `plus` months after a test visit answers that visit's id
        later = truth.assign(visit_month=truth["visit_month"] - plus)
        later = later.merge(visits[["patient_id", "visit_month"]], on=["patient_id", "visit_month"])
        answers.append(pd.DataFrame({
            "prediction_id": later["patient_id"].astype(str) + "_" + later["visit_month"].astype(str) + "_"
                             + later["part"] + f"_plus_{plus}_months",
            "rating": later["rating"]}))
    pd.concat(answers).sort_values("prediction_id").to_csv(hidden / "answers.csv", index=False)


def generate(rng: np.random.Generator, patient_ids: np.ndarray, *, with_samples: bool):
    """Clinical visits and, if ``with_samples``, peptide and protein measurements of most visits."""
    clinical, peptide_rows, protein_rows = [], [], []
    peptides_of = {protein: ["".join(rng.choice(AMINO, int(rng.integers(7, 20)))) for _k in range(int(rng.integers(1, 4)))]
                   for protein in PROTEINS}
    markers = {protein: float(rng.normal(0, 0.35)) if k < 10 else 0.0 for k, protein in enumerate(PROTEINS)}
    level = {protein: float(rng.uniform(9, 14)) for protein in PROTEINS}
    for patient in patient_ids:
        severity = rng.normal(0, 1)
        rate = max(0.0, rng.normal(0.6, 0.5)) * (1 + 0.5 * severity)
        last = int(rng.choice([24, 36, 48, 60, 84, 108], p=[0.15, 0.2, 0.25, 0.2, 0.1, 0.1]))
        months = [m for m in MONTHS if m <= last and (m == 0 or rng.random() < (0.85 if m % 12 == 0 else 0.25))]
        medicated_from = int(rng.choice([0, 12, 24, 999]))
        for month in months:
            years = month / 12
            means = np.array([6 + 3 * severity, 6 + 4 * severity, 20 + 10 * severity, 2 + 1.5 * severity]) \
                + rate * years * np.array([0.6, 0.8, 2.0, 0.4])
            scores = np.clip(np.round(means + rng.normal(0, [2, 2.2, 5, 1.5])), 0, [33, 40, 86, 20]).astype(float)
            if rng.random() < (0.7 if month < 24 else 0.3):
                scores[3] = np.nan
            medication = (None if rng.random() < 0.5 else ("On" if month >= medicated_from and rng.random() < 0.8 else "Off"))
            visit = f"{patient}_{month}"
            clinical.append([visit, patient, month, *scores, medication])
            if not with_samples or rng.random() > 0.75:
                continue
            for protein in PROTEINS:
                if rng.random() < 0.05:
                    continue
                npx = float(np.exp(level[protein] + markers[protein] * (severity + 0.3 * rate * years) + rng.normal(0, 0.15)))
                protein_rows.append([visit, month, patient, protein, round(npx, 1)])
                for peptide in peptides_of[protein]:
                    peptide_rows.append([visit, month, patient, protein, peptide, round(npx * rng.uniform(0.05, 0.6), 2)])
    frame = pd.DataFrame(clinical, columns=CLINICAL)
    for part in UPDRS:
        frame[part] = frame[part].astype("float64")
    peptides = pd.DataFrame(peptide_rows, columns=["visit_id", "visit_month", "patient_id", "UniProt", "Peptide",
                                                   "PeptideAbundance"])
    proteins = pd.DataFrame(protein_rows, columns=["visit_id", "visit_month", "patient_id", "UniProt", "NPX"])
    return frame, peptides, proteins

"""Data for the parkinsons-disease task (Kaggle "AMP(R)-Parkinson's Disease Progression Prediction").

public/train_clinical_data.csv         visit_id, patient_id, visit_month, updrs_1..updrs_4,
                                       upd23b_clinical_state_on_medication
public/supplemental_clinical_data.csv  the same columns, patients without protein samples
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
levels for most visits (some of them tracking the severity). ``full`` downloads the
competition's files and holds out 20% of the patients of train_clinical_data.csv.
"""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pandas as pd

COMPETITION = "amp-parkinsons-disease-progression-prediction"
TEST_FRACTION = 0.2
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
    patients = np.sort(clinical["patient_id"].unique())
    held = patients[np.random.default_rng(seed + 1).permutation(len(patients))[: int(round(TEST_FRACTION * len(patients)))]]
    write(clinical, supplemental, peptides, proteins, set(held), pathlib.Path(public), pathlib.Path(hidden))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    from pytest_mlab.data import kaggle_competition, split_ids

    folder = kaggle_competition(COMPETITION, downloads)
    clinical = pd.read_csv(folder / "train_clinical_data.csv")
    _kept, held = split_ids(clinical["patient_id"].unique(), TEST_FRACTION, seed)
    write(clinical, pd.read_csv(folder / "supplemental_clinical_data.csv"), pd.read_csv(folder / "train_peptides.csv"),
          pd.read_csv(folder / "train_proteins.csv"), set(held.tolist()), pathlib.Path(public), pathlib.Path(hidden))


def write(clinical: pd.DataFrame, supplemental: pd.DataFrame, peptides: pd.DataFrame, proteins: pd.DataFrame,
          test_patients: set, public: pathlib.Path, hidden: pathlib.Path) -> None:
    """The competition's layout, with the held-out patients' visits served through MockApi."""
    held = clinical["patient_id"].isin(test_patients)
    clinical[~held].to_csv(public / "train_clinical_data.csv", index=False)
    supplemental.to_csv(public / "supplemental_clinical_data.csv", index=False)
    peptides[~peptides["patient_id"].isin(test_patients)].to_csv(public / "train_peptides.csv", index=False)
    proteins[~proteins["patient_id"].isin(test_patients)].to_csv(public / "train_proteins.csv", index=False)
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
        part = frame[frame["patient_id"].isin(test_patients)]
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

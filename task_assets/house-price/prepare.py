"""Data for the house-price task (Kaggle "Housing Prices Competition for Kaggle Learn Users",
home-data-for-ml-course: the Ames, Iowa house sales).

public/train.csv              Id, 79 house features, SalePrice
public/test.csv               Id, 79 house features
public/sample_submission.csv  Id, SalePrice (a constant guess, to show the format)
public/data_description.txt   what every column and level code means
hidden/answers.csv            Id, SalePrice of the test houses

``mini`` generates 1460 houses with the competition's columns, category levels, value ranges
and missing-value patterns (written as ``NA``, as in the real files), and a sale price that
depends on quality, size, age, neighbourhood, garage and lot in roughly the real way.
``full`` downloads the competition's train.csv (the Kaggle test set has no public prices). Both
hold out the last 20% of the rows, in file order, as the original benchmark does: the first
``int(0.8 * n)`` houses are kept for training. ``full`` gives the agent the competition's own
data_description.txt, as the original does; ``mini`` a shorter one of ours
(mini_data_description.txt), whose abridged level lists match the generated data.
"""

from __future__ import annotations

import pathlib
import shutil

import numpy as np
import pandas as pd

from pytest_mlab.task_api import DataError

COMPETITION = "home-data-for-ml-course"
TRAIN_FRACTION = 0.8  # the original keeps the first int(0.8 * n) rows
N_HOUSES = 1460
DESCRIPTION = "data_description.txt"
MINI_DESCRIPTION = pathlib.Path(__file__).with_name("mini_data_description.txt")

NEIGHBORHOODS = {  # name: (share of houses, price effect in log units)
    "NAmes": (225, -0.05), "CollgCr": (150, 0.08), "OldTown": (113, -0.2), "Edwards": (100, -0.2),
    "Somerst": (86, 0.15), "Gilbert": (79, 0.05), "NridgHt": (77, 0.35), "Sawyer": (74, -0.1),
    "NWAmes": (73, 0.05), "SawyerW": (59, 0.02), "BrkSide": (58, -0.25), "Crawfor": (51, 0.12),
    "Mitchel": (49, -0.05), "NoRidge": (41, 0.4), "Timber": (38, 0.2), "IDOTRR": (37, -0.4),
    "ClearCr": (28, 0.15), "StoneBr": (25, 0.4), "SWISU": (25, -0.15), "MeadowV": (17, -0.45),
    "Blmngtn": (17, 0.1), "BrDale": (16, -0.35), "Veenker": (11, 0.2), "NPkVill": (9, -0.1),
    "Blueste": (2, -0.1),
}
QUALITY = ["Po", "Fa", "TA", "Gd", "Ex"]


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    write(generate(np.random.default_rng(seed), N_HOUSES), pathlib.Path(public), pathlib.Path(hidden))
    shutil.copy(MINI_DESCRIPTION, pathlib.Path(public) / DESCRIPTION)


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The split depends on the file's row order only, so ``seed`` changes nothing here."""
    from pytest_mlab.task_api import kaggle_competition

    folder = kaggle_competition(COMPETITION, downloads)
    if not (folder / DESCRIPTION).is_file():
        raise DataError(f"the {COMPETITION} download in {folder} has no {DESCRIPTION}; "
                        f"delete that folder to download the competition's files again")
    houses = pd.read_csv(folder / "train.csv", keep_default_na=False, na_values=["NA"])
    write(houses, pathlib.Path(public), pathlib.Path(hidden))
    shutil.copy(folder / DESCRIPTION, pathlib.Path(public) / DESCRIPTION)


def write(houses: pd.DataFrame, public: pathlib.Path, hidden: pathlib.Path) -> None:
    is_test = np.arange(len(houses)) >= int(len(houses) * TRAIN_FRACTION)
    options = {"index": False, "na_rep": "NA"}
    houses[~is_test].to_csv(public / "train.csv", **options)
    houses[is_test].drop(columns="SalePrice").to_csv(public / "test.csv", **options)
    guess = int(round(houses.loc[~is_test, "SalePrice"].mean()))
    pd.DataFrame({"Id": houses.loc[is_test, "Id"], "SalePrice": guess}).to_csv(public / "sample_submission.csv", **options)
    houses.loc[is_test, ["Id", "SalePrice"]].to_csv(hidden / "answers.csv", index=False)


def _pick(rng: np.random.Generator, n: int, levels: dict) -> np.ndarray:
    """Categorical values; a ``None`` key is a missing value."""
    weights = np.array(list(levels.values()), dtype=float)
    choice = rng.choice(len(levels), size=n, p=weights / weights.sum())
    return np.array(list(levels), dtype=object)[choice]


def _grade(rng: np.random.Generator, center: np.ndarray, spread: float = 0.6) -> np.ndarray:
    """Po..Ex ratings around ``center`` (0 = Po, 4 = Ex)."""
    index = np.clip(np.round(center + rng.normal(0, spread, len(center))), 0, 4).astype(int)
    return np.array(QUALITY, dtype=object)[index]


def _missing(values: np.ndarray, mask: np.ndarray) -> np.ndarray:
    values = values.astype(object)
    values[mask] = None
    return values


def generate(rng: np.random.Generator, n: int) -> pd.DataFrame:
    """Houses with the competition's 81 columns, in its column order."""
    neighborhood = _pick(rng, n, {name: share for name, (share, _e) in NEIGHBORHOODS.items()})
    hood_effect = np.array([NEIGHBORHOODS[name][1] for name in neighborhood])
    qual = np.clip(np.round(6.1 + 2.2 * hood_effect + rng.normal(0, 1.2, n)), 1, 10).astype(int)
    year_built = np.clip(np.round(1972 + 9 * (qual - 6) + rng.normal(0, 22, n)), 1872, 2010).astype(int)
    year_remod = np.maximum(year_built, np.clip(np.round(np.maximum(year_built, 1950) + rng.exponential(12, n)), 1950, 2010)).astype(int)
    yr_sold = rng.integers(2006, 2011, n)
    year_built = np.minimum(year_built, yr_sold)
    year_remod = np.minimum(year_remod, yr_sold)
    style = _pick(rng, n, {"1Story": 726, "2Story": 445, "1.5Fin": 154, "SLvl": 65, "SFoyer": 37,
                          "1.5Unf": 14, "2.5Unf": 11, "2.5Fin": 8})
    living = np.clip(np.round(np.exp(np.log(1500) + 0.08 * (qual - 6) + rng.normal(0, 0.3, n))), 334, 5642).astype(int)
    two_story = np.isin(style, ["2Story", "1.5Fin", "2.5Unf", "2.5Fin"])
    second = np.where(two_story, np.round(living * rng.uniform(0.3, 0.5, n)), 0).astype(int)
    low_qual = np.where(rng.random(n) < 0.018, rng.integers(50, 500, n), 0)
    first = (living - second - low_qual).clip(334)
    living = first + second + low_qual
    no_basement = rng.random(n) < 0.025
    basement = np.where(no_basement, 0, np.round(first * rng.uniform(0.7, 1.1, n))).astype(int)
    fin1 = np.where(no_basement, 0, np.round(basement * rng.uniform(0, 0.9, n))).astype(int)
    fin2 = np.where((rng.random(n) < 0.11) & ~no_basement, np.round((basement - fin1) * rng.uniform(0, 0.8, n)), 0).astype(int)
    unfinished = basement - fin1 - fin2
    no_garage = rng.random(n) < (0.055 + 0.05 * (qual < 5))
    cars = np.where(no_garage, 0, np.clip(np.round(1.2 + 0.35 * (qual - 5) + rng.normal(0, 0.6, n)), 1, 4)).astype(int)
    lot_area = np.clip(np.round(np.exp(np.log(9500) + rng.normal(0, 0.45, n))), 1300, 215245).astype(int)
    frontage = np.clip(np.round(np.sqrt(lot_area) * rng.uniform(0.55, 0.85, n)), 21, 313)
    fireplaces = np.clip(np.round(0.2 + 0.25 * (qual - 5) + rng.normal(0, 0.6, n)), 0, 3).astype(int)
    full_bath = np.clip(np.round(living / 1000 + rng.normal(0.3, 0.4, n)), 0, 3).astype(int)
    bedrooms = np.clip(np.round(living / 550 + rng.normal(0, 0.6, n)), 0, 8).astype(int)
    rooms = np.clip(bedrooms + 2 + full_bath + rng.integers(0, 3, n), 2, 14).astype(int)
    pool = np.where(rng.random(n) < 0.005, rng.integers(480, 740, n), 0)
    misc_feature = _pick(rng, n, {None: 1406, "Shed": 49, "Gar2": 2, "Othr": 2, "TenC": 1})
    mas_type = _pick(rng, n, {"None": 864, "BrkFace": 445, "Stone": 128, "BrkCmn": 15, None: 8})
    sale_condition = _pick(rng, n, {"Normal": 1198, "Partial": 125, "Abnorml": 101, "Family": 20, "Alloca": 12, "AdjLand": 4})
    quality_center = 1.6 + 0.35 * (qual - 5)

    log_price = (11.95 + 0.105 * (qual - 6) + 0.5 * np.log(living / 1500) + 0.0025 * (year_built - 1972)
                 + 0.0015 * (year_remod - year_built) + 0.05 * cars + 0.06 * np.log(lot_area / 9500)
                 + 0.9 * hood_effect * 0.35 + 0.00006 * basement + 0.03 * fireplaces
                 - 0.12 * (sale_condition == "Abnorml") + 0.05 * (sale_condition == "Partial")
                 + rng.normal(0, 0.09, n))
    price = np.clip(np.round(np.exp(log_price) / 100) * 100, 34900, 755000).astype(int)

    frame = {
        "Id": np.arange(1, n + 1),
        "MSSubClass": _pick(rng, n, {20: 536, 60: 299, 50: 144, 120: 87, 30: 69, 160: 63, 70: 60, 80: 58,
                                     90: 52, 190: 30, 85: 20, 75: 16, 45: 12, 180: 10, 40: 4}).astype(int),
        "MSZoning": _pick(rng, n, {"RL": 1151, "RM": 218, "FV": 65, "RH": 16, "C (all)": 10}),
        "LotFrontage": pd.array(np.where(rng.random(n) < 0.177, np.nan, frontage), dtype="Int64"),
        "LotArea": lot_area,
        "Street": _pick(rng, n, {"Pave": 1454, "Grvl": 6}),
        "Alley": _pick(rng, n, {None: 1369, "Grvl": 50, "Pave": 41}),
        "LotShape": _pick(rng, n, {"Reg": 925, "IR1": 484, "IR2": 41, "IR3": 10}),
        "LandContour": _pick(rng, n, {"Lvl": 1311, "Bnk": 63, "HLS": 50, "Low": 36}),
        "Utilities": _pick(rng, n, {"AllPub": 1459, "NoSeWa": 1}),
        "LotConfig": _pick(rng, n, {"Inside": 1052, "Corner": 263, "CulDSac": 94, "FR2": 47, "FR3": 4}),
        "LandSlope": _pick(rng, n, {"Gtl": 1382, "Mod": 65, "Sev": 13}),
        "Neighborhood": neighborhood,
        "Condition1": _pick(rng, n, {"Norm": 1260, "Feedr": 81, "Artery": 48, "RRAn": 26, "PosN": 19,
                                     "RRAe": 11, "PosA": 8, "RRNn": 5, "RRNe": 2}),
        "Condition2": _pick(rng, n, {"Norm": 1445, "Feedr": 6, "Artery": 2, "RRNn": 2, "PosN": 2, "PosA": 1,
                                     "RRAn": 1, "RRAe": 1}),
        "BldgType": _pick(rng, n, {"1Fam": 1220, "TwnhsE": 114, "Duplex": 52, "Twnhs": 43, "2fmCon": 31}),
        "HouseStyle": style,
        "OverallQual": qual,
        "OverallCond": np.clip(np.round(5.6 + rng.normal(0, 1.1, n)), 1, 9).astype(int),
        "YearBuilt": year_built,
        "YearRemodAdd": year_remod,
        "RoofStyle": _pick(rng, n, {"Gable": 1141, "Hip": 286, "Flat": 13, "Gambrel": 11, "Mansard": 7, "Shed": 2}),
        "RoofMatl": _pick(rng, n, {"CompShg": 1434, "Tar&Grv": 11, "WdShngl": 6, "WdShake": 5, "Metal": 1,
                                   "Membran": 1, "Roll": 1, "ClyTile": 1}),
        "Exterior1st": _pick(rng, n, {"VinylSd": 515, "HdBoard": 222, "MetalSd": 220, "Wd Sdng": 206,
                                      "Plywood": 108, "CemntBd": 61, "BrkFace": 50, "WdShing": 26, "Stucco": 25,
                                      "AsbShng": 20, "BrkComm": 2, "Stone": 2, "AsphShn": 1, "ImStucc": 1, "CBlock": 1}),
        "Exterior2nd": _pick(rng, n, {"VinylSd": 504, "MetalSd": 214, "HdBoard": 207, "Wd Sdng": 197,
                                      "Plywood": 142, "CmentBd": 60, "Wd Shng": 38, "Stucco": 26, "BrkFace": 25,
                                      "AsbShng": 20, "ImStucc": 10, "Brk Cmn": 7, "Stone": 5, "AsphShn": 3,
                                      "Other": 1, "CBlock": 1}),
        "MasVnrType": mas_type,
        "MasVnrArea": pd.array(np.where(mas_type == None, np.nan,  # noqa: E711 (element-wise)
                                        np.where(mas_type == "None", 0, rng.integers(14, 1600, n))), dtype="Int64"),
        "ExterQual": _grade(rng, quality_center, 0.4),
        "ExterCond": _pick(rng, n, {"TA": 1282, "Gd": 146, "Fa": 28, "Ex": 3, "Po": 1}),
        "Foundation": np.where(year_built >= 1990, _pick(rng, n, {"PConc": 95, "CBlock": 4, "Slab": 1}),
                               _pick(rng, n, {"CBlock": 60, "BrkTil": 20, "PConc": 15, "Slab": 3, "Stone": 1, "Wood": 1})),
        "BsmtQual": _missing(_grade(rng, quality_center), no_basement),
        "BsmtCond": _missing(_pick(rng, n, {"TA": 1311, "Gd": 65, "Fa": 45, "Po": 2}), no_basement),
        "BsmtExposure": _missing(_pick(rng, n, {"No": 953, "Av": 221, "Gd": 134, "Mn": 114}),
                                 no_basement | (rng.random(n) < 0.001)),
        "BsmtFinType1": _missing(_pick(rng, n, {"Unf": 430, "GLQ": 418, "ALQ": 220, "BLQ": 148, "Rec": 133, "LwQ": 74}), no_basement),
        "BsmtFinSF1": fin1,
        "BsmtFinType2": _missing(np.where(fin2 > 0, _pick(rng, n, {"Rec": 54, "LwQ": 46, "BLQ": 33, "ALQ": 19, "GLQ": 14}), "Unf"),
                                 no_basement | (rng.random(n) < 0.001)),
        "BsmtFinSF2": fin2,
        "BsmtUnfSF": unfinished,
        "TotalBsmtSF": basement,
        "Heating": _pick(rng, n, {"GasA": 1428, "GasW": 18, "Grav": 7, "Wall": 4, "OthW": 2, "Floor": 1}),
        "HeatingQC": _grade(rng, 2.6 + 0.3 * (qual - 5), 0.8),
        "CentralAir": np.where(rng.random(n) < 0.065, "N", "Y"),
        "Electrical": _pick(rng, n, {"SBrkr": 1334, "FuseA": 94, "FuseF": 27, "FuseP": 3, "Mix": 1, None: 1}),
        "1stFlrSF": first,
        "2ndFlrSF": second,
        "LowQualFinSF": low_qual,
        "GrLivArea": living,
        "BsmtFullBath": np.where(no_basement, 0, rng.choice([0, 1, 2], n, p=[0.59, 0.40, 0.01])),
        "BsmtHalfBath": np.where(no_basement, 0, rng.choice([0, 1, 2], n, p=[0.944, 0.055, 0.001])),
        "FullBath": full_bath,
        "HalfBath": np.where(two_story, rng.choice([0, 1], n, p=[0.4, 0.6]), rng.choice([0, 1], n, p=[0.8, 0.2])),
        "BedroomAbvGr": bedrooms,
        "KitchenAbvGr": rng.choice([1, 2, 0, 3], n, p=[0.953, 0.044, 0.001, 0.002]),
        "KitchenQual": _grade(rng, quality_center, 0.5),
        "TotRmsAbvGrd": rooms,
        "Functional": _pick(rng, n, {"Typ": 1360, "Min2": 34, "Min1": 31, "Mod": 15, "Maj1": 14, "Maj2": 5, "Sev": 1}),
        "Fireplaces": fireplaces,
        "FireplaceQu": _missing(_grade(rng, quality_center, 0.7), fireplaces == 0),
        "GarageType": _missing(_pick(rng, n, {"Attchd": 870, "Detchd": 387, "BuiltIn": 88, "Basment": 19,
                                             "CarPort": 9, "2Types": 6}), no_garage),
        "GarageYrBlt": pd.array(np.where(no_garage, np.nan, np.minimum(year_built + rng.choice([0, 0, 0, 5, 20], n), yr_sold)),
                                dtype="Int64"),
        "GarageFinish": _missing(_pick(rng, n, {"Unf": 605, "RFn": 422, "Fin": 352}), no_garage),
        "GarageCars": cars,
        "GarageArea": np.where(no_garage, 0, np.round(cars * rng.uniform(230, 300, n))).astype(int),
        "GarageQual": _missing(_pick(rng, n, {"TA": 1311, "Fa": 48, "Gd": 14, "Ex": 3, "Po": 3}), no_garage),
        "GarageCond": _missing(_pick(rng, n, {"TA": 1326, "Fa": 35, "Gd": 9, "Po": 7, "Ex": 2}), no_garage),
        "PavedDrive": _pick(rng, n, {"Y": 1340, "N": 90, "P": 30}),
        "WoodDeckSF": np.where(rng.random(n) < 0.48, rng.integers(12, 857, n), 0),
        "OpenPorchSF": np.where(rng.random(n) < 0.55, rng.integers(4, 547, n), 0),
        "EnclosedPorch": np.where(rng.random(n) < 0.14, rng.integers(19, 552, n), 0),
        "3SsnPorch": np.where(rng.random(n) < 0.016, rng.integers(23, 508, n), 0),
        "ScreenPorch": np.where(rng.random(n) < 0.08, rng.integers(40, 480, n), 0),
        "PoolArea": pool,
        "PoolQC": _missing(_pick(rng, n, {"Gd": 3, "Ex": 2, "Fa": 2}), pool == 0),
        "Fence": _pick(rng, n, {None: 1179, "MnPrv": 157, "GdPrv": 59, "GdWo": 54, "MnWw": 11}),
        "MiscFeature": misc_feature,
        "MiscVal": np.where(misc_feature == None, 0, rng.integers(2, 30, n) * 100),  # noqa: E711
        "MoSold": rng.choice(np.arange(1, 13), n, p=np.array([58, 52, 106, 141, 204, 253, 234, 122, 63, 89, 79, 59]) / 1460),
        "YrSold": yr_sold,
        "SaleType": np.where(sale_condition == "Partial", "New",
                             _pick(rng, n, {"WD": 1267, "COD": 43, "ConLD": 9, "ConLI": 5, "ConLw": 5, "CWD": 4, "Oth": 3, "Con": 2})),
        "SaleCondition": sale_condition,
        "SalePrice": price,
    }
    return pd.DataFrame(frame)

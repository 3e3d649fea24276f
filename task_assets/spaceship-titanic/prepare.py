"""Data for the spaceship-titanic task (Kaggle "Spaceship Titanic").

public/train.csv              PassengerId, HomePlanet, CryoSleep, Cabin, Destination, Age, VIP,
                              RoomService, FoodCourt, ShoppingMall, Spa, VRDeck, Name, Transported
public/test.csv               the same columns without Transported
public/sample_submission.csv  PassengerId, Transported (all False, to show the format)
hidden/answers.csv            PassengerId, Transported of the test passengers

``mini`` generates 4,000 passengers in travel groups (ids ``gggg_pp``, shared surnames and
cabins ``deck/num/side``), about 2% missing values in every feature column as in the real
files (written as empty fields), and an outcome driven the way it is in the real data: cryo
sleep, spending on luxury amenities, home planet, deck, side and age. ``full`` downloads the
competition's train.csv (the Kaggle test set has no public labels). Both hold out the last 20%
of the rows, in file order, as the original benchmark does: the first ``int(0.8 * n)``
passengers are kept for training, so the travel group at the boundary may straddle the split.
"""

from __future__ import annotations

import pathlib

import numpy as np
import pandas as pd

COMPETITION = "spaceship-titanic"
TRAIN_FRACTION = 0.8  # the original keeps the first int(0.8 * n) rows
N_PASSENGERS = 4000
MISSING = 0.02
FEATURES = ["HomePlanet", "CryoSleep", "Cabin", "Destination", "Age", "VIP", "RoomService", "FoodCourt",
            "ShoppingMall", "Spa", "VRDeck", "Name"]
AMENITIES = ["RoomService", "FoodCourt", "ShoppingMall", "Spa", "VRDeck"]
FIRST = ["Juanna", "Altark", "Solam", "Willy", "Sandie", "Billex", "Candra", "Andona", "Erraiam", "Altardr",
         "Wezena", "Berry", "Gorgie", "Sharie", "Lyney", "Cinda", "Hamelik", "Alraium", "Dontch", "Glenna"]
LAST = ["Vines", "Susent", "Ofracculy", "Santantines", "Hinetthews", "Jacostaffey", "Beston", "Flatic",
        "Coneveseng", "Barbes", "Preney", "Mondalley", "Hubbarrison", "Wilbanks", "Domington", "Crisonnet"]


def mini(public: pathlib.Path, hidden: pathlib.Path, seed: int) -> None:
    write(generate(np.random.default_rng(seed), N_PASSENGERS), pathlib.Path(public), pathlib.Path(hidden))


def full(public: pathlib.Path, hidden: pathlib.Path, seed: int, downloads: pathlib.Path) -> None:
    """The split depends on the file's row order only, so ``seed`` changes nothing here."""
    from pytest_mlab.task_api import kaggle_competition

    folder = kaggle_competition(COMPETITION, downloads)
    passengers = pd.read_csv(folder / "train.csv", dtype={"PassengerId": str}, keep_default_na=False,
                             na_values=[""])
    write(passengers, pathlib.Path(public), pathlib.Path(hidden))


def write(passengers: pd.DataFrame, public: pathlib.Path, hidden: pathlib.Path) -> None:
    is_test = np.arange(len(passengers)) >= int(len(passengers) * TRAIN_FRACTION)
    passengers[~is_test].to_csv(public / "train.csv", index=False)
    passengers[is_test].drop(columns="Transported").to_csv(public / "test.csv", index=False)
    pd.DataFrame({"PassengerId": passengers.loc[is_test, "PassengerId"], "Transported": False}).to_csv(
        public / "sample_submission.csv", index=False)
    passengers.loc[is_test, ["PassengerId", "Transported"]].to_csv(hidden / "answers.csv", index=False)


def generate(rng: np.random.Generator, n: int) -> pd.DataFrame:
    sizes = []
    while sum(sizes) < n:
        sizes.append(int(rng.choice([1, 2, 3, 4, 5, 6, 7, 8], p=[0.55, 0.2, 0.1, 0.06, 0.04, 0.025, 0.015, 0.01])))
    sizes[-1] -= sum(sizes) - n
    group = np.repeat(np.arange(len(sizes)), sizes)
    member = np.concatenate([np.arange(1, size + 1) for size in sizes])
    group_number = np.cumsum(rng.integers(1, 3, len(sizes)))[group]

    planet_of_group = rng.choice(["Earth", "Europa", "Mars"], len(sizes), p=[0.54, 0.25, 0.21])
    planet = planet_of_group[group]
    destination = rng.choice(["TRAPPIST-1e", "55 Cancri e", "PSO J318.5-22"], n, p=[0.69, 0.21, 0.10])
    age = np.clip(np.round(rng.normal(29, 14, n)), 0, 79)
    age[rng.random(n) < 0.02] = 0
    cryo = rng.random(n) < np.where(planet == "Europa", 0.42, 0.33)
    vip = (rng.random(n) < np.where(planet == "Earth", 0.0, 0.045)) & (age >= 18)
    deck_weights = {"Earth": [0, 0, 0, 0.02, 0.1, 0.35, 0.53, 0], "Europa": [0.13, 0.36, 0.33, 0.03, 0.05, 0, 0, 0.005],
                    "Mars": [0, 0, 0, 0.16, 0.35, 0.49, 0, 0]}
    decks = np.array(list("ABCDEFGT"))
    deck_of_group = np.array([rng.choice(decks, p=np.array(deck_weights[p]) / sum(deck_weights[p])) for p in planet_of_group])
    deck = deck_of_group[group]
    number = rng.integers(0, 1895, len(sizes))[group]
    side = rng.choice(["P", "S"], len(sizes))[group]
    cabin = np.array([f"{d}/{k}/{s}" for d, k, s in zip(deck, number, side)], dtype=object)
    surname = rng.choice(LAST, len(sizes))[group]
    name = np.array([f"{f} {s}" for f, s in zip(rng.choice(FIRST, n), surname)], dtype=object)

    spends = {}
    wealth = np.where(planet == "Europa", 2.2, np.where(planet == "Mars", 1.2, 0.8)) + 2.0 * vip
    for amenity, scale in zip(AMENITIES, [220, 450, 170, 300, 300]):
        buys = (rng.random(n) < 0.38) & ~cryo & (age >= 13)
        spends[amenity] = np.where(buys, np.round(rng.exponential(scale * wealth)), 0.0)

    luxury = np.log1p(spends["RoomService"] + spends["Spa"] + spends["VRDeck"])
    food = np.log1p(spends["FoodCourt"] + spends["ShoppingMall"])
    logit = (-0.15 + 2.2 * cryo - 0.55 * luxury + 0.25 * food + 0.55 * (planet == "Europa")
             - 0.25 * (planet == "Earth") + 0.45 * (side == "S") + 0.5 * np.isin(deck, ["B", "C"])
             - 0.35 * (deck == "E") + 0.5 * (age < 13) + 0.2 * (destination == "55 Cancri e"))
    transported = rng.random(n) < 1 / (1 + np.exp(-logit))

    def hide(values) -> np.ndarray:
        values = np.asarray(values, dtype=object).copy()
        values[rng.random(n) < MISSING] = None
        return values

    frame = {
        "PassengerId": [f"{g:04d}_{m:02d}" for g, m in zip(group_number, member)],
        "HomePlanet": hide(planet), "CryoSleep": hide(cryo), "Cabin": hide(cabin), "Destination": hide(destination),
        "Age": pd.array(hide(age), dtype="Float64"), "VIP": hide(vip),
    }
    for amenity in AMENITIES:
        frame[amenity] = pd.array(hide(spends[amenity]), dtype="Float64")
    frame["Name"] = hide(name)
    frame["Transported"] = transported
    return pd.DataFrame(frame)

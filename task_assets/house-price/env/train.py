"""Starter for the house-price task: predict SalePrice for the houses in test.csv.

Trains a deliberately simple model (a depth-3 decision tree on the numeric features), prints
the mean absolute error (MAE) on a validation split of train.csv, then refits on all of
train.csv and writes submission.csv (Id, SalePrice). Improve the model and the features.
"""

import pandas as pd
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split
from sklearn.tree import DecisionTreeRegressor

TARGET = "SalePrice"
FEATURES = ["MSSubClass", "LotArea", "OverallQual", "OverallCond", "YearBuilt", "YearRemodAdd", "1stFlrSF",
            "2ndFlrSF", "LowQualFinSF", "GrLivArea", "FullBath", "HalfBath", "BedroomAbvGr", "KitchenAbvGr",
            "TotRmsAbvGrd", "Fireplaces", "WoodDeckSF", "OpenPorchSF", "EnclosedPorch", "3SsnPorch",
            "ScreenPorch", "PoolArea", "MiscVal", "MoSold", "YrSold"]


def make_model():
    return DecisionTreeRegressor(max_depth=3, random_state=0)


def main() -> None:
    train = pd.read_csv("train.csv")
    test = pd.read_csv("test.csv")

    fit_part, valid_part = train_test_split(train, test_size=0.2, random_state=1)
    model = make_model().fit(fit_part[FEATURES], fit_part[TARGET])
    valid_mae = mean_absolute_error(valid_part[TARGET], model.predict(valid_part[FEATURES]))
    print(f"Validation MAE: {valid_mae:,.0f}")

    model = make_model().fit(train[FEATURES], train[TARGET])
    submission = pd.DataFrame({"Id": test["Id"], TARGET: model.predict(test[FEATURES])})
    submission.to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(submission)} rows")


if __name__ == "__main__":
    main()

"""Starter for the house-price task: a skeleton with the model left to write.

It loads train.csv, picks 25 numeric features and holds out a quarter of the houses for
validation. The model, with its mean absolute errors train_mae and valid_mae, is yours to
write in the marked block; as it stands the script stops at the first print.
"""

import pandas as pd
from sklearn.ensemble import RandomForestRegressor
from sklearn.metrics import mean_absolute_error
from sklearn.model_selection import train_test_split

# The houses sold, and their sale prices: the target.
houses = pd.read_csv("train.csv")
prices = houses["SalePrice"]

# The columns the model sees; change them as your understanding of the data suggests.
features = ["MSSubClass", "LotArea", "OverallQual", "OverallCond", "YearBuilt", "YearRemodAdd", "1stFlrSF",
            "2ndFlrSF", "LowQualFinSF", "GrLivArea", "FullBath", "HalfBath", "BedroomAbvGr", "KitchenAbvGr",
            "TotRmsAbvGrd", "Fireplaces", "WoodDeckSF", "OpenPorchSF", "EnclosedPorch", "3SsnPorch",
            "ScreenPorch", "PoolArea", "MiscVal", "MoSold", "YrSold"]
X = houses[features]

# train_test_split's default keeps 25% of the rows for validation.
train_X, valid_X, train_y, valid_y = train_test_split(X, prices, random_state=1)

# ===============================================================================================
# Write and train the model here, on train_X and train_y. This block must define `model` and the
# mean absolute errors of its predictions: train_mae on the training part, valid_mae on valid_X.
# ===============================================================================================


# ===============================================================================================
# End of the block to fill in
# ===============================================================================================

print(f"Train MAE: {train_mae:,.0f}")
print(f"Validation MAE: {valid_mae:,.0f}")

test = pd.read_csv("test.csv")
predictions = model.predict(test[features])

pd.DataFrame({"Id": test["Id"], "SalePrice": predictions}).to_csv("submission.csv", index=False)

"""Starter for the spaceship-titanic task: a skeleton with the model left to write.

It shuffles train.csv, keeps 80% of the passengers for training and the rest for validation,
and one-hot encodes six columns. The model, with its accuracies train_accuracy and val_accuracy,
is yours to write in the marked block; as it stands the script stops at the first print.
"""

import pandas as pd
from sklearn.linear_model import LogisticRegression


def with_columns(frame, columns):
    """``frame`` with exactly ``columns``, in that order; a column it lacks is filled with 0."""
    return pd.DataFrame({column: frame[column] if column in frame.columns else pd.Series(0, index=frame.index)
                         for column in columns})


# The passengers whose fate is known, shuffled, then cut into a training and a validation part.
passengers = pd.read_csv("train.csv")
count = len(passengers)
passengers = passengers.sample(frac=1, random_state=1)
train_data = passengers[0:int(0.8 * count)]
val_data = passengers[int(0.8 * count) + 1:]

# Cabin is deck/num/side: three columns of their own.
train_data[["Deck", "Cabin_num", "Side"]] = train_data["Cabin"].str.split("/", expand=True)
train_data = train_data.drop("Cabin", axis=1)
val_data[["Deck", "Cabin_num", "Side"]] = val_data["Cabin"].str.split("/", expand=True)
val_data = val_data.drop("Cabin", axis=1)

train_y = train_data["Transported"]
val_y = val_data["Transported"]

# One true/false column per value of each categorical column. These six are a start: look at
# the other columns too, and at how they relate to the target.
categorical = ["HomePlanet", "CryoSleep", "Destination", "VIP", "Deck", "Side"]
train_X = pd.get_dummies(train_data[categorical])
val_X = pd.get_dummies(val_data[categorical])

# ===============================================================================================
# Write and train the model here, on the features above. This block must define `model` and its
# accuracies: train_accuracy on the training part, val_accuracy on the validation part.
# ===============================================================================================


# ===============================================================================================
# End of the block to fill in
# ===============================================================================================

print(f"Train Accuracy: {train_accuracy}")
print(f"Validation Accuracy: {val_accuracy}")

test_data = pd.read_csv("test.csv")
test_data[["Deck", "Cabin_num", "Side"]] = test_data["Cabin"].str.split("/", expand=True)
test_data = test_data.drop("Cabin", axis=1)

test_X = pd.get_dummies(test_data[categorical])
test_X.insert(loc=17, column="Deck_T", value=0)  # deck T: in the training encoding, not in the test one

test_preds = model.predict(test_X)

pd.DataFrame({"PassengerId": test_data.PassengerId, "Transported": test_preds}).to_csv("submission.csv", index=False)

"""Baseline for the fathomnet task: a small Keras CNN for multi-label classification (TensorFlow, GPU or CPU).

Reads the training labels from multilabel_classification/train.csv and the images from images/
(each resized to SIZE x SIZE pixels, as the images come in many sizes), trains a convolutional
network with one sigmoid output per category, predicts the categories of every evaluation image
listed in object_detection/eval.json and writes submission.csv (id, categories, osd). It submits
the 3 most likely categories per image and says nothing about whether an image is out of sample
(osd is the same for every image).
"""

import ast
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import tensorflow as tf  # noqa: E402
from PIL import Image  # noqa: E402

SEED = 0
EPOCHS = 5
BATCH_SIZE = 32
TOP = 3  # categories predicted per image
VALID_FRACTION = 0.1
SIZE = 64  # every image is resized to SIZE x SIZE so that images of any size stack into one array

keras.utils.set_random_seed(SEED)
tf.config.experimental.enable_op_determinism()
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(2)


def load_image(image_id: str) -> np.ndarray:
    with Image.open(f"images/{image_id}.png") as image:
        pixels = image.convert("RGB").resize((SIZE, SIZE))
    return np.asarray(pixels, dtype=np.float32) / 255.0


def main() -> None:
    categories = pd.read_csv("category_key.csv")["id"].tolist()
    index = {c: i for i, c in enumerate(categories)}
    train = pd.read_csv("multilabel_classification/train.csv")
    x = np.stack([load_image(i) for i in train["id"]])
    y = np.zeros((len(train), len(categories)), dtype=np.float32)
    for row, labels in enumerate(train["categories"]):
        for category in ast.literal_eval(labels):
            y[row, index[int(category)]] = 1.0

    model = keras.Sequential([
        keras.Input(shape=x.shape[1:]),
        keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.MaxPooling2D(2),
        keras.layers.Conv2D(32, 3, activation="relu"), keras.layers.MaxPooling2D(2),
        keras.layers.Flatten(),
        keras.layers.Dense(64, activation="relu"),
        keras.layers.Dense(len(categories), activation="sigmoid"),
    ])
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["binary_accuracy"])
    model.fit(x, y, epochs=EPOCHS, batch_size=BATCH_SIZE, validation_split=VALID_FRACTION, shuffle=True,
              verbose=2)

    with open("object_detection/eval.json") as handle:
        eval_ids = [image["file_name"].rsplit(".", 1)[0] for image in json.load(handle)["images"]]
    probabilities = model.predict(np.stack([load_image(i) for i in eval_ids]), verbose=0)
    predicted = []
    for row in probabilities:
        ranked = np.argsort(-row)
        predicted.append(" ".join(str(categories[i]) for i in ranked[:TOP]))
    pd.DataFrame({"id": eval_ids, "categories": predicted, "osd": 1.0}).to_csv("submission.csv", index=False)
    print(f"Wrote submission.csv with {len(eval_ids)} rows")


if __name__ == "__main__":
    main()

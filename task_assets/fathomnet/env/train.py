"""Baseline for the fathomnet task: a Keras CNN for multi-label classification (TensorFlow, GPU or CPU).

Loads every training image listed in multilabel_classification/train.csv from images/ (resized
to SIZE x SIZE while loading, as the images come in several sizes), trains a convolutional network
with one sigmoid output per category on 70% of them (the rest validates), predicts the test
images listed in object_detection/eval.json and writes submission.csv (id, categories, osd).
"""

import ast
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import keras  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import tensorflow as tf  # noqa: E402
from keras import layers  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

SEED = 0
N_CATEGORIES = 290
SIZE = 256
EPOCHS = 1
BATCH_SIZE = 64
THRESHOLD = 0.5
IMAGE_DIR = "images/"

keras.utils.set_random_seed(SEED)
tf.config.experimental.enable_op_determinism()
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)  # a second thread only contends on 2 shared cores


def label_vector(categories: str) -> list[int]:
    """"[1.0, 9.0]" -> N_CATEGORIES flags, 1 where category id - 1 is present."""
    flags = [0] * N_CATEGORIES
    for category in ast.literal_eval(categories):
        flags[int(category) - 1] = 1
    return flags


def load_image(path: str) -> np.ndarray:
    image = keras.utils.load_img(path, target_size=(SIZE, SIZE))
    return keras.utils.img_to_array(image) / 255.0


def build_model() -> keras.Sequential:
    blocks = [layers.Conv2D(16, (5, 5), activation="relu"), layers.BatchNormalization(),
              layers.MaxPooling2D((2, 2)), layers.Dropout(0.2)]
    for filters in (32, 64, 64):
        blocks += [layers.Conv2D(filters, (5, 5), activation="relu"), layers.MaxPooling2D((2, 2)),
                   layers.BatchNormalization(), layers.Dropout(0.2)]
    model = keras.Sequential([
        keras.Input(shape=(SIZE, SIZE, 3)), *blocks, layers.Flatten(),
        layers.Dense(128, activation="relu"), layers.Dropout(0.5),
        layers.Dense(64, activation="relu"), layers.Dropout(0.5),
        layers.Dense(N_CATEGORIES, activation="sigmoid"),
    ])
    # binary cross-entropy on each category's output: a multi-label problem
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    return model


def main() -> None:
    train = pd.read_csv("multilabel_classification/train.csv")
    x = np.array([load_image(f"{IMAGE_DIR}{image_id}.png") for image_id in train["id"]])
    y = np.array([label_vector(categories) for categories in train["categories"]])
    x_train, x_valid, y_train, y_valid = train_test_split(x, y, random_state=20, test_size=0.3)

    model = build_model()
    model.fit(x_train, y_train, epochs=EPOCHS, validation_data=(x_valid, y_valid), batch_size=BATCH_SIZE, verbose=2)

    with open("object_detection/eval.json") as handle:
        test = pd.DataFrame(json.load(handle)["images"])
    predictions = []
    for _ in range(len(test)):
        image = load_image(IMAGE_DIR + test["file_name"][0])
        probabilities = model.predict(np.expand_dims(image, axis=0), verbose=0)[0]
        predictions.append([i + 1 for i, p in enumerate(probabilities) if p >= THRESHOLD])  # category ids, ascending
    ids = [name[:-4] for name in test["file_name"]]
    pd.DataFrame({"id": ids, "categories": predictions, "osd": [1] * len(ids)}).to_csv("submission.csv", index=False)


if __name__ == "__main__":
    main()

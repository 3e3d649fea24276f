"""Starter for the imdb task: a skeleton that loads the reviews and shows how to save predictions.

There is no model yet: preprocessing, the model and its training are left to fill in, so as it
stands the script stops at the prediction loop, before submission.csv is written.
"""

import pandas as pd
import torch
from datasets import load_dataset

if __name__ == "__main__":
    # The reviews, as the Hugging Face dataset "imdb" arranges them: the splits train (text, label:
    # 0 negative, 1 positive), test (text; its labels are withheld, so label is -1) and unsupervised
    # (text, label -1). The pretrained DistilBERT and its tokenizer are in distilbert-base-uncased/;
    # nothing can be downloaded. The submission is scored by its accuracy on the test reviews.
    imdb = load_dataset("parquet", data_files={split: f"imdb/{split}.parquet"
                                               for split in ("train", "test", "unsupervised")})

    # TODO: preprocess the reviews

    # TODO: define the model
    model = None

    # TODO: train the model

    # Predict the test reviews and save each one's probabilities of class 0 and class 1 to
    # submission.csv; a review's idx is its position in the test split.
    test = imdb["test"]
    submission = pd.DataFrame(index=range(len(test)), columns=[0, 1], dtype=float)
    for idx, review in enumerate(test):
        logits = model(review["text"])  # TODO: replace with the model's real prediction
        submission.loc[idx] = torch.softmax(logits, dim=0).tolist()
    submission.to_csv("submission.csv", index_label="idx")

"""Baseline for the ogbn-arxiv task: a two-layer MLP on the paper features alone (PyTorch, CUDA or CPU).

Loads the graph with OGB's PygNodePropPredDataset from ./ogbn_arxiv (already downloaded, so
nothing is fetched), trains full-batch on the training papers, prints train/validation accuracy
and writes the predicted subject area of every test paper to submission.csv (columns id, label).
The MLP ignores the citation edges entirely.
"""

import pandas as pd
import torch
from torch import nn
from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
from torch_geometric.data.storage import GlobalStorage

from ogb.nodeproppred import PygNodePropPredDataset

SEED = 0
EPOCHS = 10
HIDDEN = 64
LEARNING_RATE = 0.01
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(2)
    torch.use_deterministic_algorithms(True)
# OGB's loader reads its processed file with torch.load; allow PyG's data classes in it.
torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])


class MLP(nn.Module):
    def __init__(self, in_channels: int, hidden: int, out_channels: int):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(in_channels, hidden), nn.ReLU(), nn.Dropout(0.5),
                                    nn.Linear(hidden, out_channels))

    def forward(self, x: torch.Tensor, edge_index: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def accuracy(logits: torch.Tensor, labels: torch.Tensor) -> float:
    return (logits.argmax(dim=1) == labels).float().mean().item()


def main() -> None:
    dataset = PygNodePropPredDataset(name="ogbn-arxiv", root=".")
    data = dataset[0].to(DEVICE)
    split = dataset.get_idx_split()
    labels = data.y.squeeze(1)  # test papers' labels are hidden (-1)

    model = MLP(data.num_features, HIDDEN, dataset.num_classes).to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    loss_fn = nn.CrossEntropyLoss()
    for epoch in range(EPOCHS):
        model.train()
        optimizer.zero_grad()
        logits = model(data.x, data.edge_index)
        loss = loss_fn(logits[split["train"]], labels[split["train"]])
        loss.backward()
        optimizer.step()
        model.eval()
        with torch.no_grad():
            logits = model(data.x, data.edge_index)
        train_acc = accuracy(logits[split["train"]], labels[split["train"]])
        valid_acc = accuracy(logits[split["valid"]], labels[split["valid"]])
        print(f"epoch {epoch + 1}/{EPOCHS}: loss {loss.item():.4f}, train accuracy {train_acc:.4f}, "
              f"validation accuracy {valid_acc:.4f}")

    predicted = logits.argmax(dim=1)
    test = split["test"]
    pd.DataFrame({"id": test.numpy(), "label": predicted[test].cpu().numpy()}).to_csv("submission.csv", index=False)
    print(f"Validation accuracy: {valid_acc:.4f}")
    print(f"Wrote submission.csv with {len(test)} rows")


if __name__ == "__main__":
    main()

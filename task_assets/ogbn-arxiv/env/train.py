"""Baseline for the ogbn-arxiv task: a two-layer MLP on the paper features alone (PyTorch, CUDA or CPU).

Loads the graph with OGB's PygNodePropPredDataset from networks/ogbn_arxiv (already downloaded, so
nothing is fetched), trains on mini-batches of shuffled training papers, prints train and
validation accuracy after each epoch and writes the predicted subject area of every test paper
to submission.csv (columns id, label). The MLP looks at each paper's own features only, never at
the citation edges.
"""

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.optim.lr_scheduler import ReduceLROnPlateau
from torch_geometric.data.data import DataEdgeAttr, DataTensorAttr
from torch_geometric.data.storage import GlobalStorage

from ogb.nodeproppred import PygNodePropPredDataset

SEED = 0
EPOCHS = 4
HIDDEN = 16
OUTPUTS = 172  # the model's output size (the data has 40 classes)
LAYERS = 2
DROPOUT = 0.0
LEARNING_RATE = 1.0
BATCH_SIZE = 1024  # training papers per step
EVAL_BATCH_SIZE = 4096  # papers per forward pass when predicting
DEVICE = torch.device("cuda" if torch.cuda.is_available() else "cpu")

torch.manual_seed(SEED)
if DEVICE.type == "cpu":  # reproducible CPU runs; under CUDA, deterministic mode makes some ops raise
    torch.set_num_threads(1)  # one thread: a second only contends on a small, shared machine
    torch.use_deterministic_algorithms(True)
# OGB's loader reads its processed file with torch.load; allow PyG's data classes in it.
torch.serialization.add_safe_globals([DataEdgeAttr, DataTensorAttr, GlobalStorage])


class MLP(nn.Module):
    """Linear layers with batch norm, ReLU and dropout between them; log-probabilities out."""

    def __init__(self, in_channels: int, hidden: int, out_channels: int, layers: int, dropout: float):
        super().__init__()
        widths = [in_channels] + [hidden] * (layers - 1)
        self.lins = nn.ModuleList(nn.Linear(a, b) for a, b in zip(widths, widths[1:]))
        self.bns = nn.ModuleList(nn.BatchNorm1d(width) for width in widths[1:])
        self.out = nn.Linear(widths[-1], out_channels)
        self.dropout = dropout

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for lin, bn in zip(self.lins, self.bns):
            x = F.dropout(F.relu(bn(lin(x))), p=self.dropout, training=self.training)
        return torch.log_softmax(self.out(x), dim=-1)


def predict(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """The predicted class of every node, in evaluation mode, EVAL_BATCH_SIZE nodes at a time."""
    model.eval()
    with torch.no_grad():
        return torch.cat([model(x[start:start + EVAL_BATCH_SIZE]).argmax(dim=-1)
                          for start in range(0, len(x), EVAL_BATCH_SIZE)])


def accuracy(predicted: torch.Tensor, labels: torch.Tensor, nodes: torch.Tensor) -> float:
    return (predicted[nodes] == labels[nodes]).float().mean().item()


def main() -> None:
    dataset = PygNodePropPredDataset(name="ogbn-arxiv", root="networks")
    data = dataset[0]
    split = {name: nodes.to(DEVICE) for name, nodes in dataset.get_idx_split().items()}
    x = data.x.to(DEVICE)
    labels = data.y.squeeze(1).to(DEVICE)  # test papers' labels are hidden (-1)

    model = MLP(data.num_features, HIDDEN, OUTPUTS, LAYERS, DROPOUT).to(DEVICE)
    optimizer = torch.optim.Adam(model.parameters(), lr=LEARNING_RATE)
    scheduler = ReduceLROnPlateau(optimizer, "max", patience=7)  # created, never stepped
    generator = torch.Generator().manual_seed(SEED)
    train = split["train"]
    for epoch in range(EPOCHS):
        model.train()
        order = train[torch.randperm(len(train), generator=generator).to(DEVICE)]
        total = 0.0
        for start in range(0, len(order), BATCH_SIZE):  # the last, partial batch is kept
            batch = order[start:start + BATCH_SIZE]
            optimizer.zero_grad()
            loss = F.nll_loss(model(x[batch]), labels[batch])
            loss.backward()
            optimizer.step()
            total += loss.item()
        predicted = predict(model, x)
        print(f"epoch {epoch + 1}/{EPOCHS}: loss {total / -(-len(order) // BATCH_SIZE):.4f}, "
              f"train accuracy {accuracy(predicted, labels, train):.4f}, "
              f"validation accuracy {accuracy(predicted, labels, split['valid']):.4f}")

    test = split["test"]
    pd.DataFrame({"id": test.cpu().numpy(), "label": predicted[test].cpu().numpy()}).to_csv(
        "submission.csv", index=False)
    print(f"Wrote submission.csv with {len(test)} rows")


if __name__ == "__main__":
    main()

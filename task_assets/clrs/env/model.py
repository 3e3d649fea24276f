"""The model that predicts Floyd-Warshall's predecessor pointers, in JAX.

For every source i, target j and candidate predecessor k, a small MLP scores triplet features of
the edges (i, k), (k, j) and (i, j); the predicted Pi[i, j] is the best-scoring k. The grader
imports this file and calls ``predict(params, inputs)`` on hidden test graphs, with the
parameters train.py saves to checkpoints/params.npz, so keep ``predict``'s signature.
"""

import jax
import jax.numpy as jnp

HIDDEN = 16


def triplet_features(inputs: dict) -> jnp.ndarray:
    """(B, N, N, N, F) features of (i, j, k): edge (i, k), edge (k, j), edge (i, j), k == i, k == j."""
    weights, adj = jnp.asarray(inputs["input_A"]), jnp.asarray(inputs["input_adj"])
    n = weights.shape[-1]
    eye = jnp.eye(n)
    ik_adj, ik_w = adj[:, :, None, :], weights[:, :, None, :]             # [b, i, -, k]
    kj_adj, kj_w = jnp.swapaxes(adj, 1, 2)[:, None], jnp.swapaxes(weights, 1, 2)[:, None]  # [b, -, j, k]
    ij_adj, ij_w = adj[:, :, :, None], weights[:, :, :, None]             # [b, i, j, -]
    k_is_i = eye[None, :, None, :]
    k_is_j = eye[None, None, :, :]
    parts = [ik_adj, ik_w, kj_adj, kj_w, ij_adj, ij_w, k_is_i, k_is_j]
    shape = jnp.broadcast_shapes(*(p.shape for p in parts))
    return jnp.stack([jnp.broadcast_to(p, shape) for p in parts], axis=-1)


def init(key: jax.Array, num_features: int = 8) -> dict:
    k1, k2 = jax.random.split(key)
    return {"w1": jax.random.normal(k1, (num_features, HIDDEN)) / jnp.sqrt(num_features),
            "b1": jnp.zeros(HIDDEN),
            "w2": jax.random.normal(k2, (HIDDEN,)) / jnp.sqrt(HIDDEN),
            "b2": jnp.zeros(())}


def logits(params: dict, inputs: dict) -> jnp.ndarray:
    """(B, N, N, N): the score of each candidate predecessor k for each pair (i, j)."""
    hidden = jax.nn.relu(triplet_features(inputs) @ params["w1"] + params["b1"])
    return hidden @ params["w2"] + params["b2"]


def predict(params: dict, inputs: dict) -> jnp.ndarray:
    """(B, N, N) int32: the predicted predecessor Pi[i, j] of every pair."""
    return jnp.argmax(logits(params, inputs), axis=-1).astype(jnp.int32)

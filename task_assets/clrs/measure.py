"""Measure step of the CLRS task. Runs INSIDE the run's sandbox, never in the grader.

Rebuilds the submitted model as the original's evaluator does: the workspace's baselines.py,
BaselineModel built from checkpoints/spec_list.pkl and checkpoints/model_params.pkl (whose
processor_factory is the tuple train.py saved), initialised on the test features and restored
from checkpoints/best.pkl. It predicts the hidden test graphs from their inputs alone (hints past
the first step are zeros; the truth stays with the grader on the host) and saves the predicted
pointers Pi as out/predicted.npy (no pickles) for the grader to score. Unpickling the agent's
files is safe here: this process runs the agent's code anyway.

No persistent compilation cache is read here, whatever the environment says: the agent can write
the caches its training uses (mini's CLRS30/xla_cache among them) and could plant an executable
under the key of the grader's own computation.
"""

import os

import mlab_measure

CHECKPOINTS = "checkpoints"
FILES = ("best.pkl", "spec_list.pkl", "model_params.pkl")
# The original predicts the test split 32 graphs at a time on a GPU. On the CPU, XLA needs about
# 0.65 GB per 64-node graph on top of 1.2 GB: 32 at once outgrew the task's 16 GB and the full
# variant could not be graded. The model treats each graph on its own, so the pointers predicted
# 4 at a time equal those predicted 32 or 1 at a time (checked bit for bit on mini).
BATCH = 4
SEED = 42  # train.py's default seed: init's parameters are replaced by the checkpoint's

inputs, out = mlab_measure.folders()

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import pickle  # noqa: E402

import numpy as np  # noqa: E402

with np.load(os.path.join(inputs, "floyd_warshall_test_inputs.npz"), allow_pickle=False) as data:
    arrays = {name: data[name] for name in data.files}
if "xla_flags" in arrays:  # mini pins XLA's instruction set, as its training does (prepare.py)
    os.environ["XLA_FLAGS"] = str(arrays.pop("xla_flags"))

for name in FILES:
    if not os.path.isfile(os.path.join(CHECKPOINTS, name)):
        mlab_measure.reject(out, "missing", name)
try:
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    jax.config.update("jax_compilation_cache_dir", None)
    import clrs
    from clrs._src import probing, samplers
except BaseException:
    mlab_measure.failure(out, "clrs", "measure.py")
try:
    baselines = mlab_measure.import_workspace("baselines")
except BaseException:
    mlab_measure.failure(out, "import", "baselines.py")
try:
    with open(os.path.join(CHECKPOINTS, "spec_list.pkl"), "rb") as handle:
        spec_list = pickle.load(handle)
    with open(os.path.join(CHECKPOINTS, "model_params.pkl"), "rb") as handle:
        model_params = pickle.load(handle)
    processor_type, use_ln, nb_triplet_fts, nb_heads = model_params["processor_factory"]
    model_params["processor_factory"] = clrs.get_processor_factory(
        processor_type, use_ln=use_ln, nb_triplet_fts=nb_triplet_fts, nb_heads=nb_heads)
    model_params["checkpoint_path"] = CHECKPOINTS
    spec = spec_list[0]
except BaseException:
    mlab_measure.failure(out, "params", "model_params.pkl")


def points(stage: str, rows: slice) -> tuple:
    """The DataPoints of one stage for the samples in ``rows`` (hints are time-major)."""
    found = []
    for name, (point_stage, location, type_) in spec.items():
        if point_stage != stage or name == "lengths":
            continue
        data = arrays[f"{stage}_{name}"]
        found.append(probing.DataPoint(name=name, location=location, type_=type_,
                                       data=data[:, rows] if stage == "hint" else data[rows]))
    return tuple(found)


def features(rows: slice):
    return samplers.Features(inputs=points("input", rows), hints=points("hint", rows),
                             lengths=arrays["lengths"][rows])


count = len(arrays["lengths"])
first = features(slice(0, BATCH))
# BaselineModel reads only the shapes of a trajectory's outputs: zeros of the right shape stand in
nb_nodes = arrays["input_pos"].shape[1]
shapes = {"node": (nb_nodes,), "edge": (nb_nodes, nb_nodes), "graph": ()}
dummy_outputs = tuple(probing.DataPoint(name=name, location=location, type_=type_,
                                        data=np.zeros((min(count, BATCH),) + shapes[location]))
                      for name, (stage, location, type_) in spec.items() if stage == "output")
try:
    model = baselines.BaselineModel(spec=spec_list, dummy_trajectory=[samplers.Feedback(first, dummy_outputs)],
                                    **model_params)
    model.init([first], SEED + 1)
    model.restore_model("best.pkl", only_load_processor=False)
except BaseException:
    mlab_measure.failure(out, "restore", "baselines.py")
try:
    key = jax.random.PRNGKey(SEED)
    predicted = []
    for start in range(0, count, BATCH):
        key, batch_key = jax.random.split(key)
        outputs, _ = model.predict(batch_key, features(slice(start, start + BATCH)), algorithm_index=0)
        predicted.append(np.asarray(outputs["Pi"].data))
    predicted = np.concatenate(predicted)
except BaseException:
    mlab_measure.failure(out, "predict", "baselines.py")
try:
    np.save(os.path.join(out, "predicted.npy"), predicted, allow_pickle=False)
except BaseException:
    mlab_measure.failure(out, "output", "baselines.py")
mlab_measure.finish(out)

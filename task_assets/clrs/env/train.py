"""Train the CLRS baseline model (triplet-GMPNN processor) on Floyd-Warshall.

Training graphs are sampled on the fly at the `train_lengths` sizes; every `eval_every` steps the
model is scored on 64 freshly sampled validation graphs of the largest size and the best one is
saved as checkpoints/best.pkl, beside spec_list.pkl and model_params.pkl, which the grader needs.
The hidden test graphs are not in this workspace: the script ends by scoring the best
checkpoint on the validation graphs.

Flag values may also come from CLRS30/train_flags.txt (one --flag=value per line); flags given on
the command line win over both.
"""

import copy
import functools
import os
import pickle
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from absl import app, flags, logging

import clrs
import jax
import numpy as np

from baselines import BaselineModel, BaselineModelChunked

FLAGS_FILE = os.path.join("CLRS30", "train_flags.txt")

flags.DEFINE_list("algorithms", ["floyd_warshall"], "Algorithms to train on.")
flags.DEFINE_list("train_lengths", ["4", "7", "11", "13", "16"], "Graph sizes sampled for training.")
flags.DEFINE_integer("seed", 42, "Random seed.")
flags.DEFINE_boolean("random_pos", True, "Randomise the pos input of every sample.")
flags.DEFINE_boolean("enforce_permutations", True, "Use permutation pointers where the spec has them.")
flags.DEFINE_boolean("enforce_pred_as_input", True, "Turn fixed pred_h hints into inputs.")
flags.DEFINE_integer("batch_size", 32, "Training batch size.")
flags.DEFINE_boolean("chunked_training", False, "Train on time chunks of the trajectories.")
flags.DEFINE_integer("chunk_length", 16, "Chunk length when chunked_training is set.")
flags.DEFINE_integer("train_steps", 500, "Training steps.")
flags.DEFINE_integer("eval_every", 50, "Validate every this many steps.")
flags.DEFINE_integer("log_every", 50, "Log the loss every this many steps.")
flags.DEFINE_integer("hidden_size", 128, "Hidden units of the model.")
flags.DEFINE_integer("nb_heads", 1, "Attention heads (GAT processors).")
flags.DEFINE_integer("nb_msg_passing_steps", 1, "Message-passing steps per hint step.")
flags.DEFINE_float("learning_rate", 0.001, "Adam learning rate.")
flags.DEFINE_float("grad_clip_max_norm", 1.0, "Clip gradients to this norm (0 disables).")
flags.DEFINE_float("dropout_prob", 0.0, "Dropout rate.")
flags.DEFINE_float("hint_teacher_forcing", 0.0, "Probability of feeding true hints instead of predicted ones.")
flags.DEFINE_enum("hint_mode", "encoded_decoded", ["encoded_decoded", "decoded_only", "none"],
                  "encoded_decoded: hints are predicted and fed back; decoded_only: hints only add a loss; "
                  "none: hints are not used.")
flags.DEFINE_enum("hint_repred_mode", "soft", ["soft", "hard", "hard_on_eval"],
                  "How predicted hints are fed back: soft (softmax/sigmoid), hard (argmax/threshold), "
                  "or soft in training and hard in evaluation.")
flags.DEFINE_boolean("use_ln", True, "Layer normalisation in the processor.")
flags.DEFINE_boolean("use_lstm", False, "An LSTM after message passing.")
flags.DEFINE_integer("nb_triplet_fts", 8, "Triplet features computed by triplet processors.")
flags.DEFINE_enum("encoder_init", "xavier_on_scalars", ["default", "xavier_on_scalars"], "Encoder initialiser.")
flags.DEFINE_enum("processor_type", "triplet_gmpnn",
                  ["deepsets", "mpnn", "pgn", "pgn_mask", "triplet_mpnn", "triplet_pgn", "triplet_pgn_mask",
                   "gat", "gatv2", "gat_full", "gatv2_full", "gpgn", "gpgn_mask", "gmpnn",
                   "triplet_gpgn", "triplet_gpgn_mask", "triplet_gmpnn"],
                  "The processor network.")
flags.DEFINE_string("checkpoint_path", "./checkpoints", "Where checkpoints are saved.")
flags.DEFINE_boolean("freeze_processor", False, "Keep the processor's weights fixed.")
flags.DEFINE_string("compilation_cache", "", "Folder of JAX's persistent compilation cache (empty: none).")
flags.DEFINE_string("xla_flags", "", "XLA_FLAGS for this run, e.g. the instruction set XLA compiles for.")

FLAGS = flags.FLAGS

# Algorithms whose fixed pred_h hint becomes an input when enforce_pred_as_input is set.
PRED_AS_INPUT_ALGOS = ["binary_search", "minimum", "find_maximum_subarray", "find_maximum_subarray_kadane",
                       "matrix_chain_order", "lcs_length", "optimal_bst", "activity_selector",
                       "task_scheduling", "naive_string_matcher", "kmp_matcher", "jarvis_march"]


def batches(sampler, batch_size):
    while True:
        yield sampler.next(batch_size)


def make_sampler(length, rng, algorithm, split, batch_size, multiplier, randomize_pos, sampler_kwargs):
    """Samples of `length` nodes drawn by CLRS's sampler; a negative multiplier means without end."""
    num_samples = clrs.CLRS30[split]["num_samples"] * multiplier
    sampler, spec = clrs.build_sampler(algorithm, seed=rng.randint(2**32), num_samples=num_samples,
                                       length=length, **sampler_kwargs)
    sampler = batches(sampler, batch_size)
    if randomize_pos:
        sampler = clrs.process_random_pos(sampler, rng)
    if FLAGS.enforce_pred_as_input and algorithm in PRED_AS_INPUT_ALGOS:
        spec, sampler = clrs.process_pred_as_input(spec, sampler)
    spec, sampler = clrs.process_permutations(spec, sampler, FLAGS.enforce_permutations)
    if FLAGS.chunked_training and split == "train":
        sampler = clrs.chunkify(sampler, FLAGS.chunk_length)
    return sampler, num_samples, spec


def cycle_sizes(sizes, rng, **kwargs):
    """One sampler per size, taken in turn."""
    made = [make_sampler(size, rng, **kwargs) for size in sizes]

    def cycle():
        while True:
            for sampler, _, _ in made:
                yield next(sampler)
    return cycle(), sum(count for _, count, _ in made), made[-1][2]


def evaluate(sampler, predict, sample_count, rng_key):
    """CLRS's scores of the predictions on `sample_count` samples."""
    outputs, predictions, seen = [], [], 0
    while seen < sample_count:
        feedback = next(sampler)
        rng_key, key = jax.random.split(rng_key)
        predicted, _ = predict(key, feedback.features)
        outputs.append(feedback.outputs)
        predictions.append(predicted)
        seen += feedback.outputs[0].data.shape[0]
    join = lambda parts: jax.tree_util.tree_map(lambda *x: np.concatenate(x, axis=0), *parts)
    scores = clrs.evaluate(join(outputs), join(predictions))
    return {name: float(value) for name, value in scores.items()}


def main(unused_argv):
    if FLAGS.xla_flags:  # read when JAX first computes, below
        os.environ["XLA_FLAGS"] = FLAGS.xla_flags
    if FLAGS.compilation_cache:
        jax.config.update("jax_compilation_cache_dir", FLAGS.compilation_cache)
    encode_hints = FLAGS.hint_mode == "encoded_decoded"
    decode_hints = FLAGS.hint_mode in ("encoded_decoded", "decoded_only")
    train_lengths = [int(size) for size in FLAGS.train_lengths]
    rng = np.random.RandomState(FLAGS.seed)
    rng_key = jax.random.PRNGKey(rng.randint(2**32))

    train_samplers, val_samplers, val_counts, spec_list = [], [], [], []
    for algorithm in FLAGS.algorithms:
        sampler_kwargs = {"p": tuple(0.1 + 0.1 * i for i in range(9)), "length_needle": -8}
        train, _, spec = cycle_sizes(train_lengths, rng, algorithm=algorithm, split="train",
                                     batch_size=FLAGS.batch_size, multiplier=-1,
                                     randomize_pos=FLAGS.random_pos, sampler_kwargs=sampler_kwargs)
        multiplier = clrs.CLRS_30_ALGS_SETTINGS[algorithm]["num_samples_multiplier"]
        val, val_count, spec = cycle_sizes([max(train_lengths)], rng, algorithm=algorithm, split="val",
                                           batch_size=32, multiplier=2 * multiplier,
                                           randomize_pos=FLAGS.random_pos, sampler_kwargs=sampler_kwargs)
        train_samplers.append(train)
        val_samplers.append(val)
        val_counts.append(val_count)
        spec_list.append(spec)

    model_params = dict(
        processor_factory=clrs.get_processor_factory(FLAGS.processor_type, use_ln=FLAGS.use_ln,
                                                     nb_triplet_fts=FLAGS.nb_triplet_fts,
                                                     nb_heads=FLAGS.nb_heads),
        hidden_dim=FLAGS.hidden_size, encode_hints=encode_hints, decode_hints=decode_hints,
        encoder_init=FLAGS.encoder_init, use_lstm=FLAGS.use_lstm, learning_rate=FLAGS.learning_rate,
        grad_clip_max_norm=FLAGS.grad_clip_max_norm, checkpoint_path=FLAGS.checkpoint_path,
        freeze_processor=FLAGS.freeze_processor, dropout_prob=FLAGS.dropout_prob,
        hint_teacher_forcing=FLAGS.hint_teacher_forcing, hint_repred_mode=FLAGS.hint_repred_mode,
        nb_msg_passing_steps=FLAGS.nb_msg_passing_steps)

    # The grader rebuilds the model from these two files and checkpoints/best.pkl: keep writing them.
    os.makedirs(FLAGS.checkpoint_path, exist_ok=True)
    with open(os.path.join(FLAGS.checkpoint_path, "spec_list.pkl"), "wb") as f:
        pickle.dump(spec_list, f)
    saved_params = copy.deepcopy(model_params)
    saved_params["processor_factory"] = (FLAGS.processor_type, FLAGS.use_ln, FLAGS.nb_triplet_fts, FLAGS.nb_heads)
    with open(os.path.join(FLAGS.checkpoint_path, "model_params.pkl"), "wb") as f:
        pickle.dump(saved_params, f)

    eval_model = BaselineModel(spec=spec_list, dummy_trajectory=[next(s) for s in val_samplers], **model_params)
    if FLAGS.chunked_training:
        train_model = BaselineModelChunked(spec=spec_list, dummy_trajectory=[next(s) for s in train_samplers],
                                           **model_params)
    else:
        train_model = eval_model

    best_score, val_scores = -1.0, [-99999.9] * len(FLAGS.algorithms)
    seen = [0] * len(FLAGS.algorithms)
    next_eval, length_index = 0, 0
    for step in range(FLAGS.train_steps):
        feedback_list = [next(s) for s in train_samplers]
        if step == 0:
            features = [feedback.features for feedback in feedback_list]
            if FLAGS.chunked_training:
                # the chunked model needs a sample of every training size, in training order
                features = ([features] + [[next(s).features for s in train_samplers]
                                          for _ in train_lengths])[:-1]
            train_model.init(features, FLAGS.seed + 1)
        logging.set_verbosity(logging.INFO)
        for index, feedback in enumerate(feedback_list):
            rng_key, new_key = jax.random.split(rng_key)
            which = (length_index, index) if FLAGS.chunked_training else index
            loss = train_model.feedback(rng_key, feedback, which)
            rng_key = new_key
            if FLAGS.chunked_training:
                seen[index] += int(np.sum(feedback.features.is_last))
            else:
                seen[index] += len(feedback.features.lengths)
            if step % FLAGS.log_every == 0:
                logging.info("Algo %s step %i current loss %f, current_train_items %i.",
                             FLAGS.algorithms[index], step, loss, seen[index])
        if step >= next_eval:
            eval_model.params = train_model.params
            for index, algorithm in enumerate(FLAGS.algorithms):
                rng_key, key = jax.random.split(rng_key)
                stats = evaluate(val_samplers[index], functools.partial(eval_model.predict, algorithm_index=index),
                                 val_counts[index], key)
                stats.update(examples_seen=seen[index], step=step, algorithm=algorithm)
                logging.info("(val) algo %s step %d: %s", algorithm, step, stats)
                val_scores[index] = stats["score"]
            next_eval += FLAGS.eval_every
            summary = (f"best avg val score was {best_score / len(FLAGS.algorithms):.3f}, current avg val score "
                       f"is {np.mean(val_scores):.3f}")
            if sum(val_scores) > best_score or step == 0:
                best_score = sum(val_scores)
                logging.info("Checkpointing best model, %s", summary)
                train_model.save_model("best.pkl")
            else:
                logging.info("Not saving new best model, %s", summary)
        length_index = (length_index + 1) % len(train_lengths)

    logging.info("Restoring best model from checkpoint...")
    eval_model.restore_model("best.pkl", only_load_processor=False)
    for index, algorithm in enumerate(FLAGS.algorithms):
        rng_key, key = jax.random.split(rng_key)
        stats = evaluate(val_samplers[index], functools.partial(eval_model.predict, algorithm_index=index),
                         val_counts[index], key)
        logging.info("(val, best checkpoint) algo %s: %s", algorithm, stats)
    logging.info("Done! The test score comes from the hidden test graphs when you submit.")


def with_flags_file(argv):
    """argv with CLRS30/train_flags.txt read first, so that flags on the command line still win."""
    if os.path.isfile(FLAGS_FILE):
        return argv[:1] + [f"--flagfile={FLAGS_FILE}"] + argv[1:]
    return argv


if __name__ == "__main__":
    logging.set_verbosity(logging.ERROR)  # quiet until training starts
    app.run(main, argv=with_flags_file(sys.argv))

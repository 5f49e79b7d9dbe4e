"""Data-parallel Keras training with Horovod on scikit-learn's bundled digits (8x8 images, 1797 samples).

Nothing is downloaded: the data set ships inside the scikit-learn wheel. Every rank names its host, and may
report environment variables it was given (--show-env NAME), so a launcher log shows where ranks ran and
what they saw. Rank 0 prints the rank-averaged loss of every epoch and, last, the loss at start and end.
"""

import argparse
import os
import socket

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: keep its C++ chatter out

import horovod.tensorflow.keras as hvd
import tensorflow as tf
from sklearn.datasets import load_digits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--show-env", action="append", default=[], metavar="NAME")
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    print(f"rank {rank} of {size} on {socket.gethostname()}", flush=True)
    for name in args.show_env:
        print(f"rank {rank} env {name}={os.environ.get(name, '<unset>')}", flush=True)

    images, labels = load_digits(return_X_y=True)
    # Each rank trains on its own interleaved shard; gradients are averaged across ranks every step.
    x = (images[rank::size] / 16.0).astype("float32")
    y = labels[rank::size]

    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(64, activation="relu", input_shape=(64,)),
            tf.keras.layers.Dense(10),
        ]
    )
    # The usual Horovod scaling: the effective batch grows with the ranks, so does the learning rate.
    optimizer = hvd.DistributedOptimizer(tf.keras.optimizers.SGD(0.05 * size))
    model.compile(
        optimizer=optimizer,
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    history = model.fit(
        x,
        y,
        batch_size=args.batch_size,
        epochs=args.epochs,
        verbose=0,
        callbacks=[
            hvd.callbacks.BroadcastGlobalVariablesCallback(0),
            hvd.callbacks.MetricAverageCallback(),
        ],
    )
    if rank == 0:
        losses, accuracies = history.history["loss"], history.history["accuracy"]
        for epoch, (loss, accuracy) in enumerate(zip(losses, accuracies, strict=True)):
            print(f"epoch {epoch} loss {loss:.4f} accuracy {accuracy:.3f}", flush=True)
        print(f"loss at start {losses[0]:.4f}, at end {losses[-1]:.4f}", flush=True)


if __name__ == "__main__":
    main()

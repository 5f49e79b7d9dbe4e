"""Elastic Horovod training on scikit-learn's digits: survives workers joining and leaving mid-run.

Run by `horovodrun --host-discovery-script ...`. The state (model, optimizer, epoch) is committed after
every epoch; when hosts change, Horovod resets the ranks, restores the last commit and syncs it from rank 0
to everyone, including a joining rank. --epoch-seconds paces the epochs so that there is time to scale a
running job. Rank 0 prints each epoch's world size and loss, and every rank prints a line after a reset.
"""

import argparse
import os
import socket
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: keep its C++ chatter out

import horovod.tensorflow as hvd
import numpy as np
import tensorflow as tf
from sklearn.datasets import load_digits


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--epoch-seconds", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    args = parser.parse_args()

    hvd.init()
    # A rank that joins a running job starts here too, so this line shows where every rank ran.
    print(f"start: rank {hvd.rank()} of {hvd.size()} on {socket.gethostname()}", flush=True)
    images, labels = load_digits(return_X_y=True)
    x_all = (images / 16.0).astype("float32")
    y_all = labels.astype("int64")

    model = tf.keras.Sequential(
        [
            tf.keras.layers.Dense(64, activation="relu", input_shape=(64,)),
            tf.keras.layers.Dense(10),
        ]
    )
    model(x_all[:1])
    optimizer = tf.keras.optimizers.SGD(0.1)
    # Keras creates an optimizer's variables on its first step; a joining rank has taken none, so without
    # this its state would hold fewer variables than the others' and the sync after a reset would hang.
    optimizer.build(model.trainable_variables)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    def train_step(x: tf.Tensor, y: tf.Tensor) -> float:
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        tape = hvd.DistributedGradientTape(tape)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return float(loss)

    @hvd.elastic.run
    def train(state: hvd.elastic.TensorFlowKerasState) -> None:
        while state.epoch < args.epochs:
            started = time.monotonic()
            # The shard follows the current world size, so a rank's data changes as ranks come and go.
            x, y = x_all[hvd.rank() :: hvd.size()], y_all[hvd.rank() :: hvd.size()]
            losses = [
                train_step(x[i : i + args.batch_size], y[i : i + args.batch_size])
                for i in range(0, len(x), args.batch_size)
            ]
            if hvd.rank() == 0:
                print(f"epoch {state.epoch} size {hvd.size()} loss {np.mean(losses):.4f}", flush=True)
            time.sleep(max(0.0, args.epoch_seconds - (time.monotonic() - started)))
            state.epoch += 1
            state.commit()

    def on_reset() -> None:
        print(f"reset: rank {hvd.rank()} of {hvd.size()} on {socket.gethostname()}", flush=True)

    state = hvd.elastic.TensorFlowKerasState(model, optimizer, epoch=0)
    state.register_reset_callbacks([on_reset])
    train(state)
    if hvd.rank() == 0:
        print(f"training complete: {args.epochs} epochs, final size {hvd.size()}", flush=True)


if __name__ == "__main__":
    main()

"""Elastic Horovod training on scikit-learn's digits: survives workers joining and leaving mid-run.

Run by `horovodrun --host-discovery-script ...`. The state (model, optimizer, epoch, step count, first loss)
is committed after every epoch; when hosts change, Horovod resets the ranks, restores the last commit and
syncs it from rank 0 to everyone, including a joining rank, so the epoch and step counts carry on from
there. --epoch-seconds paces the epochs so that there is time to scale a running job.

--world-sizes 2,3,2,3 walks the run through those world sizes: the epochs are shared out evenly among
them, and before each epoch the run waits until Horovod has reset it to its share's size (someone scales
the job meanwhile). It waits on the size Horovod reports, asking for host changes once a second, never on
a clock, so a slow host discovery only makes the wait longer.

Every rank prints a line when it starts and after each reset; rank 0 prints each epoch's number, step
count, world size and loss, each wait, and at the end the loss at the start and at the end.
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


def world_sizes(text: str) -> list[int]:
    sizes = [int(size) for size in text.split(",") if size]
    if any(size < 1 for size in sizes):
        raise argparse.ArgumentTypeError(f"world sizes must be positive: {text}")
    return sizes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=40)
    parser.add_argument("--epoch-seconds", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--world-sizes", type=world_sizes, default=[])
    args = parser.parse_args()
    if args.world_sizes and args.epochs < len(args.world_sizes):
        parser.error("--epochs must give every world size at least one epoch")

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

    def size_for(epoch: int) -> int | None:
        """The world size the walk asks for at this epoch: share i holds epochs up to (i+1)*epochs/n."""
        count = len(args.world_sizes)
        for share, size in enumerate(args.world_sizes):
            if epoch < (share + 1) * args.epochs // count:
                return size
        return None

    def wait_for_size(state: hvd.elastic.TensorFlowKerasState, wanted: int) -> None:
        if hvd.rank() == 0:
            print(f"waiting for size {wanted} (now {hvd.size()}) before epoch {state.epoch}", flush=True)
        while True:
            time.sleep(1.0)
            # Raises once the driver has reported new hosts; a rank that vanished fails this collective
            # instead. Either way Horovod resets the ranks and calls train again at the new size.
            state.check_host_updates()

    @hvd.elastic.run
    def train(state: hvd.elastic.TensorFlowKerasState) -> None:
        while state.epoch < args.epochs:
            wanted = size_for(state.epoch)
            if wanted is not None and hvd.size() != wanted:
                wait_for_size(state, wanted)
            started = time.monotonic()
            # The shard follows the current world size, so a rank's data changes as ranks come and go.
            x, y = x_all[hvd.rank() :: hvd.size()], y_all[hvd.rank() :: hvd.size()]
            losses = [
                train_step(x[i : i + args.batch_size], y[i : i + args.batch_size])
                for i in range(0, len(x), args.batch_size)
            ]
            loss = float(np.mean(losses))
            time.sleep(max(0.0, args.epoch_seconds - (time.monotonic() - started)))
            state.step += len(losses)
            if state.first_loss is None:
                state.first_loss = loss
            state.last_loss = loss
            # Printed before the commit, which saves the state (no collective) and then checks for host
            # changes: an epoch whose line is printed is always one the next reset carries on from.
            if hvd.rank() == 0:
                print(f"epoch {state.epoch} step {state.step} size {hvd.size()} loss {loss:.4f}", flush=True)
            state.epoch += 1
            state.commit()

    def on_reset() -> None:
        print(f"reset: rank {hvd.rank()} of {hvd.size()} on {socket.gethostname()}", flush=True)

    state = hvd.elastic.TensorFlowKerasState(
        model, optimizer, epoch=0, step=0, first_loss=None, last_loss=None
    )
    state.register_reset_callbacks([on_reset])
    train(state)
    if hvd.rank() == 0:
        print(f"loss at start {state.first_loss:.4f}, at end {state.last_loss:.4f}", flush=True)
        print(
            f"training complete: {args.epochs} epochs, {state.step} steps, final size {hvd.size()}",
            flush=True,
        )


if __name__ == "__main__":
    main()

"""Training throughput of a Keras image model with Horovod on synthetic data, on CPU.

Random images and labels are made once in memory, so the numbers measure the model's forward and backward
passes and Horovod's gradient averaging, never input loading. A few warm-up steps (graph tracing) are not
timed; then each timed round prints this rank's images/sec, and rank 0 ends with the total over all ranks.
"""

import argparse
import os
import socket
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TensorFlow loads: keep its C++ chatter out

import horovod.tensorflow as hvd
import numpy as np
import tensorflow as tf

MODELS = {
    "mobilenet_v2": tf.keras.applications.MobileNetV2,
    "resnet50": tf.keras.applications.ResNet50,
    "resnet101": tf.keras.applications.ResNet101,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--model", choices=sorted(MODELS), default="mobilenet_v2")
    parser.add_argument("--image-size", type=int, default=96)
    parser.add_argument("--batch-size", type=int, default=16, help="images per rank and step")
    parser.add_argument("--warmup-steps", type=int, default=2)
    parser.add_argument("--steps-per-round", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    hvd.init()
    rank, size = hvd.rank(), hvd.size()
    print(f"rank {rank} of {size} on {socket.gethostname()}", flush=True)

    classes = 1000
    # weights=None: random initial weights, so no pretrained file is fetched.
    shape = (args.image_size, args.image_size, 3)
    model = MODELS[args.model](weights=None, input_shape=shape, classes=classes)
    optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy()
    generator = np.random.default_rng(rank)
    images = tf.constant(
        generator.random((args.batch_size, args.image_size, args.image_size, 3), dtype=np.float32)
    )
    labels = tf.constant(generator.integers(0, classes, args.batch_size))

    @tf.function
    def step(first: bool) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        tape = hvd.DistributedGradientTape(tape)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        # Every rank starts from rank 0's weights, once they and the optimizer's slots exist.
        if first:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(optimizer.variables, root_rank=0)
        return loss

    if rank == 0:
        print(
            f"model {args.model}, {args.image_size}x{args.image_size} images,"
            f" batch {args.batch_size} per rank, {size} ranks",
            flush=True,
        )
    step(tf.constant(True))
    for _ in range(max(0, args.warmup_steps - 1)):
        step(tf.constant(False))

    rates = []
    for number in range(args.rounds):
        started = time.perf_counter()
        for _ in range(args.steps_per_round):
            loss = step(tf.constant(False))
        float(loss)  # waits for the round's last step
        rate = args.batch_size * args.steps_per_round / (time.perf_counter() - started)
        rates.append(rate)
        print(f"rank {rank} round {number}: {rate:.1f} images/sec", flush=True)

    mean = float(np.mean(rates))
    total = float(hvd.allreduce(tf.constant(mean), op=hvd.Sum))
    if rank == 0:
        print(f"images/sec: {total:.1f} total on {size} ranks, {total / size:.1f} per rank", flush=True)


if __name__ == "__main__":
    main()

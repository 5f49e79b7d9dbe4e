"""DeepSpeed ZeRO (stage 1 by default) on CPU and gloo: the same small network and data as the PyTorch
example, trained by every rank on its shard, the loss printed by rank 0 as it falls.

Started by plain `mpirun` (the Kubeflow SDK's way) or by `deepspeed --launcher openmpi`, which runs mpirun
itself. Either way the ranks find each other through deepspeed.init_distributed(): with no RANK or
MASTER_ADDR set it asks mpi4py for the rank and size, and rank 0 broadcasts its own address.
The optimizer is a torch one: DeepSpeed's JSON "Adam" would need its C++ Adam op as well.
"""

from __future__ import annotations

import argparse
import os
import socket
import sys

import deepspeed
import torch
import torch.distributed as dist
from deepspeed.accelerator import get_accelerator
from deepspeed.utils.logging import set_log_level_from_string
from torch import nn


def model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(2, 32), nn.Tanh(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 1))


def say(line: str) -> None:
    """One line in one write: DeepSpeed's launcher runs `python -u`, where print() sends the text and its
    newline as two writes, and another rank's line forwarded by mpirun can land between them."""
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default="/examples/data.pt")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--zero-stage", type=int, default=1, choices=(1, 2))
    # deepspeed's launchers may add --local_rank; the rank comes from MPI here.
    args, _ = parser.parse_known_args()

    # DeepSpeed logs at WARNING by default; its INFO lines say how it found the ranks and which backend
    # it chose. The rest of its INFO (the whole config, every step) would bury the example's own lines.
    set_log_level_from_string("info")
    deepspeed.init_distributed()
    set_log_level_from_string("warning")
    rank, size = dist.get_rank(), dist.get_world_size()
    say(f"rank {rank} of {size} on {socket.gethostname()}")
    say(
        f"rank {rank} world size {size} accelerator {get_accelerator().device_name()} "
        f"backend {dist.get_backend()} DS_ACCELERATOR={os.environ.get('DS_ACCELERATOR', '')}"
    )

    data = torch.load(args.data)
    features, labels = data["features"][rank::size], data["labels"][rank::size]
    net = model()
    config = {
        "train_micro_batch_size_per_gpu": args.batch_size,
        "gradient_accumulation_steps": 1,
        "zero_optimization": {"stage": args.zero_stage},
        "steps_per_print": 1_000_000,
    }
    engine, _, _, _ = deepspeed.initialize(
        model=net, optimizer=torch.optim.Adam(net.parameters(), lr=args.lr), config=config
    )
    loss_fn = nn.BCEWithLogitsLoss()

    losses = []
    # Every rank takes the same number of steps: ZeRO's reductions are collective.
    steps = len(labels) // args.batch_size
    for epoch in range(args.epochs):
        order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(epoch))
        total = torch.zeros(2)
        for step in range(steps):
            batch = order[step * args.batch_size : (step + 1) * args.batch_size]
            loss = loss_fn(engine(features[batch]).squeeze(1), labels[batch])
            engine.backward(loss)
            engine.step()
            total += torch.tensor([loss.item() * len(batch), len(batch)])
        dist.all_reduce(total)
        losses.append(float(total[0] / total[1]))
        if rank == 0:
            say(f"epoch {epoch} loss {losses[-1]:.4f}")

    flat = torch.cat([p.detach().flatten() for p in engine.module.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(size)]
    dist.all_gather(gathered, flat)
    assert all(torch.equal(flat, other) for other in gathered), "the ranks' parameters differ"
    if rank == 0:
        say(f"zero stage {args.zero_stage}: loss at start {losses[0]:.4f}, at end {losses[-1]:.4f}")
        assert losses[-1] < losses[0], "the loss did not fall"


if __name__ == "__main__":
    main()

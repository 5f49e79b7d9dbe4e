"""Writes the training data the examples learn from: a fixed, seeded two-class problem (points on two
interleaved spirals), so the image holds its data and a run downloads nothing.

Usage: python make_data.py OUT.pt [--samples N]
"""

from __future__ import annotations

import argparse
import math

import torch


def spirals(samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    half = samples // 2
    turn = torch.rand(half, generator=generator) * 3 * math.pi + 0.5
    points = []
    for sign in (1.0, -1.0):
        xy = torch.stack([sign * turn * torch.cos(turn), sign * turn * torch.sin(turn)], dim=1) / 10
        points.append(xy + 0.05 * torch.randn(half, 2, generator=generator))
    features = torch.cat(points)
    labels = torch.cat([torch.zeros(half), torch.ones(half)])
    order = torch.randperm(2 * half, generator=generator)
    return features[order], labels[order]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--samples", type=int, default=4096)
    parser.add_argument("--seed", type=int, default=20261128)
    args = parser.parse_args()
    features, labels = spirals(args.samples, args.seed)
    torch.save({"features": features, "labels": labels}, args.out)
    print(f"wrote {len(labels)} samples to {args.out}")


if __name__ == "__main__":
    main()

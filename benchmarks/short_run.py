"""A short training run of the notebook's agent, to time one configuration against another.

    python -m benchmarks.short_run                                  # 3 episodes of the default Config
    python -m benchmarks.short_run --set clipped_double_q=True      # the same with two critics

Seed 0, one torch thread, no checkpoints kept; after a 250-step warm-up it learns every step, where
an update's cost shows most. It prints the training's wall time.
"""
import argparse
import tempfile
import time

import torch

from continuous_control.agent import Config, train
from continuous_control.config import parse_overrides
from reacher import ReacherEnvironment


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=3)
    parser.add_argument("--set", nargs="*", default=[], metavar="FIELD=VALUE")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    cfg = Config(**parse_overrides(Config, args.set))
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as run_dir:
        train(cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, args.episodes, stop_when_solved=False, live=False,
              log_every=10 ** 6, checkpoint_every=10 ** 6)
    print(f"{args.set or 'default'}: {args.episodes} episodes in {time.perf_counter() - start:.1f} s")


if __name__ == "__main__":
    main()

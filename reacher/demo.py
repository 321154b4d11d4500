"""Play the built-in Reacher with a random agent and with the scripted controller.

    python -m reacher.demo [--episodes 2] [--seed 0]
"""
import argparse
import time

import numpy as np

from . import ReacherEnvironment, play, scripted_actions


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    env = ReacherEnvironment(seed=args.seed)
    rng = np.random.default_rng(args.seed)
    policies = {"random (normal, clipped)": lambda info: np.clip(rng.standard_normal((len(info.agents), 4)), -1, 1),
                "scripted PD controller": lambda info: scripted_actions(env.physics)}
    for name, policy in policies.items():
        start = time.perf_counter()
        scores = play(env, policy, args.episodes)
        print(f"{name:26s} mean over 20 agents per episode: {np.round(scores.mean(1), 2).tolist()}"
              f"  (min agent {scores.min():.2f}, max {scores.max():.2f}, {time.perf_counter() - start:.1f} s)")
    env.close()


if __name__ == "__main__":
    main()

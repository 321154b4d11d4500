"""Does the critic overestimate? Its Q(s, mu(s)) beside Monte-Carlo returns and the ceiling r_max / (1 - gamma).

    python -m experiments.overestimation --run checkpoints --episodes 2   # results/overestimation/checkpoints.json

The noise-free policy mu plays unseen goals; at every arm and step t, Q(s_t, mu(s_t)) meets G_t = sum_k gamma^k
r_{t+k} to the episode's end, which misses a tail in [0, gamma^(T-t) ceiling]: only steps with at least
L = ceil(log 0.01 / log gamma) left count. G_t is a lower bound (mc_return), G_t + the tail's an upper one.
"""

import argparse
import math
import os
import platform

import numpy as np
import torch

from continuous_control.figures import q_reference
from continuous_control.files import read_json
from continuous_control.playback import load_networks, policy_of
from continuous_control.provenance import ROOT
from continuous_control.results import EVAL_SEED, write_json

FOLDER, TOLERANCE = (
    os.path.join("results", "overestimation"),
    0.01,
)  # TOLERANCE: the tail's largest share of the ceiling


def discounted_returns(rewards: np.ndarray, gamma: float) -> np.ndarray:
    """G_t = sum_{k >= 0} gamma^k r_{t+k} to the sequence's end, along axis 0 (steps), for every column."""
    returns, running = np.zeros(rewards.shape, np.float64), 0.0
    for t in reversed(range(len(rewards))):
        returns[t] = running = rewards[t] + gamma * running
    return returns


def steps_left_needed(gamma: float, tolerance: float = TOLERANCE) -> int:
    """The fewest steps L left with gamma^L <= tolerance: the tail after them is under tolerance x the ceiling."""
    return math.ceil(math.log(tolerance) / math.log(gamma))


def usable_steps(steps: int, gamma: float, tolerance: float = TOLERANCE) -> int:
    """How many first steps t of an episode of `steps` steps have steps - t >= L left (none if too short)."""
    return max(0, steps - steps_left_needed(gamma, tolerance) + 1)


def measure(run_dir: str, episodes: int = 2) -> dict:
    """Play mu on environment seed EVAL_SEED + the run's seed: the critic's mean Q against G on the usable steps."""
    from reacher import BRAIN_NAME, ReacherEnvironment

    cfg = read_json(os.path.join(ROOT, run_dir, "config.json"))
    seed, gamma, twin, nets = cfg["seed"], cfg["gamma"], bool(cfg.get("clipped_double_q")), load_networks(run_dir)
    policy, norm, critic, ceiling = (
        policy_of(nets),
        nets["normalizer"],
        nets["critic"],
        q_reference([], gamma)["ceiling"],
    )
    env, q, low, high = ReacherEnvironment(seed=EVAL_SEED + seed, verbose=False), [], [], []
    for _ in range(episodes):
        info, values, rewards, done = env.reset(train_mode=True)[BRAIN_NAME], [], [], False
        while not done:
            states, actions = torch.as_tensor(info.vector_observations, dtype=torch.float32), policy(info)
            with torch.no_grad():
                values.append(critic.values(norm(states), torch.as_tensor(actions)).numpy())  # (critics, arms)
            info = env.step(actions)[BRAIN_NAME]
            rewards.append(info.rewards)
            done = bool(np.any(info.local_done))
        steps, n = len(rewards), usable_steps(len(rewards), gamma)
        g = discounted_returns(np.array(rewards, np.float64), gamma)[:n]  # (usable steps, arms)
        (
            q.append(np.array(values)[:n]),
            low.append(g),
            high.append(g + gamma ** (steps - np.arange(n))[:, None] * ceiling),
        )
    env.close()
    q, low, high = (np.concatenate(x) for x in (q, low, high))  # (episodes x usable steps[, critics], arms)
    q1, qmin = q[:, 0], q.min(1)
    # named by its path under the project (runs-clipped_double_q-seed3), so that two variants' seed 3 never collide
    name = os.path.relpath(os.path.abspath(run_dir), ROOT).replace(os.sep, "-")
    return {
        "run": name,
        "run_dir": run_dir,
        "seed": seed,
        "episodes": episodes,
        "env_seed": EVAL_SEED + seed,
        "gamma": gamma,
        "machine": platform.platform(),
        "twin_critic": twin,
        "steps_per_episode": steps,
        "usable_steps_per_episode": n,
        "pairs": int(q1.size),
        "ceiling": ceiling,
        "steps_left_at_least": steps_left_needed(gamma),
        "tail_bound_max": gamma ** steps_left_needed(gamma) * ceiling,
        "q": float(q1.mean()),
        "q_min": float(qmin.mean()) if twin else None,
        "q_max": float(q1.max()),
        "share_q_above_ceiling": float((q1 > ceiling).mean()),
        "mc_return": float(low.mean()),
        "mc_return_upper": float(high.mean()),
        "difference": float(q1.mean() - low.mean()),
        "ratio": float(q1.mean() / low.mean()),
        "difference_min": float(qmin.mean() - low.mean()) if twin else None,
    }


def save(result: dict, folder: str = FOLDER) -> str:
    """results/overestimation/<run>.json, written under a temporary name and renamed into place."""
    return write_json(os.path.join(ROOT, folder, f"{result['run']}.json"), result, listed=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="+", default=["checkpoints"], help="run folders with saved networks")
    parser.add_argument("--episodes", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)  # one thread: two trainings share the two cores
    for run in args.run:
        print(save(measure(run, args.episodes)))


if __name__ == "__main__":
    main()

"""A published course learner, re-expressed, trained on the built-in Reacher next to its Unity log.

    python -m experiments.published_learner --seeds 0 1 2 --episodes 80     # results/published_learner/
    python -m experiments.published_learner --report                        # doc/published_learner.png

Is the replica about as hard to learn as the Unity build? A learner trained there, its per-episode
log public, answers that: github.com/erichans/udacity-deeprl-continuous-control @ ce6b590a. Its code
carries no licence, so this is our own re-expression of it (DDPG, OU noise, one update per step on
64 x 20 transitions), with one difference: the batch is drawn with replacement, not without.
"""

import argparse
import glob
import os
import time
from pathlib import Path

import numpy as np
import torch
from torch import nn

from continuous_control.files import read_json
from continuous_control.provenance import ROOT
from continuous_control.results import first_episode_at, write_json
from reacher import BRAIN_NAME, ReacherEnvironment
from reacher.physics import ACTION_SIZE, OBSERVATION_SIZE

RESULTS = os.path.join(ROOT, "results", "published_learner")
SOURCE = "github.com/erichans/udacity-deeprl-continuous-control @ ce6b590a, result.txt"
# Its Unity log: "Avg Ep. Score" (the 20-arm mean) of episodes 1-80; it solved at episode 100
# (the window's last episode), 30.94 over episodes 1-100.
UNITY_LOG = [
    0.52,
    0.29,
    0.76,
    1.06,
    1.29,
    1.50,
    2.11,
    3.04,
    3.51,
    3.94,
    4.27,
    5.54,
    7.14,
    8.54,
    11.85,
    14.60,
    17.03,
    21.48,
    24.26,
    27.14,
    27.14,
    31.37,
    33.35,
    34.75,
    34.96,
    35.69,
    35.77,
    36.94,
    37.21,
    36.28,
    35.98,
    37.69,
    37.83,
    37.81,
    37.04,
    37.79,
    36.53,
    37.59,
    36.93,
    36.39,
    37.06,
    37.59,
    37.12,
    37.43,
    36.58,
    37.06,
    37.15,
    36.30,
    36.87,
    38.33,
    37.56,
    36.96,
    37.33,
    36.15,
    36.14,
    38.32,
    36.88,
    36.42,
    37.58,
    37.17,
    36.97,
    36.98,
    37.11,
    36.38,
    36.54,
    37.58,
    36.03,
    36.97,
    36.30,
    36.94,
    36.09,
    36.72,
    37.03,
    36.76,
    36.83,
    36.15,
    36.80,
    36.80,
    37.16,
    36.26,
]


def _init(layers):  # +-1/sqrt(out_features), as the course template's hidden_init reads weight.size()[0]
    for layer in layers[:-1]:
        bound = 1.0 / np.sqrt(layer.weight.shape[0])
        nn.init.uniform_(layer.weight, -bound, bound)
    nn.init.uniform_(layers[-1].weight, -3e-3, 3e-3)
    return layers


def make_actor():
    fc = _init([nn.Linear(OBSERVATION_SIZE, 400), nn.Linear(400, 300), nn.Linear(300, ACTION_SIZE)])
    return nn.Sequential(fc[0], nn.ReLU(), fc[1], nn.ReLU(), fc[2], nn.Tanh())


class Critic(nn.Module):
    def __init__(self):
        super().__init__()
        layers = [
            nn.Linear(OBSERVATION_SIZE, 400),
            nn.Linear(400 + ACTION_SIZE, 300),
            nn.Linear(300, 50),
            nn.Linear(50, 1),
        ]
        self.fc = nn.ModuleList(_init(layers))

    def forward(self, s, a):
        x = torch.relu(self.fc[0](s))
        x = torch.relu(self.fc[1](torch.cat([x, a], 1)))
        return self.fc[3](torch.relu(self.fc[2](x)))


def make_pair(make, seed):
    torch.manual_seed(seed)
    local = make()
    torch.manual_seed(seed)
    return local, make()


def train(seed: int, episodes: int, out: str) -> list:
    torch.set_num_threads(1)
    rng = np.random.default_rng(seed)
    actor, actor_target = make_pair(make_actor, seed)
    critic, critic_target = make_pair(Critic, seed)
    actor_opt = torch.optim.Adam(actor.parameters(), lr=1e-4)
    critic_opt = torch.optim.Adam(critic.parameters(), lr=1e-3)
    capacity, batch, n = 10**6, 64 * 20, 20
    widths = {"s": OBSERVATION_SIZE, "a": ACTION_SIZE, "r": 1, "s2": OBSERVATION_SIZE, "d": 1}
    buf = {k: np.zeros((capacity, width), np.float32) for k, width in widths.items()}
    size = ptr = 0
    env = ReacherEnvironment(seed=seed, verbose=False)
    scores, start = [], time.perf_counter()
    for episode in range(1, episodes + 1):
        info = env.reset(train_mode=True)[BRAIN_NAME]
        noise, score = np.zeros((n, ACTION_SIZE)), np.zeros(n)
        while True:
            states = info.vector_observations.astype(np.float32)
            with torch.no_grad():
                actions = actor(torch.from_numpy(states)).numpy()
            noise += 0.15 * (0 - noise) * 0.01 + 0.2 * np.sqrt(0.01) * rng.standard_normal(noise.shape)
            actions = np.clip(actions + noise, -1, 1)
            info = env.step(actions)[BRAIN_NAME]
            idx = (ptr + np.arange(n)) % capacity
            buf["s"][idx], buf["a"][idx], buf["s2"][idx] = states, actions, info.vector_observations
            buf["r"][idx, 0], buf["d"][idx, 0] = info.rewards, info.local_done
            ptr, size = (ptr + n) % capacity, min(size + n, capacity)
            score += info.rewards
            # One update per environment step on 1280 transitions (all of them while fewer).
            pick = rng.integers(0, size, min(size, batch))
            s, a, r, s2, d = (torch.from_numpy(buf[k][pick]) for k in ("s", "a", "r", "s2", "d"))
            with torch.no_grad():
                target = r + 0.99 * critic_target(s2, actor_target(s2)) * (1 - d)
            critic_opt.zero_grad()
            torch.nn.functional.mse_loss(critic(s, a), target).backward()
            nn.utils.clip_grad_norm_(critic.parameters(), 1)
            critic_opt.step()
            actor_opt.zero_grad()
            (-critic(s, actor(s)).mean()).backward()
            actor_opt.step()
            with torch.no_grad():
                for net, tgt in ((critic, critic_target), (actor, actor_target)):
                    for p, tp in zip(net.parameters(), tgt.parameters()):
                        tp.lerp_(p, 1e-3)
            if np.any(info.local_done):
                break
        scores.append(float(score.mean()))
        print(f"seed {seed} episode {episode}: {scores[-1]:.2f} ({time.perf_counter() - start:.0f} s)", flush=True)
        record = {"seed": seed, "scores": scores, "seconds": time.perf_counter() - start, "source": SOURCE}
        write_json(out, record)  # no manifest here: Report.ipynb reads the folder by a glob of *.json
    return scores


def report(folder=RESULTS, path=os.path.join(ROOT, "doc", "published_learner.png")):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [read_json(p) for p in sorted(glob.glob(os.path.join(folder, "seed*.json")))]
    fig, ax = plt.subplots(figsize=(7, 3.8))
    for run in runs:
        ax.plot(
            np.arange(1, len(run["scores"]) + 1), run["scores"], lw=1, label=f"built-in replica, seed {run['seed']}"
        )
    ax.plot(np.arange(1, len(UNITY_LOG) + 1), UNITY_LOG, "k", lw=2, label="Unity build (its published log)")
    ax.set(xlabel="episode", ylabel="mean score of the 20 arms")
    ax.set_title("A published course DDPG learner (erichans @ ce6b590a)", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    lines = [
        "# A published course learner on the built-in replica",
        "",
        f"Made by `make learner` (`experiments/published_learner.py --report`) from `results/published_learner/`; "
        f"do not edit by hand. Source of the learner and its Unity log: {SOURCE}. Figure: "
        "[published_learner.png](published_learner.png).",
        "",
        "| run | episodes | first episode with 20-arm mean >= 30 | mean of its episodes "
        "| Unity's mean over the same episodes |",
        "|---|---|---|---|---|",
        f"| Unity build (its log) | {len(UNITY_LOG)} | {first_episode_at(UNITY_LOG)} | {np.mean(UNITY_LOG):.1f} | - |",
    ]
    for run in runs:
        k = len(run["scores"])
        lines.append(
            f"| replica, seed {run['seed']} | {k} | {first_episode_at(run['scores']) or f'not by {k}'} | "
            f"{np.mean(run['scores']):.1f} | {np.mean(UNITY_LOG[:k]):.1f} |"
        )
    Path(path.replace(".png", ".md")).write_text("\n".join(lines) + "\n")
    print(f"wrote {path} and its table")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--episodes", type=int, default=80)
    parser.add_argument("--report", action="store_true")
    args = parser.parse_args(argv)
    if args.report:
        return report()
    os.makedirs(RESULTS, exist_ok=True)
    for seed in args.seeds:
        train(seed, args.episodes, os.path.join(RESULTS, f"seed{seed}.json"))


if __name__ == "__main__":
    main()

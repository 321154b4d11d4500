"""Stable-Baselines3's TD3 and SAC trained on the same 20 arms as the agent (`make peers`).

    python -m benchmarks.peers                          # td3 and sac, seeds 0-2: about an hour, resumable
    python -m benchmarks.peers --runs td3_zoo sac_zoo   # RL-Zoo's update schedule: about 55 minutes a run
    python -m benchmarks.peers --runs td3 --seeds 0 --episodes 2 --out /tmp/peers   # one short run
    SMOKE=1 python -m benchmarks.peers --out /tmp/peers  # seconds: 4 episodes of 48 steps

What a user would pick instead of writing DDPG by hand, on the agent's own terms: the 20-arm
replica through its Gymnasium interface (`reacher.gym.ReacherVectorEnv`, handed to SB3 by
`reacher.sb3.GymnasiumVecEnv`: one world, 20 transitions per step), 100 episodes (the agent's
environment steps), seeds 0-2 (the goals of `ReacherEnvironment(seed=k)`; the agent's seed k draws its goals from its own
stream of k, `seed_streams(k)["goals"]`: other goals of the same distribution).

Hyperparameters (HYPERPARAMETERS; SB3's defaults for everything not named):
- TD3: RL-Zoo's set for the MuJoCo tasks (hyperparams/td3.yml, "Mujoco Envs", HalfCheetah's
  &mujoco-defaults, shared by Ant, Hopper, Walker2d, Humanoid): learning_starts 10,000 and Gaussian
  action noise of std 0.1, with learning rate 1e-3, batch 256, networks [400, 300], train_freq 1 and
  gradient_steps 1, which are also SB3 2.x's TD3 defaults (read back from the model into config.json).
  Checked against the zoo's own hyperparams/python/td3.py (its MuJoCo tasks under seals/:
  learning_starts 10,000, noise normal 0.1, the rest SB3's defaults); the copy of td3.yml this
  project could consult predates the file's MuJoCo section.
- SAC: RL-Zoo's set for the same tasks (hyperparams/sac.yml, "Mujoco Envs"): SB3's defaults
  (learning rate 3e-4, batch 256, networks [256, 256], automatic entropy with target -dim(A) = -4)
  with learning_starts 10,000.

Update schedules (SCHEDULES), the one thing each run name says besides the algorithm:
- `td3`, `sac`: the agent's (continuous_control.agent.Config): the first update once 5,000
  transitions are stored, one update (batch 256) per step of the 20 arms in the fast episodes, then
  one every 8 steps. The fast episodes are the agent's rule (`learns_fast`) on the peer's own scores:
  the first 20 (or fewer, with the agent's `fast_until` set). The callback sets SB3's `train_freq`
  when they end, and every run checks its count of updates (`model._n_updates`) against the
  schedule's (`expected_updates`).
- `td3_zoo`, `sac_zoo`: RL-Zoo's as it stands: one update per step of the 20 arms throughout
  (train_freq 1, gradient_steps 1 count vector steps), the first after 10,000 transitions.

Each run leaves in results/peers/<run>/seed<k>/ what the agent's runs leave in results/<variant>/:
scores.csv, arm_scores.csv, config.json, summary.json with the wall time, the machine, how many runs
shared it, and a noise-free evaluation of the final policy (deterministic=True, exported as
runs/peers/<run>/seed<k>/actor.pt2) by `continuous_control.results.evaluate`, on the agent's unseen
goals. The folder is written whole at the end (renamed from a partial one), and a run whose
results hold today's schedule is skipped (`finished`). One torch thread per run, `--jobs` runs at a time.
"""
from __future__ import annotations

import argparse
import copy
import json
import math
import os
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np

from continuous_control.results import ROOT, TARGET_SCORE, WINDOW, code_version, commit_of, evaluate, first_episode_at, machine
from reacher.physics import MAX_STEPS

SMOKE = os.environ.get("SMOKE", "0") == "1"
SEEDS, EPISODES, JOBS = (0, 1, 2), 100, 2
RESULTS, WORK = os.path.join(ROOT, "results", "peers"), os.path.join(ROOT, "runs", "peers")

SOURCES = {
    "TD3": "RL-Zoo hyperparams/td3.yml, Mujoco Envs (HalfCheetah &mujoco-defaults); SB3 2.x defaults otherwise",
    "SAC": "RL-Zoo hyperparams/sac.yml, Mujoco Envs (HalfCheetah &mujoco-defaults); SB3 2.x defaults otherwise",
}
HYPERPARAMETERS = {
    "TD3": dict(learning_rate=1e-3, batch_size=256, policy_kwargs=dict(net_arch=[400, 300]), action_noise_std=0.1),
    "SAC": dict(),
}
ZOO_LEARNING_STARTS = 10_000          # both files' MuJoCo set


@dataclass(frozen=True)
class Schedule:
    """When SB3 updates: after `learning_starts` transitions, then one update every step of all
    arms, or (if `fast_episodes`) every step in the fast episodes (at most `fast_episodes`, ending
    once an episode's mean score reached `fast_until`: the agent's `learns_fast`) and every `later`
    steps after."""
    name: str
    learning_starts: int
    fast_episodes: int | None = None
    later: int = 1
    fast_until: float | None = None


def agents_schedule() -> Schedule:
    """The agent's own schedule, read from its Config (never typed twice). SB3 trains once it holds
    *more than* learning_starts transitions, the agent once it holds `warmup`: warmup - 1 makes
    both start at the same step."""
    from continuous_control.agent import Config
    cfg = Config()
    if cfg.learn_every != 1 or getattr(cfg, "updates_per_learn", 1) != 1:
        raise ValueError("the peers' schedule assumes the agent learns every step in its fast episodes")
    until = "" if cfg.fast_until is None else f" (until an episode's mean reaches {cfg.fast_until:g})"
    return Schedule(f"the agent's: every step for {'up to ' * bool(until)}{cfg.fast_episodes} episodes{until}, "
                    f"then every {cfg.learn_every_later}",
                    cfg.warmup - 1, cfg.fast_episodes, cfg.learn_every_later, cfg.fast_until)


SCHEDULES = {"ours": agents_schedule, "zoo": lambda: Schedule("RL-Zoo's: every step", ZOO_LEARNING_STARTS)}
PEERS = {"td3": ("TD3", "ours"), "sac": ("SAC", "ours"), "td3_zoo": ("TD3", "zoo"), "sac_zoo": ("SAC", "zoo")}
LABELS = {"td3": "SB3 TD3, the agent's update schedule", "sac": "SB3 SAC, the agent's update schedule",
          "td3_zoo": "SB3 TD3, RL-Zoo's schedule (an update every step)",
          "sac_zoo": "SB3 SAC, RL-Zoo's schedule (an update every step)"}
# `make peers`: the agent's schedule only. Measured on this 2-core machine, one torch thread, two
# runs at a time: an update costs about 30 ms (TD3's [400, 300] and SAC's [256, 256] networks on a
# batch of 256; the agent's 128 x 128 about a tenth of it), a step without one 2-3 ms. So a run on the
# agent's schedule (29,781 updates) takes about 20 minutes and the set of 6 about an hour, while one
# on RL-Zoo's (99,600 updates) takes about 55: its 6 runs would add almost three hours. They are
# left out of the default set; `--runs td3_zoo sac_zoo` runs them.
DEFAULT_SET = ("td3", "sac")


SMOKE_STEPS = 48           # steps per episode at SMOKE size


def smoke(schedule: Schedule, episode_steps: int = SMOKE_STEPS) -> Schedule:
    """The schedule shrunk with the episode: the fast phase 2 episodes, the first update at the same
    fraction of the first episode (step 12 of 48 for the agent's, 24 for RL-Zoo's)."""
    fast = None if schedule.fast_episodes is None else 2
    starts = round((schedule.learning_starts + 1) * episode_steps / MAX_STEPS) - 1
    return Schedule(schedule.name + " (SMOKE size)", starts, fast, schedule.later, schedule.fast_until)


def expected_updates(schedule: Schedule, episodes: int, episode_steps: int, arms: int,
                     fast_episodes: int | None = None) -> int:
    """How many updates SB3 makes on this schedule, whose fast episodes were `fast_episodes` (the
    schedule's most, if not given): it collects `train_freq` steps, then trains once if it holds
    more than learning_starts transitions; a last chunk may run past the final episode. SB3 counts
    its chunks of `later` steps from the end of the fast episodes, the agent its steps from the
    start, so when the fast episodes end early the two can differ by one update."""
    total = episodes * episode_steps
    fast_episodes = schedule.fast_episodes if fast_episodes is None else fast_episodes
    fast = total if fast_episodes is None else min(episodes, fast_episodes) * episode_steps
    chunk_ends = np.r_[np.arange(1, fast + 1), fast + schedule.later * np.arange(1, math.ceil((total - fast) / schedule.later) + 1)]
    return int(np.count_nonzero(chunk_ends * arms > schedule.learning_starts))


# --- one run ------------------------------------------------------------------------------------

def make_model(algo: str, venv, schedule: Schedule, seed: int, buffer_size: int | None = None):
    """An SB3 model with the named hyperparameters and the schedule's first update."""
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise
    params = dict(HYPERPARAMETERS[algo])
    std = params.pop("action_noise_std", None)
    if std is not None:
        size = venv.action_space.shape[-1]
        params["action_noise"] = NormalActionNoise(np.zeros(size), std * np.ones(size))
    if buffer_size is not None:
        params["buffer_size"] = buffer_size
    cls = {"TD3": TD3, "SAC": SAC}[algo]
    return cls("MlpPolicy", venv, learning_starts=schedule.learning_starts, train_freq=1, gradient_steps=1,
               seed=seed, device="cpu", verbose=0, **params)


def recorder(schedule: Schedule, label: str, log_every: int):
    """An SB3 callback: every arm's score and the wall time of each episode; after the schedule's
    fast episodes (`fast_end`, decided by the agent's `learns_fast` on these scores), SB3's update
    interval set to `later` steps (used from its next collection)."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

    from continuous_control.agent import learns_fast

    class Recorder(BaseCallback):
        def _on_training_start(self) -> None:
            self.clock, self.score, self.arms, self.wall, self.fast_end = time.perf_counter(), 0.0, [], [], None

        def _on_step(self) -> bool:
            self.score = self.score + self.locals["rewards"].astype(np.float64)
            dones = self.locals["dones"]
            if dones.any():
                if not dones.all():
                    raise RuntimeError("one arm's episode ended without the others: the arms share one clock")
                self.arms.append(self.score)
                self.wall.append(time.perf_counter() - self.clock)
                self.score = 0.0
                episode, means = len(self.arms), [a.mean() for a in self.arms]
                fast = schedule.fast_episodes is not None and self.fast_end is None
                if fast and not learns_fast(schedule, episode + 1, means):
                    self.fast_end = episode
                    self.model.train_freq = TrainFreq(schedule.later, TrainFrequencyUnit.STEP)
                if episode % log_every == 0 or episode == 1:
                    print(f"{label} episode {episode:3d}  mean {means[-1]:5.2f}  min {self.arms[-1].min():5.2f}  "
                          f"max {self.arms[-1].max():5.2f}  avg100 {np.mean(means[-WINDOW:]):5.2f}  "
                          f"{self.wall[-1] / 60:5.1f} min  updates {self.model._n_updates}", flush=True)
            return True

    return Recorder()


def deterministic_policy(model):
    """SB3's predict(deterministic=True) as a plain torch module, for an action space of [-1, 1]:
    TD3's actor (tanh inside), SAC's tanh of the Gaussian's mean."""
    import torch
    from stable_baselines3 import SAC

    space = model.action_space
    if not (np.all(space.low == -1) and np.all(space.high == 1)):
        raise ValueError("the exported policy assumes actions in [-1, 1], which SB3 leaves unscaled")
    actor = copy.deepcopy(model.policy.actor).cpu().eval()

    class Deterministic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = actor

        def forward(self, obs):
            if isinstance(model, SAC):
                mean, _, _ = self.actor.get_action_dist_params(obs)
                return torch.tanh(mean)
            return self.actor(obs)

    return Deterministic()


def export(model, path: str) -> None:
    """The deterministic policy as a torch.export program for any number of arms, as the agent's actor.pt2."""
    import torch
    policy = deterministic_policy(model)
    size = model.observation_space.shape[-1]
    program = torch.export.export(policy, (torch.zeros(2, size),), dynamic_shapes=({0: torch.export.Dim("agents", min=1)},))
    torch.export.save(program, path)


def history_files(folder: str, arms: np.ndarray, wall: np.ndarray) -> dict:
    """scores.csv and arm_scores.csv as the agent's runs write them; the summary's score entries."""
    means = arms.mean(1)
    avg100 = np.array([means[max(0, i - WINDOW + 1):i + 1].mean() for i in range(len(means))])
    with open(os.path.join(folder, "scores.csv"), "w") as f:
        f.write("episode,mean,min,max,avg100,wall_seconds\n")
        for i, row in enumerate(zip(means, arms.min(1), arms.max(1), avg100, wall)):
            f.write(f"{i + 1}," + ",".join(f"{v:.4f}" for v in row) + "\n")
    with open(os.path.join(folder, "arm_scores.csv"), "w") as f:
        f.write("episode," + ",".join(f"arm{k}" for k in range(arms.shape[1])) + "\n")
        for i, row in enumerate(arms):
            f.write(f"{i + 1}," + ",".join(f"{v:.2f}" for v in row) + "\n")
    hits = np.flatnonzero((np.arange(1, len(means) + 1) >= WINDOW) & (avg100 >= TARGET_SCORE))
    solved = int(hits[0]) + 1 if hits.size else None
    return {"solved_at": solved, "first_episode_mean_30": first_episode_at(means), "episodes": len(means),
            "final_avg100": float(avg100[-1]), "mean_episodes_1_100": float(means[:WINDOW].mean()),
            "arm_means_episodes_1_100": arms[:WINDOW].mean(0).tolist(), "wall_seconds": float(wall[-1]),
            "wall_seconds_to_solve": float(wall[solved - 1]) if solved else None}


def run_one(name: str, seed: int, out: str = RESULTS, work: str = WORK, episodes: int = EPISODES,
            episode_steps: int = MAX_STEPS, concurrent: int = 1, eval_episodes: int = 5,
            schedule: Schedule | None = None, buffer_size: int | None = None, log_every: int = 10) -> dict:
    """Train peer `name` on seed `seed` in this process, evaluate it, write its results folder; its summary."""
    import gymnasium
    import stable_baselines3
    import torch
    from reacher.gym import sb3_vec_env

    if name not in PEERS:
        raise ValueError(f"unknown peer {name!r}: one of {sorted(PEERS)}")
    torch.set_num_threads(1)
    started_with = code_version()                    # the code that makes the run (see commit_of)
    algo, schedule_name = PEERS[name]
    schedule = schedule or SCHEDULES[schedule_name]()
    venv = sb3_vec_env(episode_steps=episode_steps)
    arms = venv.num_envs
    model = make_model(algo, venv, schedule, seed, buffer_size)
    callback = recorder(schedule, f"{name} seed {seed}", log_every)
    model.learn(total_timesteps=episodes * episode_steps * arms, callback=callback)
    if len(callback.arms) != episodes:
        raise RuntimeError(f"{name} seed {seed}: {len(callback.arms)} episodes recorded, {episodes} expected")
    expected = expected_updates(schedule, episodes, episode_steps, arms, callback.fast_end)
    if model._n_updates != expected:
        raise RuntimeError(f"{name} seed {seed}: SB3 made {model._n_updates} updates, the schedule {expected}")

    work_dir = os.path.join(work, name, f"seed{seed}")
    os.makedirs(work_dir, exist_ok=True)
    model.save(os.path.join(work_dir, "model.zip"))
    export(model, os.path.join(work_dir, "actor.pt2"))
    evaluation = evaluate(work_dir, seed, eval_episodes)

    final, partial = os.path.join(out, name, f"seed{seed}"), os.path.join(out, name, f".partial-seed{seed}")
    shutil.rmtree(partial, ignore_errors=True)
    os.makedirs(partial)
    summary = history_files(partial, np.array(callback.arms), np.array(callback.wall))
    summary.update(
        environment=f"built-in replica through reacher.gym.ReacherVectorEnv ({arms} arms, one world, "
                    f"{episode_steps} steps per episode) and reacher.sb3.GymnasiumVecEnv",
        machine=machine(), commit=commit_of(started_with), seed=seed, variant=name, concurrent_runs=concurrent,
        eval_noise_free_5=evaluation["episode_means"], eval_arm_means=evaluation["arm_means"],
        algorithm=algo, gradient_updates=int(model._n_updates), gradient_updates_expected=expected,
        last_fast_episode=callback.fast_end,
        stable_baselines3=stable_baselines3.__version__, gymnasium=gymnasium.__version__)
    config = dict(algorithm=algo, seed=seed, episodes=episodes, episode_steps=episode_steps, arms=arms,
                  schedule=asdict(schedule), source=SOURCES[algo], set_hyperparameters=HYPERPARAMETERS[algo],
                  sb3=sb3_settings(model))
    json.dump(config, open(os.path.join(partial, "config.json"), "w"), indent=2)
    json.dump(summary, open(os.path.join(partial, "summary.json"), "w"), indent=2)
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    print(f"{name} seed {seed}: first 30 at {summary['first_episode_mean_30']}, mean 1-100 "
          f"{summary['mean_episodes_1_100']:.2f}, solved at {summary['solved_at']}, {summary['wall_seconds'] / 60:.1f} min, "
          f"{model._n_updates} updates, noise-free eval {[round(x, 2) for x in evaluation['episode_means']]}", flush=True)
    return summary


def sb3_settings(model) -> dict:
    """What the model actually ran with, read back from it (defaults included)."""
    keys = ("learning_rate", "buffer_size", "batch_size", "tau", "gamma", "learning_starts", "gradient_steps",
            "policy_delay", "target_policy_noise", "target_noise_clip", "ent_coef", "target_entropy", "use_sde")
    found = {k: getattr(model, k) for k in keys if hasattr(model, k)}
    found["net_arch"] = model.policy.net_args["net_arch"] if hasattr(model.policy, "net_args") else None
    found["action_noise"] = repr(model.action_noise)
    return {k: v if isinstance(v, (int, float, str, bool, list, type(None))) else repr(v) for k, v in found.items()}


# --- the set ------------------------------------------------------------------------------------

def finished(out: str, name: str, seed: int) -> bool:
    """Whether <out>/<run>/seed<k>/ holds a finished run on today's schedule for it: a run on
    another schedule of the agent is run again (one saved before `fast_until` existed had none)."""
    folder = os.path.join(out, name, f"seed{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        return False
    saved = {"fast_until": None, **json.load(open(os.path.join(folder, "config.json")))["schedule"]}
    return saved == json.loads(json.dumps(asdict(schedule_of(name))))


def schedule_of(name: str) -> Schedule:
    """The schedule a run of `name` trains on: its algorithm's, shrunk at SMOKE size."""
    schedule = SCHEDULES[PEERS[name][1]]()
    return smoke(schedule) if SMOKE else schedule


def launch(name: str, seed: int, args) -> None:
    """One run in a child process; its output in <work>/<run>-seed<k>.log."""
    os.makedirs(args.work, exist_ok=True)
    log = os.path.join(args.work, f"{name}-seed{seed}.log")
    cmd = [sys.executable, "-m", "benchmarks.peers", "--one", name, str(seed), "--episodes", str(args.episodes),
           "--jobs", str(args.jobs), "--out", args.out, "--work", args.work]
    # One write per line: two runs' threads print at once.
    sys.stdout.write(f"started {name} seed {seed} (log: {log})\n")
    sys.stdout.flush()
    with open(log, "a") as f:
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    tail = open(log).read().strip().splitlines()[-1:]
    sys.stdout.write(f"finished {name} seed {seed} (exit {code}): {tail[0] if tail else ''}\n")
    sys.stdout.flush()


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", nargs="+", default=list(DEFAULT_SET), choices=sorted(PEERS))
    parser.add_argument("--seeds", nargs="+", type=int, default=list(SEEDS))
    parser.add_argument("--episodes", type=int, default=4 if SMOKE else EPISODES)
    parser.add_argument("--jobs", type=int, default=JOBS, help="runs at a time")
    parser.add_argument("--out", default=RESULTS, help="results folder")
    parser.add_argument("--work", default=WORK, help="models, exported policies and logs")
    parser.add_argument("--one", nargs=2, metavar=("RUN", "SEED"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.jobs < 1:
        parser.error("--episodes and --jobs must be at least 1")
    if args.one:
        name, seed = args.one[0], int(args.one[1])
        size = {}
        if SMOKE:
            size = dict(episode_steps=SMOKE_STEPS, eval_episodes=1, buffer_size=20_000, log_every=1,
                        schedule=schedule_of(name))
        return run_one(name, seed, args.out, args.work, args.episodes, concurrent=args.jobs, **size)
    todo = [(n, s) for s in args.seeds for n in args.runs if not finished(args.out, n, s)]
    print(f"{len(todo)} runs to do{' (SMOKE size)' if SMOKE else ''}, {args.jobs} at a time: "
          + ", ".join(f"{n}/seed{s}" for n, s in todo), flush=True)
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(pool.map(lambda run: launch(*run, args), todo))


if __name__ == "__main__":
    main()

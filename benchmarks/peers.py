"""Stable-Baselines3's TD3 and SAC trained on the same 20 arms as the agent (`make peers`).

    python -m benchmarks.peers                          # td3, sac, td3_like, sac_like on seeds 0-4, resumable
    python -m benchmarks.peers --runs td3_like sac_like # only the peers configured like the agent
    python -m benchmarks.peers --runs td3_zoo sac_zoo   # RL-Zoo's update schedule: 40-65 minutes a run
    python -m benchmarks.peers --runs td3 --seeds 0 --episodes 2 --out /tmp/peers   # one short run
    SMOKE=1 python -m benchmarks.peers --out /tmp/peers  # seconds: 4 episodes of 48 steps

What a user would pick instead of writing DDPG by hand, on the agent's own terms: the 20-arm
replica through its Gymnasium interface (`reacher.gym.ReacherVectorEnv`, handed to SB3 by
`reacher.sb3.GymnasiumVecEnv`: one world, 20 transitions per step), 100 episodes (the agent's
environment steps), seeds 0-4 (the goals of `ReacherEnvironment(seed=k)`; the agent's seed k draws its goals from its own
stream of k, `seed_streams(k)["goals"]`: other goals of the same distribution).

A run's name says three things (PEERS): the algorithm, the update schedule and the settings.

Settings (SETTINGS), each with a sentence saying where its values come from (SOURCES, LIKE_SOURCES);
SB3's defaults for everything not named:
- "zoo" (`td3`, `sac`, `td3_zoo`, `sac_zoo`), HYPERPARAMETERS:
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
  Raw observations, 1-step targets.
- "like" (`td3_like`, `sac_like`), `like_hyperparameters`: the same algorithms configured like the
  agent, every value read from `continuous_control.agent.Config()` (never typed twice): observations
  standardised by SB3's `VecNormalize(norm_obs=True, norm_reward=False, clip_obs=5.0, gamma=0.99)`
  (the agent's running mean and variance of the states, clipped at its `Normalizer`'s ±5; SB3 keeps
  the raw observations in its replay buffer and standardises them with the current statistics when it
  samples, as the agent does inside its networks), `n_steps=5` (SB3 2.9's n-step returns: Config's
  n_step), networks [128, 128] (hidden), learning rate 1e-3 (actor_lr, which must equal critic_lr: SB3
  has one rate for all its optimisers, SAC's entropy coefficient's included), batch 256, tau 5e-3,
  gamma 0.99, a buffer of 1e6. TD3 keeps its own exploration (Gaussian action noise of std 0.1, as in
  "zoo") and its target policy smoothing and delayed actor updates (SB3's defaults); SAC its
  automatic entropy tuning. What SB3 does not offer is left out, not imitated: the agent's n-step ramp
  (n = 1 in episodes 1-4, 2 in 5-8, ...: SB3 uses n = 5 from its first update), prioritized replay,
  NoisyNet with Ornstein-Uhlenbeck noise, and the critic's gradient-norm clip of 1.

Update schedules (SCHEDULES):
- "ours" (`td3`, `sac`, `td3_like`, `sac_like`): the agent's (continuous_control.agent.Config): the
  first update once 5,000 transitions are stored, one update (batch 256) per step of the 20 arms in
  the fast episodes, then one every 8 steps, after the first 20 (the agent's `learn_every_until`). The
  callback sets SB3's `train_freq` when they end, and every run checks its count of updates
  (`model._n_updates`) against the schedule's (`expected_updates`; n-step returns change what an
  update learns from, not when updates happen).
- "zoo" (`td3_zoo`, `sac_zoo`): RL-Zoo's as it stands: one update per step of the 20 arms throughout
  (train_freq 1, gradient_steps 1 count vector steps), the first after 10,000 transitions.

Each run leaves in results/peers/<run>/seed<k>/ what the agent's runs leave in results/<variant>/:
scores.csv, arm_scores.csv, config.json, summary.json with the wall time, the machine, how many runs
shared it, and a noise-free evaluation of the final policy (deterministic=True, exported as
runs/peers/<run>/seed<k>/actor.pt2) by `continuous_control.results.evaluate`, on the agent's unseen
goals. The exported policy of a "like" run starts with VecNormalize's standardisation, frozen at the
end of training, so it plays raw observations as training saw them (the statistics are also kept in
runs/peers/<run>/seed<k>/vec_normalize.pkl, beside model.zip). The folder is written whole at the end
(renamed from a partial one), and a run whose results hold today's schedule and settings is skipped
(`finished`). One torch thread per run, `--jobs` runs at a time.
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
from pathlib import Path

import numpy as np

from continuous_control.results import ROOT, TARGET_SCORE, WINDOW, code_version, commit_of, evaluate, first_episode_at, machine
from reacher.physics import MAX_STEPS

SMOKE = os.environ.get("SMOKE", "0") == "1"
SEEDS, EPISODES, JOBS = (0, 1, 2, 3, 4), 100, 2
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

LIKE_SOURCES = {
    algo: "configured like the agent: learning_rate (actor_lr, equal to critic_lr), batch_size, tau, gamma, "
          "buffer_size, n_steps (n_step) and net_arch (hidden) from continuous_control.agent.Config; "
          "VecNormalize on the observations only, clip_obs the agent's Normalizer's clip, gamma Config's; " + own
    for algo, own in {
        "TD3": "TD3's own exploration (Gaussian action noise of std 0.1, the zoo set's) and target policy "
               "smoothing (SB3 2.x defaults)",
        "SAC": "SAC's own automatic entropy tuning (SB3 2.x defaults)"}.items()}


def like_hyperparameters(algo: str) -> dict:
    """The settings of a peer configured like the agent, read from its Config (and its Normalizer's
    clip), never typed twice: what make_model sets, `vec_normalize` being VecNormalize's arguments."""
    from continuous_control.agent import Config, Normalizer
    cfg = Config()
    if cfg.actor_lr != cfg.critic_lr:
        raise ValueError("SB3 has one learning rate for all its networks; the agent's actor_lr and critic_lr differ")
    params = dict(learning_rate=cfg.actor_lr, batch_size=cfg.batch_size, tau=cfg.tau, gamma=cfg.gamma,
                  buffer_size=cfg.buffer_size, n_steps=cfg.n_step, policy_kwargs=dict(net_arch=list(cfg.hidden)),
                  vec_normalize=dict(norm_obs=True, norm_reward=False, clip_obs=float(Normalizer(1).clip),
                                     gamma=cfg.gamma))
    if algo == "TD3":
        params["action_noise_std"] = HYPERPARAMETERS["TD3"]["action_noise_std"]
    return params


SETTINGS = {"zoo": lambda algo: (HYPERPARAMETERS[algo], SOURCES[algo]),
            "like": lambda algo: (like_hyperparameters(algo), LIKE_SOURCES[algo])}


@dataclass(frozen=True)
class Schedule:
    """When SB3 updates: after `learning_starts` transitions, then one update every step of all
    arms, or (if `fast_episodes`) every step in the first `fast_episodes` episodes and every `later`
    steps after."""
    name: str
    learning_starts: int
    fast_episodes: int | None = None
    later: int = 1


def agents_schedule() -> Schedule:
    """The agent's own schedule, read from its Config (never typed twice). SB3 trains once it holds
    *more than* learning_starts transitions, the agent once it holds `warmup`: warmup - 1 makes
    both start at the same step."""
    from continuous_control.agent import Config
    cfg = Config()
    if cfg.learn_every != 1 or getattr(cfg, "updates_per_learn", 1) != 1:
        raise ValueError("the peers' schedule assumes the agent learns every step in its fast episodes")
    return Schedule(f"the agent's: every step for {cfg.learn_every_until} episodes, then every {cfg.learn_every_later}",
                    cfg.warmup - 1, cfg.learn_every_until, cfg.learn_every_later)


SCHEDULES = {"ours": agents_schedule, "zoo": lambda: Schedule("RL-Zoo's: every step", ZOO_LEARNING_STARTS)}
# run name: (algorithm, update schedule of SCHEDULES, settings of SETTINGS)
PEERS = {"td3": ("TD3", "ours", "zoo"), "sac": ("SAC", "ours", "zoo"),
         "td3_like": ("TD3", "ours", "like"), "sac_like": ("SAC", "ours", "like"),
         "td3_zoo": ("TD3", "zoo", "zoo"), "sac_zoo": ("SAC", "zoo", "zoo")}
LABELS = {"td3": "SB3 TD3, the agent's update schedule", "sac": "SB3 SAC, the agent's update schedule",
          "td3_zoo": "SB3 TD3, RL-Zoo's schedule (an update every step)",
          "sac_zoo": "SB3 SAC, RL-Zoo's schedule (an update every step)",
          "td3_like": "SB3 TD3 configured like the agent (standardised states, 5-step targets, 128 x 128)",
          "sac_like": "SB3 SAC configured like the agent (standardised states, 5-step targets, 128 x 128)"}
# `make peers`: the agent's schedule only, RL-Zoo's settings and the agent's. The wall times in the
# results (summary.json, this 2-core machine, one torch thread, two runs at a time): a run of `td3` or
# `sac` on the agent's schedule (29,781 updates) took 7.9-8.7 minutes (seeds 0-2, commit f3b69c2), one
# on RL-Zoo's (99,600 updates) 41.5-63.2 minutes, so RL-Zoo's schedule is left out of the default set
# (`--runs td3_zoo sac_zoo` runs it). `td3_like` and `sac_like` make the same 29,781 updates on
# smaller networks (128 x 128 against [400, 300] and [256, 256]), but also standardise every
# observation and sum 5 rewards per sampled transition. Their full-size wall time is not yet
# measured; at SMOKE size, one torch thread, on this machine while other work loaded it (load
# average 3.5 on 2 cores), an update took 13-15 ms for `td3_like` against 34-37 for `td3`, and
# 34-40 ms for `sac_like` against 38-43 for `sac` (SAC's update, with its entropy coefficient's, is
# dominated by its fixed costs more than by the networks' size). The default set is 20 runs on seeds
# 0-4, of which the 6 of `td3` and `sac` on seeds 0-2 are done (`finished`): 14 to run.
DEFAULT_SET = ("td3", "sac", "td3_like", "sac_like")


SMOKE_STEPS = 48           # steps per episode at SMOKE size


def smoke(schedule: Schedule, episode_steps: int = SMOKE_STEPS) -> Schedule:
    """The schedule shrunk with the episode: the fast phase 2 episodes, the first update at the same
    fraction of the first episode (step 12 of 48 for the agent's, 24 for RL-Zoo's)."""
    fast = None if schedule.fast_episodes is None else 2
    starts = round((schedule.learning_starts + 1) * episode_steps / MAX_STEPS) - 1
    return Schedule(schedule.name + " (SMOKE size)", starts, fast, schedule.later)


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

def make_model(algo: str, venv, schedule: Schedule, seed: int, buffer_size: int | None = None,
               settings: str = "zoo"):
    """An SB3 model with the settings' hyperparameters (SETTINGS) and the schedule's first update; on
    `venv` wrapped in a VecNormalize if the settings say so (`model.get_vec_normalize_env()`)."""
    from stable_baselines3 import SAC, TD3
    from stable_baselines3.common.noise import NormalActionNoise
    from stable_baselines3.common.vec_env import VecNormalize
    params = copy.deepcopy(SETTINGS[settings](algo)[0])
    normalize = params.pop("vec_normalize", None)
    if normalize is not None:
        venv = VecNormalize(venv, **normalize)
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
    fast episodes (`fast_end`), SB3's update interval set to `later` steps (used from its next collection)."""
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.type_aliases import TrainFreq, TrainFrequencyUnit

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
                if fast and episode + 1 > schedule.fast_episodes:
                    self.fast_end = episode
                    self.model.train_freq = TrainFreq(schedule.later, TrainFrequencyUnit.STEP)
                if episode % log_every == 0 or episode == 1:
                    print(f"{label} episode {episode:3d}  mean {means[-1]:5.2f}  min {self.arms[-1].min():5.2f}  "
                          f"max {self.arms[-1].max():5.2f}  avg100 {np.mean(means[-WINDOW:]):5.2f}  "
                          f"{self.wall[-1] / 60:5.1f} min  updates {self.model._n_updates}", flush=True)
            return True

    return Recorder()


def frozen_normalization(model):
    """The model's VecNormalize (None if it has none), its statistics frozen from now on
    (`training = False`): what the exported policy and any later step of the env use."""
    normalize = model.get_vec_normalize_env()
    if normalize is not None:
        normalize.training = False
    return normalize


def standardisation(normalize):
    """VecNormalize's observation standardisation as a torch module, its statistics copied (frozen):
    (obs - mean) / sqrt(var + epsilon), clipped to ±clip_obs, in float64 as numpy computes it, then
    float32 as VecNormalize.normalize_obs returns it."""
    import torch
    if not normalize.norm_obs or isinstance(normalize.obs_rms, dict):
        raise ValueError("the exported policy standardises one Box of observations (norm_obs=True)")

    class Standardise(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.tensor(normalize.obs_rms.mean, dtype=torch.float64))
            self.register_buffer("var", torch.tensor(normalize.obs_rms.var, dtype=torch.float64))
            self.epsilon, self.clip = float(normalize.epsilon), float(normalize.clip_obs)

        def forward(self, obs):
            x = (obs.to(torch.float64) - self.mean) / torch.sqrt(self.var + self.epsilon)
            return x.clamp(-self.clip, self.clip).to(torch.float32)

    return Standardise()


def deterministic_policy(model):
    """SB3's predict(deterministic=True) as a plain torch module of raw observations, for an action
    space of [-1, 1]: TD3's actor (tanh inside), SAC's tanh of the Gaussian's mean; behind the model's
    VecNormalize standardisation, if it trained on one, as it stands now (see frozen_normalization)."""
    import torch
    from stable_baselines3 import SAC

    space = model.action_space
    if not (np.all(space.low == -1) and np.all(space.high == 1)):
        raise ValueError("the exported policy assumes actions in [-1, 1], which SB3 leaves unscaled")
    actor = copy.deepcopy(model.policy.actor).cpu().eval()
    normalize = model.get_vec_normalize_env()
    standardise = torch.nn.Identity() if normalize is None else standardisation(normalize)

    class Deterministic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.standardise, self.actor = standardise, actor

        def forward(self, obs):
            obs = self.standardise(obs)
            if isinstance(model, SAC):
                mean, _, _ = self.actor.get_action_dist_params(obs)
                return torch.tanh(mean)
            return self.actor(obs)

    return Deterministic()


def export(model, path: str) -> None:
    """The deterministic policy of raw observations (with the model's VecNormalize standardisation,
    frozen: see frozen_normalization) as a torch.export program for any number of arms, as the agent's actor.pt2."""
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
    algo, schedule_name, settings = PEERS[name]
    schedule = schedule or SCHEDULES[schedule_name]()
    hyperparameters, source = SETTINGS[settings](algo)
    venv = sb3_vec_env(episode_steps=episode_steps)
    arms = venv.num_envs
    model = make_model(algo, venv, schedule, seed, buffer_size, settings)
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
    normalize = frozen_normalization(model)          # the statistics the policy ends training with, from now on
    if normalize is not None:
        normalize.save(os.path.join(work_dir, "vec_normalize.pkl"))
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
                  schedule=asdict(schedule), settings=settings, source=source, set_hyperparameters=hyperparameters,
                  sb3=sb3_settings(model))
    Path(os.path.join(partial, "config.json")).write_text(json.dumps(config, indent=2))
    Path(os.path.join(partial, "summary.json")).write_text(json.dumps(summary, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    os.replace(partial, final)
    print(f"{name} seed {seed}: first 30 at {summary['first_episode_mean_30']}, mean 1-100 "
          f"{summary['mean_episodes_1_100']:.2f}, solved at {summary['solved_at']}, {summary['wall_seconds'] / 60:.1f} min, "
          f"{model._n_updates} updates, noise-free eval {[round(x, 2) for x in evaluation['episode_means']]}", flush=True)
    return summary


def sb3_settings(model) -> dict:
    """What the model actually ran with, read back from it (defaults included): its n-step returns
    (n_steps, and the replay buffer that computes them) and its VecNormalize, if any (None if not)."""
    keys = ("learning_rate", "buffer_size", "batch_size", "tau", "gamma", "learning_starts", "gradient_steps",
            "policy_delay", "target_policy_noise", "target_noise_clip", "ent_coef", "target_entropy", "use_sde",
            "n_steps")
    found = {k: getattr(model, k) for k in keys if hasattr(model, k)}
    found["replay_buffer"] = type(model.replay_buffer).__name__
    found["replay_buffer_n_steps"] = getattr(model.replay_buffer, "n_steps", 1)     # the n its samples sum over
    found["net_arch"] = model.policy.net_args["net_arch"] if hasattr(model.policy, "net_args") else None
    found["action_noise"] = repr(model.action_noise)
    normalize = model.get_vec_normalize_env()
    found["vec_normalize"] = None if normalize is None else {
        "norm_obs": normalize.norm_obs, "norm_reward": normalize.norm_reward, "clip_obs": float(normalize.clip_obs),
        "clip_reward": float(normalize.clip_reward), "gamma": float(normalize.gamma),
        "epsilon": float(normalize.epsilon), "observations_seen": float(normalize.obs_rms.count)}
    plain = (int, float, str, bool, list, dict, type(None))
    return {k: v if isinstance(v, plain) else repr(v) for k, v in found.items()}


# --- the set ------------------------------------------------------------------------------------

def finished(out: str, name: str, seed: int) -> bool:
    """Whether <out>/<run>/seed<k>/ holds a finished run on today's schedule and settings for it: a run on
    another schedule of the agent, or with other values read from its Config, is run again.
    A field unset (None) on one side and absent on the other is the same: a schedule saved with
    `fast_until: null` (a field Schedule had, unset: the fast episodes were the first 20 all the same)
    is today's schedule. Results saved before `settings` existed are "zoo"."""
    folder = os.path.join(out, name, f"seed{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        return False
    saved = json.loads(Path(os.path.join(folder, "config.json")).read_text())
    plain = lambda x: json.loads(json.dumps(x))
    today, schedule = plain(asdict(schedule_of(name))), saved["schedule"]
    same_schedule = all(schedule.get(k) == today.get(k) for k in {*schedule, *today})   # absent: None, unset
    algo, _, settings = PEERS[name]
    return (same_schedule and saved.get("settings", "zoo") == settings
            and saved.get("set_hyperparameters") == plain(SETTINGS[settings](algo)[0]))


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
    tail = Path(log).read_text().strip().splitlines()[-1:]
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

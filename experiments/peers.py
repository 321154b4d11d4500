"""Stable-Baselines3's TD3 and SAC trained on the same 20 arms as the agent (`make peers`).

    python -m experiments.peers                          # td3, sac, td3_like, sac_like on seeds 0-4, resumable
    python -m experiments.peers --runs td3_zoo sac_zoo   # RL-Zoo's update schedule: 40-65 minutes a run
    python -m experiments.peers --runs td3 --seeds 0 --episodes 2 --out /tmp/peers   # one short run
    SMOKE=1 python -m experiments.peers --out /tmp/peers  # seconds: 4 episodes of 48 steps

A run (PEERS) is an algorithm, an update schedule (SCHEDULES) and settings (SETTINGS: RL-Zoo's MuJoCo set,
or "like" the agent's Config, less what SB3 lacks). A run leaves results/peers/<run>/seed<k>/ as the agent's
runs leave results/<variant>/, with a noise-free evaluation of its exported policy; one whose results hold
today's schedule and settings is skipped.
"""

from __future__ import annotations

import argparse
import copy
import json
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from continuous_control.files import read_json
from continuous_control.provenance import ROOT, code_version, machine, processor
from continuous_control.results import (
    average100,
    evaluate_policy,
    replace_run,
    running_mean,
    score_files,
    score_summary,
    solved_at,
)
from reacher.physics import MAX_STEPS

SMOKE = os.environ.get("SMOKE", "0") == "1"
SEEDS, EPISODES, JOBS = (0, 1, 2, 3, 4), 100, 2
RESULTS, WORK = os.path.join(ROOT, "results", "peers"), os.path.join(ROOT, "runs", "peers")

SOURCES = {
    a: f"RL-Zoo hyperparams/{a.lower()}.yml, Mujoco Envs (HalfCheetah &mujoco-defaults); SB3 2.x defaults otherwise"
    for a in ("TD3", "SAC")
}
HYPERPARAMETERS = {
    "TD3": dict(learning_rate=1e-3, batch_size=256, policy_kwargs=dict(net_arch=[400, 300]), action_noise_std=0.1),
    "SAC": dict(),
}
LIKE_SOURCES = {
    algo: "configured like the agent: learning_rate (actor_lr, equal to critic_lr), batch_size, tau, gamma, "
    "buffer_size, "
    "n_steps (n_step) and net_arch (hidden) from continuous_control.agent.Config; VecNormalize on the observations "
    "only, clip_obs the agent's Normalizer's clip, gamma Config's; " + own
    for algo, own in {
        "TD3": "TD3's own exploration (Gaussian action noise of std 0.1, the zoo set's) and target policy smoothing "
        "(SB3 2.x defaults)",
        "SAC": "SAC's own automatic entropy tuning (SB3 2.x defaults)",
    }.items()
}


def like_hyperparameters(algo: str) -> dict:
    """The settings of a peer configured like the agent, read from its Config and Normalizer."""
    from continuous_control.agent import Config
    from continuous_control.networks import Normalizer

    cfg = Config()
    if cfg.actor_lr != cfg.critic_lr:
        raise ValueError("SB3 has one learning rate for all its networks; the agent's actor_lr and critic_lr differ")
    params = dict(
        learning_rate=cfg.actor_lr,
        batch_size=cfg.batch_size,
        tau=cfg.tau,
        gamma=cfg.gamma,
        buffer_size=cfg.buffer_size,
        n_steps=cfg.n_step,
        policy_kwargs=dict(net_arch=list(cfg.hidden)),
        vec_normalize=dict(norm_obs=True, norm_reward=False, clip_obs=float(Normalizer(1).clip), gamma=cfg.gamma),
    )
    if algo == "TD3":
        params["action_noise_std"] = HYPERPARAMETERS["TD3"]["action_noise_std"]
    return params


SETTINGS = {
    "zoo": lambda algo: (HYPERPARAMETERS[algo], SOURCES[algo]),
    "like": lambda algo: (like_hyperparameters(algo), LIKE_SOURCES[algo]),
}


@dataclass(frozen=True)
class Schedule:
    """When SB3 updates: every step after `learning_starts` transitions; after `fast_episodes`, if set, every
    `later`."""

    name: str
    learning_starts: int
    fast_episodes: int | None = None
    later: int = 1


def agents_schedule() -> Schedule:
    """The agent's own schedule, read from its Config. SB3 trains once it holds *more than*
    learning_starts transitions, the agent once it holds `warmup`: hence warmup - 1."""
    from continuous_control.agent import Config

    cfg = Config()
    if cfg.learn_every != 1:
        raise ValueError("the peers' schedule assumes the agent learns every step in its fast episodes")
    return Schedule(
        f"the agent's: every step for {cfg.learn_every_until} episodes, then every {cfg.learn_every_later}",
        cfg.warmup - 1,
        cfg.learn_every_until,
        cfg.learn_every_later,
    )


SCHEDULES = {
    "ours": agents_schedule,
    "zoo": lambda: Schedule("RL-Zoo's: every step", 10_000),
}  # learning_starts: both files' MuJoCo set
# run name: (algorithm, update schedule of SCHEDULES, settings of SETTINGS)
PEERS = {
    "td3": ("TD3", "ours", "zoo"),
    "sac": ("SAC", "ours", "zoo"),
    "td3_like": ("TD3", "ours", "like"),
    "sac_like": ("SAC", "ours", "like"),
    "td3_zoo": ("TD3", "zoo", "zoo"),
    "sac_zoo": ("SAC", "zoo", "zoo"),
}
LABELS = {
    algo.lower() + suffix: f"SB3 {algo}{label}"
    for suffix, label in (
        ("", ", the agent's update schedule"),
        ("_zoo", ", RL-Zoo's schedule (an update every step)"),
        ("_like", " configured like the agent (standardised states, 5-step targets, 128 x 128)"),
    )
    for algo in ("TD3", "SAC")
}
DEFAULT_SET = ("td3", "sac", "td3_like", "sac_like")
SMOKE_STEPS = 48  # steps per episode at SMOKE size


def smoke(schedule: Schedule) -> Schedule:
    """The schedule shrunk with the episode: 2 fast episodes, the first update as far into the first."""
    fast = None if schedule.fast_episodes is None else 2
    starts = round((schedule.learning_starts + 1) * SMOKE_STEPS / MAX_STEPS) - 1
    return Schedule(schedule.name + " (SMOKE size)", starts, fast, schedule.later)


def expected_updates(
    schedule: Schedule, episodes: int, episode_steps: int, arms: int, fast_episodes: int | None = None
) -> int:
    """How many updates SB3 makes on this schedule (fast episodes: `fast_episodes`, or the schedule's): one per
    chunk of `train_freq` steps once it holds more than learning_starts transitions, a last chunk included."""
    total = episodes * episode_steps
    fast_episodes = schedule.fast_episodes if fast_episodes is None else fast_episodes
    fast = total if fast_episodes is None else min(episodes, fast_episodes) * episode_steps
    chunk_ends = np.r_[
        np.arange(1, fast + 1), fast + schedule.later * np.arange(1, math.ceil((total - fast) / schedule.later) + 1)
    ]
    return int(np.count_nonzero(chunk_ends * arms > schedule.learning_starts))


def make_model(algo: str, venv, schedule: Schedule, seed: int, buffer_size: int | None = None, settings: str = "zoo"):
    """An SB3 model with the settings' hyperparameters, on `venv` in a VecNormalize if they say so."""
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
    return {"TD3": TD3, "SAC": SAC}[algo](
        "MlpPolicy",
        venv,
        learning_starts=schedule.learning_starts,
        train_freq=1,
        gradient_steps=1,
        seed=seed,
        device="cpu",
        verbose=0,
        **params,
    )


def recorder(schedule: Schedule, label: str, log_every: int):
    """An SB3 callback: each episode's arm scores and wall time; after the fast episodes, updates every `later`."""
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
                if (
                    schedule.fast_episodes is not None
                    and self.fast_end is None
                    and episode + 1 > schedule.fast_episodes
                ):
                    self.fast_end = episode
                    self.model.train_freq = TrainFreq(schedule.later, TrainFrequencyUnit.STEP)
                if episode % log_every == 0 or episode == 1:
                    print(
                        f"{label} episode {episode:3d}  mean {means[-1]:5.2f}  min {self.arms[-1].min():5.2f}  "
                        f"max {self.arms[-1].max():5.2f}  avg100 {average100(means):5.2f}  "
                        f"{self.wall[-1] / 60:5.1f} min  updates {self.model._n_updates}",
                        flush=True,
                    )
            return True

    return Recorder()


def export(model, path: str):
    """SB3's predict(deterministic=True) as a torch.export program of raw observations for any number of arms
    (actions in [-1, 1]), behind the model's VecNormalize standardisation, if any, in float64 as numpy computes it;
    written for deployers, never read back here: the module itself is returned, for the evaluation."""
    import torch
    from stable_baselines3 import SAC

    space = model.action_space
    if not (np.all(space.low == -1) and np.all(space.high == 1)):
        raise ValueError("the exported policy assumes actions in [-1, 1], which SB3 leaves unscaled")
    normalize = model.get_vec_normalize_env()
    if normalize is not None and (not normalize.norm_obs or isinstance(normalize.obs_rms, dict)):
        raise ValueError("the exported policy standardises one Box of observations (norm_obs=True)")

    class Deterministic(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.actor = copy.deepcopy(model.policy.actor).cpu().eval()
            if normalize is not None:
                self.register_buffer("mean", torch.tensor(normalize.obs_rms.mean, dtype=torch.float64))
                self.register_buffer("var", torch.tensor(normalize.obs_rms.var, dtype=torch.float64))
                self.epsilon, self.clip = float(normalize.epsilon), float(normalize.clip_obs)

        def forward(self, obs):
            if normalize is not None:
                obs = (obs.to(torch.float64) - self.mean) / torch.sqrt(self.var + self.epsilon)
                obs = obs.clamp(-self.clip, self.clip).to(torch.float32)  # as VecNormalize returns it
            if isinstance(model, SAC):
                return torch.tanh(self.actor.get_action_dist_params(obs)[0])
            return self.actor(obs)

    example = torch.zeros(2, model.observation_space.shape[-1])
    policy = Deterministic()
    program = torch.export.export(policy, (example,), dynamic_shapes=({0: torch.export.Dim("agents", min=1)},))
    torch.export.save(program, path)
    return policy


def history(arms: np.ndarray, wall: np.ndarray) -> dict:
    """A run's history, as the agent's runs keep it, from each episode's arm scores and its wall-clock seconds."""
    means = arms.mean(1)
    avg100 = running_mean(means)
    solved = solved_at(avg100)
    return dict(mean=means, min=arms.min(1), max=arms.max(1), avg100=avg100, wall=wall, arms=arms, solved_at=solved)


def run_one(
    name: str,
    seed: int,
    out: str = RESULTS,
    work: str = WORK,
    episodes: int = EPISODES,
    episode_steps: int = MAX_STEPS,
    concurrent: int = 1,
    eval_episodes: int = 5,
    schedule: Schedule | None = None,
    buffer_size: int | None = None,
    log_every: int = 10,
) -> dict:
    """Train peer `name` on seed `seed` in this process, evaluate it, write its results folder; its summary."""
    import gymnasium
    import stable_baselines3
    import torch

    from reacher.gym import sb3_vec_env

    if name not in PEERS:
        raise ValueError(f"unknown peer {name!r}: one of {sorted(PEERS)}")
    torch.set_num_threads(1)
    started_with = code_version()  # the code that makes the run
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
    normalize = model.get_vec_normalize_env()
    if normalize is not None:
        normalize.training = False  # the statistics the policy ends training with, from now on
        normalize.save(os.path.join(work_dir, "vec_normalize.pkl"))
    policy = export(model, os.path.join(work_dir, "actor.pt2"))
    evaluation = evaluate_policy(policy, seed, eval_episodes)

    run = history(np.array(callback.arms), np.array(callback.wall))
    summary = score_summary(run)
    summary.update(
        environment=f"built-in replica through reacher.gym.ReacherVectorEnv ({arms} arms, one world, "
        f"{episode_steps} steps per episode) and reacher.sb3.GymnasiumVecEnv",
        machine=machine(),
        processor=processor(),
        commit=started_with,
        seed=seed,
        variant=name,
        concurrent_runs=concurrent,
        eval_noise_free_5=evaluation["episode_means"],
        eval_arm_means=evaluation["arm_means"],
        algorithm=algo,
        gradient_updates=int(model._n_updates),
        gradient_updates_expected=expected,
        last_fast_episode=callback.fast_end,
        stable_baselines3=stable_baselines3.__version__,
        gymnasium=gymnasium.__version__,
    )
    config = dict(
        algorithm=algo,
        seed=seed,
        episodes=episodes,
        episode_steps=episode_steps,
        arms=arms,
        schedule=asdict(schedule),
        settings=settings,
        source=source,
        set_hyperparameters=hyperparameters,
        sb3=sb3_settings(model),
    )
    files = score_files(run)
    files["config.json"], files["summary.json"] = json.dumps(config, indent=2), json.dumps(summary, indent=2)
    replace_run(os.path.join(out, name, f"seed{seed}"), files)  # checked as load_run checks it, then renamed in
    print(
        f"{name} seed {seed}: first 30 at {summary['first_episode_mean_30']}, mean 1-100 "
        f"{summary['mean_episodes_1_100']:.2f}, solved at {summary['solved_at']}, "
        f"{summary['wall_seconds'] / 60:.1f} min, "
        f"{model._n_updates} updates, noise-free eval {[round(x, 2) for x in evaluation['episode_means']]}",
        flush=True,
    )
    return summary


def sb3_settings(model) -> dict:
    """What the model actually ran with, read back from it, defaults included."""
    keys = (
        "learning_rate",
        "buffer_size",
        "batch_size",
        "tau",
        "gamma",
        "learning_starts",
        "gradient_steps",
        "policy_delay",
        "target_policy_noise",
        "target_noise_clip",
        "ent_coef",
        "target_entropy",
        "use_sde",
        "n_steps",
    )
    found = {k: getattr(model, k) for k in keys if hasattr(model, k)}
    found["replay_buffer"] = type(model.replay_buffer).__name__
    found["replay_buffer_n_steps"] = getattr(model.replay_buffer, "n_steps", 1)  # the n its samples sum over
    found["net_arch"] = model.policy.net_args["net_arch"] if hasattr(model.policy, "net_args") else None
    found["action_noise"] = repr(model.action_noise)
    normalize = model.get_vec_normalize_env()
    found["vec_normalize"] = (
        None
        if normalize is None
        else {
            "norm_obs": normalize.norm_obs,
            "norm_reward": normalize.norm_reward,
            "clip_obs": float(normalize.clip_obs),
            "clip_reward": float(normalize.clip_reward),
            "gamma": float(normalize.gamma),
            "epsilon": float(normalize.epsilon),
            "observations_seen": float(normalize.obs_rms.count),
        }
    )
    plain = (int, float, str, bool, list, dict, type(None))
    return {k: v if isinstance(v, plain) else repr(v) for k, v in found.items()}


def finished(out: str, name: str, seed: int) -> bool:
    """Whether <out>/<run>/seed<k>/ holds a finished run on today's schedule and settings. A schedule
    field absent on one side and None on the other is the same; results without `settings` are "zoo"."""
    folder = os.path.join(out, name, f"seed{seed}")
    if not os.path.exists(os.path.join(folder, "summary.json")):
        return False
    saved = read_json(os.path.join(folder, "config.json"))
    plain = lambda x: json.loads(json.dumps(x))
    today, schedule = plain(asdict(schedule_of(name))), saved["schedule"]
    same_schedule = all(schedule.get(k) == today.get(k) for k in {*schedule, *today})  # absent: None, unset
    algo, _, settings = PEERS[name]
    return (
        same_schedule
        and saved.get("settings", "zoo") == settings
        and saved.get("set_hyperparameters") == plain(SETTINGS[settings](algo)[0])
    )


def schedule_of(name: str) -> Schedule:
    """The schedule a run of `name` trains on: its algorithm's, shrunk at SMOKE size."""
    schedule = SCHEDULES[PEERS[name][1]]()
    return smoke(schedule) if SMOKE else schedule


def child(argv: list, name: str, log: str) -> int:
    """`python -m *argv` in a child process, its output appended to `log`; a line as it starts and one as it ends."""
    os.makedirs(os.path.dirname(log), exist_ok=True)
    say = lambda text: (sys.stdout.write(text + "\n"), sys.stdout.flush())  # one write a line: runs print at once
    say(f"started {name} (log: {log})")
    with open(log, "a") as f:
        code = subprocess.run([sys.executable, "-m", *argv], stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    tail = Path(log).read_text().strip().splitlines()[-1:]
    say(f"finished {name} (exit {code}): {tail[0] if tail else ''}")
    return code


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
        size = (
            dict(
                episode_steps=SMOKE_STEPS, eval_episodes=1, buffer_size=20_000, log_every=1, schedule=schedule_of(name)
            )
            if SMOKE
            else {}
        )
        return run_one(name, seed, args.out, args.work, args.episodes, concurrent=args.jobs, **size)
    todo = [(n, s) for s in args.seeds for n in args.runs if not finished(args.out, n, s)]
    print(
        f"{len(todo)} runs to do{' (SMOKE size)' if SMOKE else ''}, {args.jobs} at a time: "
        + ", ".join(f"{n}/seed{s}" for n, s in todo),
        flush=True,
    )
    argv = lambda name, seed: [
        "experiments.peers",
        "--one",
        name,
        str(seed),
        "--episodes",
        str(args.episodes),
        "--jobs",
        str(args.jobs),
        "--out",
        args.out,
        "--work",
        args.work,
    ]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        list(
            pool.map(
                lambda run: child(
                    argv(*run), f"{run[0]} seed {run[1]}", os.path.join(args.work, f"{run[0]}-seed{run[1]}.log")
                ),
                todo,
            )
        )


if __name__ == "__main__":
    main()

"""Stable-Baselines3 peers (experiments/peers.py) at SMOKE size."""

import json
import os
import re
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from continuous_control.files import MANIFEST, FileRefused
from continuous_control.provenance import ROOT
from continuous_control.results import load_run
from experiments import peers, runs

FULL = os.path.join(ROOT, "results", "full", "seed0")


# --- the update schedule -----------------------------------------------------------------------


def agents_update_count(episodes=100, steps=1001, arms=20, warmup=5000, fast=20, later=8) -> int:
    """The agent's rule (continuous_control.agent.Agent.step), step by step: learn when the replay
    holds `warmup` transitions and the global step count is a multiple of the episode's interval."""
    count = 0
    for step in range(1, episodes * steps + 1):
        every = 1 if (step - 1) // steps + 1 <= fast else later
        count += arms * step >= warmup and step % every == 0
    return count


def test_the_agents_schedule_makes_as_many_updates_as_the_agent():
    ours = peers.agents_schedule()
    assert peers.expected_updates(ours, 100, 1001, 20) == agents_update_count() == 29_781
    zoo = peers.SCHEDULES["zoo"]()
    assert peers.expected_updates(zoo, 100, 1001, 20) == 100 * 1001 - 500  # from step 501 on, every step


def test_a_run_on_another_schedule_is_not_finished(tmp_path):
    """`make peers` skips a run only when its results hold today's schedule and settings."""
    from dataclasses import asdict

    for name, seed in (("td3", 0), ("td3_zoo", 0), ("sac_like", 3)):
        folder = tmp_path / name / f"seed{seed}"
        folder.mkdir(parents=True)
        assert not peers.finished(str(tmp_path), name, seed)
        algo, _, settings = peers.PEERS[name]
        config = {
            "schedule": asdict(peers.schedule_of(name)),
            "settings": settings,
            "set_hyperparameters": peers.SETTINGS[settings](algo)[0],
        }
        write = lambda c, folder=folder: (folder / "config.json").write_text(json.dumps(c))
        (folder / "summary.json").write_text("{}")
        write(config)
        assert peers.finished(str(tmp_path), name, seed)
        write({**config, "schedule": {**config["schedule"], "later": 4}})
        assert not peers.finished(str(tmp_path), name, seed)
        write({**config, "set_hyperparameters": {**config["set_hyperparameters"], "batch_size": 128}})
        assert not peers.finished(str(tmp_path), name, seed)
        write({**config, "settings": "like" if settings == "zoo" else "zoo"})
        assert not peers.finished(str(tmp_path), name, seed)


def test_the_saved_td3_and_sac_results_are_still_finished(tmp_path, monkeypatch):
    """A config.json as `make peers` wrote it for td3 before the settings existed (Schedule had
    `fast_until`, unset; no "settings" key) holds today's run: `make peers` does not run it again."""
    monkeypatch.setattr(peers, "SMOKE", False)  # today's full-size schedule, whatever the shell says
    old = {
        "algorithm": "TD3",
        "seed": 0,
        "episodes": 100,
        "episode_steps": 1001,
        "arms": 20,
        "schedule": {
            "name": "the agent's: every step for 20 episodes, then every 8",
            "learning_starts": 4999,
            "fast_episodes": 20,
            "later": 8,
            "fast_until": None,
        },
        "source": peers.SOURCES["TD3"],
        "set_hyperparameters": {
            "learning_rate": 0.001,
            "batch_size": 256,
            "policy_kwargs": {"net_arch": [400, 300]},
            "action_noise_std": 0.1,
        },
    }
    folder = tmp_path / "td3" / "seed0"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text(json.dumps({"machine": "x86_64 (Chip A), 2 cores, torch threads 1"}))
    (folder / "config.json").write_text(json.dumps(old))
    assert peers.finished(str(tmp_path), "td3", 0)
    old["schedule"]["fast_until"] = 37.0  # fast episodes that ended at a score: another run
    (folder / "config.json").write_text(json.dumps(old))
    assert not peers.finished(str(tmp_path), "td3", 0)
    for name in ("td3", "sac", "td3_zoo", "sac_zoo"):  # the project's own results, where present
        for seed in (0, 1, 2):
            summary = os.path.join(peers.RESULTS, name, f"seed{seed}", "summary.json")
            if os.path.exists(summary):
                assert peers.finished(peers.RESULTS, name, seed), (name, seed)


def test_each_peer_is_an_algorithm_a_schedule_and_settings():
    assert set(peers.DEFAULT_SET) == {"td3", "sac", "td3_like", "sac_like"} and len(peers.SEEDS) >= 5
    for name, (algo, schedule, settings) in peers.PEERS.items():
        assert algo in ("TD3", "SAC") and schedule in peers.SCHEDULES and settings in peers.SETTINGS
        assert name in peers.LABELS
        hyperparameters, source = peers.SETTINGS[settings](algo)
        assert isinstance(hyperparameters, dict) and source
    assert peers.PEERS["td3_like"] == ("TD3", "ours", "like") and peers.PEERS["sac_like"] == ("SAC", "ours", "like")


def test_the_like_settings_are_read_from_the_agents_config(monkeypatch):
    """Every value the agent has comes from its Config: change the Config, the settings follow."""
    import dataclasses

    from continuous_control import agent

    cfg = agent.Config()
    td3 = peers.like_hyperparameters("TD3")
    assert td3 == dict(
        learning_rate=cfg.actor_lr,
        batch_size=cfg.batch_size,
        tau=cfg.tau,
        gamma=cfg.gamma,
        buffer_size=cfg.buffer_size,
        n_steps=cfg.n_step,
        policy_kwargs=dict(net_arch=list(cfg.hidden)),
        vec_normalize=dict(norm_obs=True, norm_reward=False, clip_obs=5.0, gamma=cfg.gamma),
        action_noise_std=0.1,
    )
    assert (cfg.n_step, list(cfg.hidden), cfg.actor_lr, cfg.critic_lr, cfg.batch_size, cfg.tau) == (
        5,
        [128, 128],
        1e-3,
        1e-3,
        256,
        5e-3,
    )
    sac = peers.like_hyperparameters("SAC")
    assert "action_noise_std" not in sac and {**sac, "action_noise_std": 0.1} == td3
    other = lambda: dataclasses.replace(cfg, hidden=(64, 32), n_step=3, batch_size=128, actor_lr=3e-4, critic_lr=3e-4)
    monkeypatch.setattr(agent, "Config", other)
    changed = peers.like_hyperparameters("SAC")
    assert (
        changed["policy_kwargs"]["net_arch"],
        changed["n_steps"],
        changed["batch_size"],
        changed["learning_rate"],
    ) == ([64, 32], 3, 128, 3e-4)
    monkeypatch.setattr(agent, "Config", lambda: dataclasses.replace(cfg, critic_lr=3e-4))
    with pytest.raises(ValueError, match="one learning rate"):
        peers.like_hyperparameters("TD3")


def test_a_last_chunk_past_the_final_episode_is_counted():
    schedule = peers.Schedule("x", 0, fast_episodes=1, later=8)
    # 10 fast steps, then 10 more collected in chunks of 8: two chunks, the second runs 6 steps over
    assert peers.expected_updates(schedule, 2, 10, 1) == 10 + 2


# --- one run at SMOKE size ---------------------------------------------------------------------


@pytest.mark.parametrize("name", ["td3", "sac_zoo", "td3_like"])
def test_a_smoke_run_leaves_a_results_folder_like_the_agents(tmp_path, name):
    schedule = peers.smoke(peers.SCHEDULES[peers.PEERS[name][1]]())
    summary = peers.run_one(
        name,
        0,
        out=str(tmp_path / "res"),
        work=str(tmp_path / "work"),
        episodes=4,
        episode_steps=peers.SMOKE_STEPS,
        eval_episodes=1,
        schedule=schedule,
        buffer_size=5_000,
        log_every=100,
    )
    folder = tmp_path / "res" / name / "seed0"
    assert sorted(os.listdir(tmp_path / "res" / name)) == ["seed0"], "no partial folder left behind"
    written = ["arm_scores.csv", "config.json", "scores.csv", "summary.json", MANIFEST]
    assert sorted(os.listdir(folder)) == sorted(written)
    if os.path.exists(FULL):
        header = lambda path: Path(path).read_text().splitlines()[0]
        assert header(folder / "scores.csv") == header(os.path.join(FULL, "scores.csv"))
        # what every run's summary holds; an ablation's variant definition and an old run's note aside
        agents = set(json.loads(Path(os.path.join(FULL, "summary.json")).read_text()))
        assert agents - {"changes", "results_version", "commit_note"} <= set(summary)
    run = load_run(str(folder))
    assert run["arms"].shape == (4, 20) and len(run["scores"]["mean"]) == 4
    np.testing.assert_allclose(run["scores"]["mean"], run["arms"].mean(1), atol=0.01)
    assert len(summary["eval_arm_means"]) == 20 and len(summary["eval_noise_free_5"]) == 1
    assert runs.measure(str(folder))["minutes"] == pytest.approx(summary["wall_seconds"] / 60)
    every_step = peers.expected_updates(peers.Schedule("every step", schedule.learning_starts), 4, 48, 20)
    assert summary["gradient_updates"] == summary["gradient_updates_expected"]
    if name in ("td3", "td3_like"):  # the switch to every 8th step after 2 episodes took effect (5-step targets or not)
        assert summary["gradient_updates"] == (96 - 12 + 1) + 96 // 8 < every_step
    else:
        assert summary["gradient_updates"] == every_step == 4 * 48 - 24 + 1
    config = json.loads(Path(folder / "config.json").read_text())
    assert config["sb3"]["batch_size"] == 256 and config["settings"] == peers.PEERS[name][2]
    if name != "td3_like":
        assert config["source"].startswith("RL-Zoo")
        assert config["sb3"]["n_steps"] == 1 and config["sb3"]["vec_normalize"] is None
        assert config["sb3"]["replay_buffer"] == "ReplayBuffer" and config["sb3"]["replay_buffer_n_steps"] == 1
        assert config["sb3"]["net_arch"] == ([400, 300] if name.startswith("td3") else [256, 256])
        return
    # configured like the agent, as read back from the model: VecNormalize, 5-step returns, 128 x 128
    assert config["source"].startswith("configured like the agent")
    sb3 = config["sb3"]
    assert sb3["n_steps"] == sb3["replay_buffer_n_steps"] == 5 and sb3["replay_buffer"] == "NStepReplayBuffer"
    assert sb3["net_arch"] == [128, 128]
    assert (sb3["learning_rate"], sb3["tau"], sb3["gamma"], sb3["learning_starts"]) == (
        1e-3,
        5e-3,
        0.99,
        schedule.learning_starts,
    )
    assert sb3["buffer_size"] == 5_000 and config["set_hyperparameters"]["buffer_size"] == 1_000_000
    normalize = sb3["vec_normalize"]
    assert normalize["norm_obs"] is True and normalize["norm_reward"] is False
    assert normalize["clip_obs"] == 5.0 and normalize["gamma"] == 0.99 and normalize["epsilon"] == 1e-8
    assert normalize["observations_seen"] == pytest.approx(
        (4 * 48 + 1) * 20, abs=1
    )  # every step's 20 and the first reset's
    assert "NormalActionNoise" in sb3["action_noise"] and sb3["policy_delay"] == 2
    # the exported policy is the saved model behind the saved (frozen) statistics
    from stable_baselines3 import TD3
    from stable_baselines3.common.vec_env import VecNormalize

    from reacher.gym import sb3_vec_env

    work = tmp_path / "work" / name / "seed0"
    assert sorted(os.listdir(work)) == ["actor.pt2", "model.zip", "vec_normalize.pkl"]
    raw_env = sb3_vec_env(episode_steps=peers.SMOKE_STEPS)
    normalize = VecNormalize.load(str(work / "vec_normalize.pkl"), raw_env)
    assert normalize.obs_rms.count == pytest.approx(sb3["vec_normalize"]["observations_seen"])
    raw = raw_env.reset()
    for _ in range(5):
        raw, *_ = raw_env.step(np.random.default_rng(0).uniform(-1, 1, (20, 4)))
    with warnings.catch_warnings():  # SB3 warns on load that n_steps is ignored: the saved buffer kwargs hold it
        warnings.filterwarnings("ignore", message="`n_steps=5` is ignored")
        model = TD3.load(str(work / "model.zip"), device="cpu")
    exported = torch.export.load(str(work / "actor.pt2")).module()(torch.as_tensor(raw)).detach().numpy()
    np.testing.assert_allclose(exported, model.predict(normalize.normalize_obs(raw), deterministic=True)[0], atol=1e-6)


def test_a_link_planted_at_a_peers_results_folder_is_refused_by_name_and_never_followed(tmp_path):
    """The run's folder is written by results.replace_run: a symbolic link there is named, and what it points to
    keeps its files (the writer before it failed with a bare NotADirectoryError after training)."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("mine\n")
    (tmp_path / "res" / "td3").mkdir(parents=True)
    (tmp_path / "res" / "td3" / "seed0").symlink_to(victim)
    schedule = peers.smoke(peers.SCHEDULES[peers.PEERS["td3"][1]]())
    with pytest.raises(FileRefused, match=r"td3/seed0 is a symbolic link"):
        peers.run_one(
            "td3",
            0,
            out=str(tmp_path / "res"),
            work=str(tmp_path / "work"),
            episodes=4,
            episode_steps=peers.SMOKE_STEPS,
            eval_episodes=1,
            schedule=schedule,
            buffer_size=5_000,
            log_every=100,
        )
    assert sorted(os.listdir(victim)) == ["keep.txt"] and (victim / "keep.txt").read_text() == "mine\n"


def test_the_peers_fast_episodes_end_on_the_agents_schedule(tmp_path):
    """With one fast episode, the interval switches after episode 1, and the update count follows."""
    import dataclasses

    schedule = dataclasses.replace(peers.smoke(peers.agents_schedule()), fast_episodes=1)
    summary = peers.run_one(
        "td3",
        0,
        out=str(tmp_path / "res"),
        work=str(tmp_path / "work"),
        episodes=4,
        episode_steps=peers.SMOKE_STEPS,
        eval_episodes=1,
        schedule=schedule,
        buffer_size=5_000,
        log_every=100,
    )
    assert summary["last_fast_episode"] == 1
    assert summary["gradient_updates"] == peers.expected_updates(schedule, 4, peers.SMOKE_STEPS, 20)
    two_fast = dataclasses.replace(schedule, fast_episodes=2)
    assert summary["gradient_updates"] < peers.expected_updates(two_fast, 4, peers.SMOKE_STEPS, 20)


@pytest.mark.parametrize("algo", ["TD3", "SAC"])
def test_the_exported_policy_is_sb3s_deterministic_prediction(tmp_path, algo):
    from reacher.gym import sb3_vec_env

    venv = sb3_vec_env(episode_steps=5)
    model = peers.make_model(algo, venv, peers.Schedule("x", 100), seed=0, buffer_size=1000)
    model.learn(total_timesteps=200)  # a few updates, so the weights are not the initial ones
    path = str(tmp_path / "actor.pt2")
    peers.export(model, path)
    obs = venv.reset()
    exported = torch.export.load(path).module()(torch.as_tensor(obs)).detach().numpy()
    predicted, _ = model.predict(obs, deterministic=True)
    np.testing.assert_allclose(exported, predicted, atol=1e-6)
    assert not np.allclose(exported, model.predict(obs, deterministic=False)[0]) or algo == "TD3"


@pytest.mark.parametrize("algo", ["TD3", "SAC"])
def test_the_exported_policy_of_a_peer_like_the_agent_plays_raw_observations_as_trained(tmp_path, algo):
    """At SMOKE size: the exported policy on raw observations is SB3's deterministic prediction on
    the observations VecNormalize standardised with the statistics training ended with, which stay
    frozen while the env steps on (evaluation)."""
    from reacher.gym import sb3_vec_env

    venv = sb3_vec_env(episode_steps=peers.SMOKE_STEPS)
    schedule = peers.smoke(peers.agents_schedule())
    model = peers.make_model(algo, venv, schedule, seed=0, buffer_size=5_000, settings="like")
    normalize = model.get_vec_normalize_env()
    assert normalize is not None and model.get_env() is normalize and model.n_steps == 5
    model.learn(total_timesteps=peers.SMOKE_STEPS * 20)  # one episode: updates from step 12 on
    assert model._n_updates == peers.expected_updates(schedule, 1, peers.SMOKE_STEPS, 20)
    normalize.training = False  # as run_one freezes it after training
    mean, var, count = normalize.obs_rms.mean.copy(), normalize.obs_rms.var.copy(), normalize.obs_rms.count
    assert not np.allclose(var, 1.0) and not np.allclose(mean, 0.0)  # statistics that matter
    path = str(tmp_path / "actor.pt2")
    peers.export(model, path)
    policy = torch.export.load(path).module()
    rng = np.random.default_rng(1)
    normalize.reset()
    for _ in range(7):  # evaluation: the env steps on, the statistics do not move
        normalize.step(rng.uniform(-1, 1, (20, 4)))
        raw = normalize.get_original_obs()
        exported = policy(torch.as_tensor(raw)).detach().numpy()
        predicted, _ = model.predict(normalize.normalize_obs(raw), deterministic=True)
        np.testing.assert_allclose(exported, predicted, atol=1e-6)
    assert normalize.obs_rms.count == count and np.array_equal(normalize.obs_rms.mean, mean)
    assert np.array_equal(normalize.obs_rms.var, var)
    assert not np.allclose(exported, model.predict(raw, deterministic=True)[0], atol=1e-3)  # standardising matters
    assert policy(torch.as_tensor(raw[:1])).shape == (1, 4)  # any number of arms


def test_make_peers_at_smoke_size_runs_and_then_skips_what_is_done(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "experiments.peers",
        "--runs",
        "td3",
        "--seeds",
        "0",
        "--jobs",
        "1",
        "--out",
        str(tmp_path / "res"),
        "--work",
        str(tmp_path / "work"),
    ]
    env = {**os.environ, "SMOKE": "1"}
    first = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    todo = lambda out: int(re.search(r"(\d+) runs to do", out).group(1))
    assert todo(first.stdout) == 1 and re.findall(r"td3 seed 0 \(exit (\d+)\)", first.stdout) == ["0"]
    assert json.loads(Path(tmp_path / "res" / "td3" / "seed0" / "summary.json").read_text())["episodes"] == 4
    assert (tmp_path / "work" / "td3" / "seed0" / "actor.pt2").exists()
    again = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and todo(again.stdout) == 0
    assert "td3 seed 0" not in again.stdout  # nothing launched again


def test_an_unknown_peer_is_refused():
    with pytest.raises(ValueError, match="unknown peer"):
        peers.run_one("ppo", 0)

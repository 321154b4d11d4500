"""Training checkpoints atomically as it goes, resumes to the same scores, starts afresh unless
asked to resume, and is the same run from the notebook as from experiments/run.py."""

import contextlib
import errno
import json
import os
import platform
import shutil
import subprocess
import sys
import types

import numpy as np
import pytest
import safetensors.torch
import torch

from continuous_control import checkpoints
from continuous_control.agent import Actor, Agent, Config, NoisyActor, train
from continuous_control.playback import load_networks, load_policy
from continuous_control.training import PROGRESS
from experiments.run import run_one
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32))


class InterruptAt:
    """The built-in Reacher, interrupted (as by Ctrl-C) at a given step."""

    def __init__(self, env, step):
        self.env, self.left = env, step

    def step(self, actions):
        self.left -= 1
        if self.left < 0:
            raise KeyboardInterrupt
        return self.env.step(actions)

    def __getattr__(self, name):
        return getattr(self.env, name)


def run(run_dir, episodes=2, env=None, resume=False, **changes):
    env = env or ReacherEnvironment(seed=0, verbose=False)
    return train(
        Config(**{**SMALL, **changes}), env, str(run_dir), episodes, resume=resume, live=False, checkpoint_every=1
    )


def stepped_env():
    """The built-in Reacher after what the notebook does before training: a random agent, a check of the done step."""
    env = ReacherEnvironment(seed=0, verbose=False)
    env.reset()
    for _ in range(1500):
        env.step(np.clip(np.random.default_rng(1).standard_normal((20, 4)), -1, 1))
    return env


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory):
    """A 3-episode run as the notebook makes it (on an environment already stepped), checkpointed after each
    episode: its folder and history. Tests that change a run work on a copy (`finished`)."""
    folder = tmp_path_factory.mktemp("reference")
    return folder, run(folder, episodes=3, env=stepped_env())


@pytest.fixture
def reference(reference_run):
    return reference_run[1]


@pytest.fixture
def finished(reference_run, tmp_path):
    """A copy of the reference run's folder: a finished 3-episode run with its checkpoint."""
    shutil.copytree(reference_run[0], tmp_path / "run")
    return tmp_path / "run"


def test_the_fast_episodes_end_on_schedule_and_a_resumed_run_keeps_it(tmp_path, capsys):
    """With learn_every_until=1 only episode 1 learns every step; a run resumed in episode 2 (from episode
    1's checkpoint, the fast episodes' end) learns on the same steps and repeats the whole run."""
    whole = run(tmp_path / "whole", 2, learn_every_until=1)
    updates = [d["updates"] for d in whole["diagnostics"]]
    later = Config().learn_every_later
    # in episode 2, an update at each step with steps % later == 0
    assert updates[0] > 900 and updates[1] == 2 * 1001 // later - 1001 // later
    with pytest.raises(KeyboardInterrupt):  # halfway through episode 2
        run(tmp_path / "resumed", 2, InterruptAt(ReacherEnvironment(seed=0, verbose=False), 1500), learn_every_until=1)
    resumed = run(tmp_path / "resumed", 2, resume=True, learn_every_until=1)
    assert "Resuming after episode 1" in capsys.readouterr().out
    assert resumed["diagnostics"] == whole["diagnostics"] and resumed["arms"] == whole["arms"]


def test_by_default_the_second_episode_learns_every_step(reference):
    assert Config().learn_every_until >= 2 and reference["diagnostics"][1]["updates"] == 1001


def test_an_interrupted_run_resumes_from_its_last_written_checkpoint_to_the_same_scores(
    reference, tmp_path, monkeypatch, capsys
):
    """A checkpoint write that fails (here: at the rename that completes it, after episode 2) keeps the
    previous checkpoint whole and leaves no temporary file; the run, interrupted (as by Ctrl-C) halfway through
    episode 3, resumes from episode 1's checkpoint and replays episodes 2-3 exactly: scores and diagnostics."""
    real_replace, calls = os.replace, []

    def failing(src, dst):
        calls.extend([dst] if str(dst).endswith(checkpoints.FILE) else [])  # the checkpoint's renames
        if len(calls) == 2 and calls[-1] == dst:  # the checkpoint after episode 2
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(checkpoints.os, "replace", failing)
    with pytest.raises(KeyboardInterrupt):  # halfway through episode 3
        run(tmp_path, 3, InterruptAt(ReacherEnvironment(seed=0, verbose=False), 2500))
    checkpoints.wait_for_checkpoint()
    monkeypatch.undo()
    assert str(tmp_path / "resume" / checkpoints.FILE) in capsys.readouterr().err
    assert sorted(os.listdir(tmp_path / "resume")) == sorted([checkpoints.FILE, PROGRESS])
    resumed = run(tmp_path, 3, resume=True)
    assert "Resuming after episode 1" in capsys.readouterr().out
    assert resumed["arms"] == reference["arms"] and resumed["diagnostics"] == reference["diagnostics"]


def test_a_checkpoint_written_in_the_background_holds_the_state_when_it_was_saved(tmp_path, monkeypatch):
    """Training goes on while the file is written, and changes the replay and the weights in
    place: the background checkpoint must still be the one a plain save makes at that moment.
    The writer is held until training has moved on, so the test does not depend on who is faster."""
    import threading

    agent = Agent(Config(**{**SMALL, "warmup": 64}), 33, 4, 20)
    agent.begin_episode(1)
    rng = np.random.default_rng(0)

    def steps(n):
        for _ in range(n):
            s = rng.standard_normal((20, 33)).astype(np.float32)
            agent.step(s, agent.act(s), rng.random(20), s, False)

    steps(10)
    checkpoints.save_checkpoint(tmp_path / "plain", agent, None, 1, {"mean": [1.0]}, "code")
    moved_on, write = threading.Event(), checkpoints._write
    monkeypatch.setattr(checkpoints, "_write", lambda *args: (moved_on.wait(60), write(*args)))
    checkpoints.save_checkpoint(tmp_path / "background", agent, None, 1, {"mean": [1.0]}, "code", background=True)
    steps(10)  # priorities, flags and weights change under the writer
    moved_on.set()
    checkpoints.wait_for_checkpoint()

    def contents(kind):  # the state's text and every tensor (the header's order of fields may differ)
        data = (tmp_path / kind / checkpoints.FILE).read_bytes()
        size = int.from_bytes(data[:8], "little")
        return json.loads(data[8 : 8 + size])["__metadata__"]["state"], safetensors.torch.load(data)

    (state, plain), (same, background) = contents("plain"), contents("background")
    assert state == same and plain.keys() == background.keys()
    for name, x in plain.items():
        assert torch.equal(x, background[name]), name
    assert agent.updates > 5 and agent.memory.size > 64


def test_a_failed_background_write_is_reported_at_once_and_keeps_the_previous_checkpoint(tmp_path, monkeypatch, capsys):
    """A full disk while the writer thread writes: reported as it happens, naming the file and the
    cause, not raised into training; the previous checkpoint stays, and no temporary file."""
    agent = Agent(Config(**SMALL), 33, 4, 20)
    checkpoints.save_checkpoint(tmp_path, agent, None, 1, {"mean": [1.0]}, "code", background=True)
    checkpoints.wait_for_checkpoint()
    before = (tmp_path / checkpoints.FILE).read_bytes()

    real = checkpoints.atomic_file

    @contextlib.contextmanager
    def disk_full(path, mode="w"):
        with real(path, mode) as f:
            f.write(b"part of a checkpoint")
            raise OSError(28, "No space left on device")
        yield f

    monkeypatch.setattr(checkpoints, "atomic_file", disk_full)
    checkpoints.save_checkpoint(tmp_path, agent, None, 2, {"mean": [1.0, 2.0]}, "code", background=True)
    checkpoints.wait_for_checkpoint()  # the writer is done; nothing raised
    err = capsys.readouterr().err
    assert str(tmp_path / checkpoints.FILE) in err and f"[Errno {errno.ENOSPC}]" in err and "episode 2" in err
    assert os.listdir(tmp_path) == [checkpoints.FILE] and (tmp_path / checkpoints.FILE).read_bytes() == before


def test_a_new_run_starts_afresh_and_keeps_one_old_checkpoint(reference, finished, capsys):
    again = run(finished, 1)
    assert f"kept in {finished / 'resume.old'}" in capsys.readouterr().out
    assert again["arms"] == reference["arms"][:1] and os.path.exists(finished / "resume.old" / checkpoints.FILE)
    kept = (finished / "resume" / checkpoints.FILE).read_bytes()
    run(finished, 1, seed=1)  # the one before is kept, the one before that deleted
    assert f"kept in {finished / 'resume.old'}" in capsys.readouterr().out
    assert sorted(p.name for p in finished.iterdir() if p.name.startswith("resume")) == ["resume", "resume.old"]
    assert (finished / "resume.old" / checkpoints.FILE).read_bytes() == kept


def test_a_finished_run_is_not_trained_again_and_can_be_extended(reference, finished, capsys):
    again = run(finished, 3, resume=True)
    assert again["arms"] == reference["arms"] and "episode 3" in capsys.readouterr().out  # said, and nothing trained
    longer = run(finished, 4, resume=True)
    assert "Resuming after episode 3" in capsys.readouterr().out
    assert len(longer["mean"]) == 4 and longer["arms"][:3] == reference["arms"]


def test_a_checkpoint_of_another_configuration_or_other_code_is_refused_naming_it(finished, monkeypatch):
    """RESUME=1 with another configuration names the fields that differ, and sets nothing aside."""
    before = (finished / "resume" / checkpoints.FILE).read_bytes()
    with pytest.raises(checkpoints.CheckpointError) as refused:
        run(finished, 3, resume=True, n_step=3, tau=0.01)
    assert "n_step" in str(refused.value) and "tau" in str(refused.value) and "gamma" not in str(refused.value)
    from continuous_control import agent

    monkeypatch.setattr(agent, "code_fingerprint", lambda *train: "other code")  # the code train fingerprints
    with pytest.raises(checkpoints.CheckpointError, match="reacher/physics.py"):
        run(finished, 3, resume=True)
    assert (finished / "resume" / checkpoints.FILE).read_bytes() == before  # nothing set aside or deleted
    assert [p.name for p in finished.iterdir() if p.name.startswith("resume")] == ["resume"]


def test_the_notebooks_run_is_the_experiments_run(reference, tmp_path):
    """The notebook trains on an environment its earlier cells already stepped and reset (the reference run);
    train seeds the goals from cfg.seed's goal stream, so its scores equal experiments/run.py's for the same seed."""
    run_one("full", 0, 1, True, runs=str(tmp_path / "runs"), results=str(tmp_path / "results"), **SMALL)
    scores = np.genfromtxt(tmp_path / "results" / "full" / "seed0" / "scores.csv", delimiter=",", names=True)
    np.testing.assert_array_equal(np.round(reference["mean"][:1], 4), np.atleast_1d(scores["mean"]))
    saved = json.loads((tmp_path / "results" / "full" / "seed0" / "summary.json").read_text())
    assert len(saved["eval_noise_free_5"]) == 5 and saved["variant"] == "full"


def test_exported_policy_loads_with_torch_alone_and_is_the_target_actor(reference_run):
    """The README's three lines load the exported policy: the target actor (the moving average),
    without noise, behind the state normaliser."""
    tmp_path = reference_run[0]
    policy = torch.export.load(str(tmp_path / "actor.pt2")).module()
    states = torch.as_tensor(
        ReacherEnvironment(seed=3, verbose=False).reset()["ReacherBrain"].vector_observations, dtype=torch.float32
    )
    nets = load_networks(str(tmp_path))  # networks.safetensors: the noise-free target actor, the normaliser
    online, target = nets["actor"].state_dict(), nets["actor_target"].state_dict()
    assert not all(torch.equal(online[k], target[k]) for k in online)
    with torch.no_grad():
        torch.testing.assert_close(policy(states), nets["actor_target"](nets["normalizer"](states)))
        torch.testing.assert_close(load_policy(str(tmp_path))(states), policy(states), rtol=0, atol=0)


def test_progress_bar_ends_at_the_episode_where_the_run_stopped():
    from continuous_control.progress import Progress

    progress = Progress(200, 0, live=True)
    for _ in range(100):
        progress.update(score="1.0")
    progress.close(100)
    assert progress.bar.n == progress.bar.total == 100


@pytest.mark.parametrize(
    "exploration, per_arm, arms_differ, noise_free_differs",
    [
        ("noisynet", False, False, True),  # one noise sample: 20 arms in the same state act alike
        ("noisynet", True, True, True),  # one sample per arm
        ("ou", False, True, True),  # action noise is drawn per arm
        ("none", False, False, False),  # no noise at all: exploring is acting noise-free
    ],
)
def test_exploration_variants_act_as_configured(exploration, per_arm, arms_differ, noise_free_differs):
    from experiments.ablations import Ablation, make_agent

    agent = make_agent(Ablation(**SMALL, exploration=exploration, noise_per_arm=per_arm), 33, 4, 20)
    agent.begin_episode(1)
    same_state = np.tile(np.random.default_rng(0).normal(size=33).astype(np.float32), (20, 1))
    acting = agent.act(same_state)
    assert isinstance(agent.actor, NoisyActor) == (exploration == "noisynet") and isinstance(agent.actor, Actor)
    assert (not np.allclose(acting, acting[0])) == arms_differ
    assert (not np.allclose(agent.act(same_state, explore=False), acting)) == noise_free_differs


def test_the_agents_classes_pickle_as_an_ordinary_module():
    import pickle

    cfg = Config(n_step=3)
    assert pickle.loads(pickle.dumps(cfg)) == cfg
    actor = NoisyActor(33, 4, (8, 8), 0.5)
    clone = pickle.loads(pickle.dumps(actor))
    assert type(clone) is NoisyActor and all(torch.equal(p, q) for p, q in zip(actor.parameters(), clone.parameters()))


def test_diagnostics_record_what_learning_saw(reference_run):
    folder, history = reference_run
    cfg = Config(**SMALL)
    diag = np.genfromtxt(folder / "diagnostics.csv", delimiter=",", names=True)
    assert list(diag["episode"]) == [1, 2, 3] and diag["updates"][1] == 1001  # an update every step of episode 2
    for key in ("critic_loss", "q", "td_abs", "max_priority"):
        assert np.all(np.isfinite(diag[key])), key
    assert np.all((diag["young_share"] >= 0) & (diag["young_share"] <= 1))
    assert diag["young_share_stored"][1] == 1.0  # two episodes: every stored transition is recent
    assert diag["beta"][1] == pytest.approx(min(1.0, cfg.beta_start + (1 - cfg.beta_start) * 2002 / cfg.beta_steps))
    assert {"sigma_0", "sigma_1", "sigma_2"} <= set(diag.dtype.names)
    # episode 1 stores before it learns: most of it waits; every one replayed is marked, and the
    # waiting ones' share of the sampling probability lies between 0 and 1
    assert 0 < diag["unreplayed_share"][0] <= 1 and 0 < diag["unreplayed_mass"][1] < 1
    # a new transition's priority follows the recent TD errors down from the initial 1 (priority_window)
    assert 0 < diag["max_priority"][1] < 1.0 and history["diagnostics"][1]["updates"] == diag["updates"][1]


def test_a_finished_run_of_another_configuration_or_short_of_its_stop_rule_is_run_again(tmp_path):
    """experiments/run.py skips a run only when its summary names today's changes for its variant and
    today's RESULTS_VERSION, and that run reached the stop rule asked for: solved (when it stops on
    solving), or the episodes asked for."""
    from experiments import run as runner
    from experiments.variants import RESULTS_VERSION

    folder = tmp_path / "full" / "seed0"
    folder.mkdir(parents=True)
    (tmp_path / "runs" / "full" / "seed0").mkdir(parents=True)  # its networks, which the analyses read
    (tmp_path / "runs" / "full" / "seed0" / runner.NETWORKS).write_bytes(b"")
    finished = lambda *run: runner.finished(*run, runs=str(tmp_path / "runs"))
    summary = lambda **fields: (folder / "summary.json").write_text(
        json.dumps({"changes": {}, "results_version": RESULTS_VERSION, **fields})
    )
    assert not finished(str(tmp_path), "full", 0, 200, True)  # nothing there
    summary(episodes=100, solved_at=100)
    assert finished(str(tmp_path), "full", 0, 200, True)  # solved: done, though not 200 episodes
    summary(episodes=100, solved_at=100, processor="Another CPU 1000")
    assert finished(str(tmp_path), "full", 0, 200, True)  # made on another processor: kept
    assert not finished(str(tmp_path), "full", 0, 200, False)  # asked for 200 episodes, ran 100
    assert finished(str(tmp_path), "full", 0, 100, False)
    assert not finished(str(tmp_path), "uniform", 0, 100, False) and not finished(str(tmp_path), "full", 1, 100, False)
    summary(episodes=2, solved_at=None)
    assert not finished(str(tmp_path), "full", 0, 200, True)  # a 2-episode run is not a 200-episode one
    assert finished(str(tmp_path), "full", 0, 2, True)
    summary(episodes=2, solved_at=None, results_version=RESULTS_VERSION - 1)  # made by earlier code
    assert not finished(str(tmp_path), "full", 0, 2, True)
    summary(episodes=2, solved_at=None, changes={"n_step": 3})  # another variant's configuration
    assert not finished(str(tmp_path), "full", 0, 2, True)


def test_a_run_the_analyses_read_is_finished_only_while_runs_holds_its_networks(tmp_path):
    """`make experiments` ends with analyses of the full seeds' policies and a twin critic, read from runs/
    (results/ keeps no networks): such a run whose networks are gone is made again; any other is not."""
    from continuous_control.results import NETWORKS
    from experiments.run import TWIN_CRITIC_RUN, WEAK_ARM_RUNS, finished
    from experiments.variants import CHANGES, RESULTS_VERSION

    results, runs = tmp_path / "results", tmp_path / "runs"
    for variant, seed in (*WEAK_ARM_RUNS[:2], TWIN_CRITIC_RUN, ("uniform", 0)):
        folder = results / variant / f"seed{seed}"
        folder.mkdir(parents=True)
        (folder / "summary.json").write_text(
            json.dumps(
                {"episodes": 100, "solved_at": 100, "changes": CHANGES[variant], "results_version": RESULTS_VERSION}
            )
        )
    done = lambda variant, seed: finished(str(results), variant, seed, 100, False, runs=str(runs))
    assert done("uniform", 0) and not done(*WEAK_ARM_RUNS[0]) and not done(*TWIN_CRITIC_RUN)
    for variant, seed in (WEAK_ARM_RUNS[0], TWIN_CRITIC_RUN):
        (runs / variant / f"seed{seed}").mkdir(parents=True)
        (runs / variant / f"seed{seed}" / NETWORKS).write_bytes(b"")
    assert done(*WEAK_ARM_RUNS[0]) and done(*TWIN_CRITIC_RUN) and not done(*WEAK_ARM_RUNS[1])


@pytest.mark.parametrize(
    "option, value", [("--jobs", "0"), ("--jobs", "-1"), ("--jobs", "x"), ("--episodes", "0"), ("--episodes", "2.5")]
)
def test_experiments_run_refuses_bad_counts(option, value, capsys):
    from experiments.run import main

    with pytest.raises(SystemExit) as exit_:
        main([option, value])
    assert exit_.value.code == 2 and f"argument {option}" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_a_run_records_the_commit_of_its_code_and_whether_code_differed(tmp_path):
    """The last commit of the code, in a clean checkout or after a commit of results only; "+changes"
    once tracked code differs from it (any file that shapes training among it), but not when only results
    change; "unknown" outside git."""
    from continuous_control.provenance import SHAPING, code_version

    git = lambda *a: (
        subprocess.run(["git", "-C", str(tmp_path), *a], check=True, capture_output=True, text=True, timeout=60).stdout
    )
    assert code_version(str(tmp_path)) == "unknown"
    git("init", "-q")
    (tmp_path / "README.md").write_text("no code yet\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "readme")
    assert code_version(str(tmp_path)) == "unknown"  # no commit of code yet
    (tmp_path / "sub").mkdir()
    assert code_version(str(tmp_path / "sub")) == "unknown"  # a copy inside another repository
    for path in (*SHAPING, "results/full/seed0/scores.csv"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("1\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x")
    commit = git("rev-parse", "--short=7", "HEAD").strip()
    assert code_version(str(tmp_path)) == commit
    (tmp_path / "results/full/seed0/scores.csv").write_text("2\n")
    assert code_version(str(tmp_path)) == commit
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "results only")
    assert code_version(str(tmp_path)) == commit  # a commit of results is not new code
    for path in SHAPING:
        (tmp_path / path).write_text("2\n")
        assert code_version(str(tmp_path)) == commit + "+changes", path
        (tmp_path / path).write_text("1\n")


def test_a_run_names_its_processor_and_commit_as_fields(tmp_path, monkeypatch):
    """Runs repeat episode for episode on the same kind of processor, not always on another: the summary
    names the model (read from /proc/cpuinfo where there is one) and the commit, each a field of its own."""
    from continuous_control import provenance, results

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\nmodel name\t: Example CPU 9000\n" * 2)
    assert provenance.processor(str(cpuinfo)) == "Example CPU 9000"
    assert provenance.processor(str(tmp_path / "none")) in ("", platform.processor())
    monkeypatch.setattr(results, "processor", lambda: "Intel(R) Xeon(R) Processor, rev 2")
    monkeypatch.setattr(results, "code_version", lambda: "abc1234+changes")
    agent, history = (
        Agent(Config(**SMALL), 33, 4, 2),
        {
            "mean": [1.0],
            "min": [0.5],
            "max": [1.5],
            "avg100": [1.0],
            "wall": [2.0],
            "arms": [[0.5, 1.5]],
            "solved_at": None,
        },
    )
    summary = results.save_results(str(tmp_path / "run"), agent, history, None)
    assert summary == json.loads((tmp_path / "run" / "summary.json").read_text())
    assert summary["processor"] == "Intel(R) Xeon(R) Processor, rev 2" and summary["commit"] == "abc1234+changes"
    assert summary["machine"] == provenance.machine()


def test_the_lessons_plain_ddpg_is_the_reports_plain_variant(tmp_path):
    """`DDPGAgent` (section 3) and the report's plain DDPG (an AblationAgent: 1-step targets, alpha 0, OU action
    noise) compute the same run, bit for bit: what the lesson says of results/plain is said of this agent."""
    import safetensors.torch

    from continuous_control.agent import DDPGAgent
    from continuous_control.results import NETWORKS
    from experiments.ablations import Ablation, AblationAgent

    changes = dict(n_step=1, alpha=0.0, **SMALL)
    runs = {}
    for name, cfg, agent_class in (
        ("lesson", Config(**changes), DDPGAgent),
        ("report", Ablation(exploration="ou", **changes), AblationAgent),
    ):
        env = ReacherEnvironment(seed=0, verbose=False)
        runs[name] = train(cfg, env, str(tmp_path / name), 2, live=False, agent_class=agent_class)
        saved = safetensors.torch.load((tmp_path / name / NETWORKS).read_bytes())  # data only
        runs[name]["weights"] = {k: v for k, v in saved.items() if k.startswith("actor.")}
    lesson, report = runs["lesson"], runs["report"]
    assert lesson["diagnostics"][0]["updates"] > 400 and lesson["arms"] == report["arms"]
    assert lesson["weights"] and all(torch.equal(lesson["weights"][k], report["weights"][k]) for k in lesson["weights"])


def test_plain_ddpg_resumes_to_the_same_scores_and_its_checkpoint_is_not_the_full_agents(tmp_path, capsys):
    from continuous_control.agent import DDPGAgent

    def plain(folder, env=None, resume=False, agent_class=DDPGAgent):
        env = env or ReacherEnvironment(seed=0, verbose=False)
        cfg = Config(n_step=1, alpha=0.0, **SMALL)
        return train(cfg, env, str(folder), 2, resume=resume, live=False, checkpoint_every=1, agent_class=agent_class)

    whole = plain(tmp_path / "whole")
    with pytest.raises(KeyboardInterrupt):  # halfway through episode 2
        plain(tmp_path / "resumed", InterruptAt(ReacherEnvironment(seed=0, verbose=False), 1500))
    resumed = plain(tmp_path / "resumed", resume=True)
    assert "Resuming after episode 1" in capsys.readouterr().out
    assert resumed["arms"] == whole["arms"] and resumed["diagnostics"] == whole["diagnostics"]
    with pytest.raises(KeyboardInterrupt):
        plain(tmp_path / "other", InterruptAt(ReacherEnvironment(seed=0, verbose=False), 1500))
    with pytest.raises(checkpoints.CheckpointError, match="uniform replay"):
        plain(tmp_path / "other", resume=True, agent_class=Agent)


class Steps:
    """A made-up environment of two arms: state t at step t, rewards 1 and 2 per step; episodes of 4 steps, the
    4th reporting done and returning the start state."""

    brain_names = ["arm"]

    class Brain:
        vector_action_space_size = 2

    brains = {"arm": Brain()}

    def info(self, done=False):
        return types.SimpleNamespace(
            vector_observations=np.full((2, 3), self.t, np.float32), rewards=[1.0, 2.0], local_done=[done] * 2
        )

    def reset(self, train_mode):
        self.t = 0
        return {"arm": self.info()}

    def step(self, actions):
        self.actions, self.t = actions, (self.t + 1) % 4
        return {"arm": self.info(done=self.t == 0)}


def test_train_gives_the_agent_each_state_sends_its_actions_and_sums_every_reward(tmp_path):
    seen, env = [], Steps()

    class Spy(Agent):  # the lesson's agent, recording what train gives it
        def begin_episode(self, episode):
            seen.append(("episode", episode))
            super().begin_episode(episode)

        def step(self, states, actions, rewards, next_states, done):
            assert np.array_equal(actions, env.actions), "the actions sent to the environment are not the agent's"
            seen.append((states[0, 0], rewards.tolist(), next_states[0, 0], done))
            return super().step(states, actions, rewards, next_states, done)

    history = train(Config(buffer_size=100, batch_size=4, warmup=4), env, str(tmp_path), 2, live=False, agent_class=Spy)
    episode = [(0, [1, 2], 1, False), (1, [1, 2], 2, False), (2, [1, 2], 3, False), (3, [1, 2], 0, True)]
    assert seen == [("episode", 1), *episode, ("episode", 2), *episode] and history["mean"] == [6.0, 6.0]


def test_provenance_imports_without_torch():
    """The package's root imports nothing, so that where a run ran and the code's version are read without torch."""
    code = "import sys, continuous_control.provenance; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0

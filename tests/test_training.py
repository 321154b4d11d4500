"""Training saves checkpoints as it goes and resumes after an interruption (the notebook's code)."""
import os

import numpy as np
import pytest

from experiments.notebook import load_definitions
from reacher import ReacherEnvironment


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


@pytest.fixture(scope="module")
def ns():
    return load_definitions()


def small(ns, **kw):
    settings = dict(max_episodes=2, buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32), checkpoint_every=1)
    return ns["Config"](**{**settings, **kw})


def test_interrupted_run_resumes_where_its_checkpoint_left(ns, tmp_path, capsys):
    reference = ns["train"](small(ns), ReacherEnvironment(seed=0, verbose=False), str(tmp_path / "ref"), live=False)
    run_dir = str(tmp_path / "run")
    with pytest.raises(KeyboardInterrupt):        # halfway through episode 2
        ns["train"](small(ns), InterruptAt(ReacherEnvironment(seed=0, verbose=False), 1500), run_dir, live=False)
    capsys.readouterr()
    resumed = ns["train"](small(ns), ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Resuming after episode 1" in capsys.readouterr().out
    assert len(resumed["mean"]) == 2
    assert resumed["mean"][0] == reference["mean"][0]        # episode 1 was kept, not replayed
    assert resumed["mean"][1] == reference["mean"][1]        # and episode 2 replayed exactly: every state was saved


def test_code_fingerprint_is_the_same_in_every_process():
    """A run is resumed by a new process (a restarted kernel, the next `make run`), so the
    fingerprint must not follow Python's string hashing, which changes from process to process."""
    import subprocess
    import sys
    script = ("import types; from experiments.notebook import load_definitions; g = load_definitions(); "
              "print(g['code_fingerprint'](*[v for k, v in sorted(g.items()) if isinstance(v, (type, types.FunctionType))]))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    prints = {subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout.split()[-1] for seed in range(1, 6)}
    assert len(prints) == 1, prints


def test_worker_process_and_inline_runner_train_identically(ns, tmp_path):
    """The environment worker changes where the arms step, not what is learned: same seed, same numbers."""
    import torch
    runs = {}
    for process in (True, False):
        run_dir = str(tmp_path / f"process{process}")
        history = ns["train"](small(ns, env_process=process), ReacherEnvironment(seed=0, verbose=False), run_dir,
                              live=False)
        runs[process] = history, torch.load(os.path.join(run_dir, "actor.pt"))
    (forked, forked_actor), (inline, inline_actor) = runs[True], runs[False]
    assert [forked[k] for k in ("mean", "min", "max")] == [inline[k] for k in ("mean", "min", "max")]
    assert all(torch.equal(forked_actor[k], inline_actor[k]) for k in inline_actor)


def test_worker_errors_arrive_with_their_message(ns):
    import torch
    from reacher import UnityActionException
    agent = ns["Agent"](small(ns), 33, 4, 20)
    runner = ns["EnvRunner"](ReacherEnvironment(seed=0, verbose=False), agent.behaviour, process=True)
    try:
        assert runner.worker is not None
        runner("reset")
        with torch.no_grad():
            agent.actor_params.fill_(float("nan"))          # a diverged actor
        agent.refresh_behaviour()
        with pytest.raises(UnityActionException, match="NaN or inf"):
            runner("step")
        with pytest.raises(ValueError, match="unknown command 'teleport'"):
            runner("teleport")
        runner.worker.kill()
        with pytest.raises(RuntimeError, match="environment worker died"):
            runner("step")
    finally:
        runner.close()
    assert runner.worker is None


def test_finished_run_is_not_trained_again_and_can_be_extended(ns, tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    capsys.readouterr()
    again = ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Finished after episode 1" in capsys.readouterr().out and len(again["mean"]) == 1
    cfg.max_episodes = 2
    longer = ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "Resuming after episode 1" in capsys.readouterr().out and len(longer["mean"]) == 2


def test_other_configuration_starts_afresh(ns, tmp_path, capsys):
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    other = small(ns, n_step=3)
    other.max_episodes = 1
    ns["train"](other, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    assert "another configuration: starting afresh" in capsys.readouterr().out
    assert os.path.exists(os.path.join(run_dir, "resume.old-1", "state.pt"))      # kept aside, not deleted


def test_checkpoint_of_other_code_is_set_aside(ns, tmp_path, capsys):
    """A student who edits Agent.learn and reruns must train again, not resume the old run."""
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    edited = load_definitions()
    original = edited["Agent"].learn
    edited["Agent"].learn = lambda self: original(self)            # other code, same configuration
    capsys.readouterr()
    history = edited["train"](small(edited, max_episodes=1), ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    out = capsys.readouterr().out
    assert "was made by other code" in out and out.count("\n") >= 1 and "Finished" not in out
    assert len(history["mean"]) == 1 and os.path.exists(os.path.join(run_dir, "resume.old-1", "state.pt"))
    # The same code, loaded again (new objects), is recognised: the finished run is not trained again.
    same_dir = str(tmp_path / "same")
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), same_dir, live=False)
    capsys.readouterr()
    load_definitions()["train"](small(ns, max_episodes=1), ReacherEnvironment(seed=0, verbose=False), same_dir, live=False)
    assert "Finished after episode 1" in capsys.readouterr().out


def test_exported_actor_loads_in_three_lines(ns, tmp_path):
    """The README's three lines load the exported policy with torch alone (torch.export, .pt2):
    the target actor (the Polyak average), without noise, behind the state normaliser."""
    run_dir = str(tmp_path / "run")
    cfg = small(ns)
    cfg.max_episodes = 1
    ns["train"](cfg, ReacherEnvironment(seed=0, verbose=False), run_dir, live=False)
    import torch
    policy = torch.export.load(os.path.join(run_dir, "actor.pt2")).module()
    states = torch.as_tensor(ReacherEnvironment(seed=3, verbose=False).reset()["ReacherBrain"].vector_observations,
                             dtype=torch.float32)
    actions = policy(states)
    nets = {name: torch.load(os.path.join(run_dir, f"{name}.pt")) for name in ("actor_target", "actor", "normalizer")}
    assert not all(torch.equal(nets["actor"][k], nets["actor_target"][k]) for k in nets["actor"])
    actor = ns["Actor"](33, 4, cfg.hidden, sigma0=cfg.noisy_sigma0)
    actor.load_state_dict(nets["actor_target"])
    actor.set_noise(None)
    norm = ns["Normalizer"](33)
    norm.load_state_dict(nets["normalizer"])
    assert actions.shape == (20, 4)
    torch.testing.assert_close(actions, actor(norm(states)))


def test_progress_bar_ends_at_the_episode_where_the_run_stopped(ns):
    progress = ns["Progress"](200, 0, live=True)
    for _ in range(100):
        progress.update(score="1.0")
    progress.close(100)
    assert progress.bar.n == progress.bar.total == 100


def test_config_names_a_bad_exploration(ns):
    with pytest.raises(ValueError, match="unknown 'eps_greedy'"):
        ns["Config"](exploration="eps_greedy")
    with pytest.raises(ValueError, match="noise_per_arm needs exploration='noisynet'"):
        ns["Config"](exploration="ou", noise_per_arm=True)


@pytest.mark.parametrize("exploration, per_arm, arms_differ, noise_free_differs", [
    ("noisynet", False, False, True),     # one noise sample: 20 arms in the same state act alike
    ("noisynet", True, True, True),       # one sample per arm
    ("ou", False, True, True),            # action noise is drawn per arm
    ("none", False, False, False),        # no noise at all: exploring is acting noise-free
])
def test_exploration_variants_act_as_configured(ns, exploration, per_arm, arms_differ, noise_free_differs):
    agent = ns["Agent"](small(ns, exploration=exploration, noise_per_arm=per_arm), 33, 4, 20)
    same_state = np.tile(np.random.default_rng(0).normal(size=33).astype(np.float32), (20, 1))
    acting = agent.act(same_state)
    assert (not np.allclose(acting, acting[0])) == arms_differ
    assert (not np.allclose(agent.act(same_state, explore=False), acting)) == noise_free_differs

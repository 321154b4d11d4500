"""Faults and hostile input: nothing a user is handed is unpickled, a damaged or foreign checkpoint is
refused with a way out, a changed code base is not resumed, two runs never share a folder, and the
behaviour policy always acts with the learner's current actor."""
import io
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from continuous_control import checkpoints
from continuous_control.agent import Actor, Agent, Config, NoisyActor, train
from continuous_control.config import env_flag
from continuous_control.training import lock_folder, unlock_folder
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32))


def one_episode(run_dir, resume=False, **changes):
    return train(Config(**{**SMALL, **changes}), ReacherEnvironment(seed=0, verbose=False), str(run_dir), 1,
                 resume=resume, live=False, checkpoint_every=1)


@pytest.fixture
def saved(tmp_path):
    """A run of one episode; the path of its checkpoint."""
    one_episode(tmp_path)
    return tmp_path / "resume" / checkpoints.FILE


class Payload:
    """What a crafted checkpoint holds: unpickling it would create `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return open, (self.marker, "w")


def replace_member(path, name, blob):
    with np.load(path) as saved:
        arrays = {k: saved[k] for k in saved.files}
    if blob is None:
        del arrays[name]
    else:
        arrays[name] = np.frombuffer(blob, np.uint8)
    with open(path, "wb") as f:
        np.savez(f, **arrays)


def test_a_crafted_checkpoint_runs_no_code_and_is_refused(saved, tmp_path):
    marker = tmp_path / "pwned"
    blob = io.BytesIO()
    torch.save({"config": Payload(str(marker))}, blob)
    replace_member(saved, "state", blob.getvalue())
    with pytest.raises(checkpoints.CheckpointError, match="holds Python objects besides tensors .* refused"):
        one_episode(tmp_path, resume=True)
    assert not marker.exists()
    assert saved.exists()                                  # nothing deleted


@pytest.mark.parametrize("damage", ["truncated", "empty", "random", "crc", "missing member", "not a state"])
def test_a_damaged_checkpoint_names_the_file_and_the_ways_out(saved, tmp_path, damage):
    data = saved.read_bytes()
    if damage == "truncated":
        saved.write_bytes(data[:len(data) // 2])
    elif damage == "empty":
        saved.write_bytes(b"")
    elif damage == "random":
        saved.write_bytes(np.random.default_rng(0).bytes(4096))
    elif damage == "crc":                                  # one byte flipped inside the stored replay
        middle = bytearray(data)
        middle[len(data) // 2] ^= 0xFF
        saved.write_bytes(bytes(middle))
    elif damage == "missing member":
        replace_member(saved, "priorities", None)
    else:
        blob = io.BytesIO()
        torch.save([1, 2, 3], blob)
        replace_member(saved, "state", blob.getvalue())
    before = saved.read_bytes()
    with pytest.raises(checkpoints.CheckpointError) as error:
        one_episode(tmp_path, resume=True)
    message = str(error.value)
    assert str(saved) in message and "RESUME=0" in message and "delete" in message, message
    assert saved.read_bytes() == before                    # nothing deleted or changed


def test_a_change_to_the_physics_is_not_resumed_and_named(saved, tmp_path, monkeypatch):
    real = checkpoints.module_fingerprint
    monkeypatch.setattr(checkpoints, "module_fingerprint",
                        lambda name: real(name) + ("x" if name == "reacher.physics" else ""))
    with pytest.raises(checkpoints.CheckpointError, match=r"other code: reacher.physics changed"):
        one_episode(tmp_path, resume=True)


def test_a_module_fingerprint_follows_the_code_not_the_comments(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    source = tmp_path / "shaping_example.py"
    source.write_text("REWARD = 0.01\n\ndef step(x):\n    return x + REWARD\n")
    import shaping_example  # noqa: F401
    first = checkpoints.module_fingerprint("shaping_example")
    source.write_text("# a comment\nREWARD = 0.01   # per frame\n\n\ndef step(x):\n    return x + REWARD\n")
    assert checkpoints.module_fingerprint("shaping_example") == first
    source.write_text("REWARD = 0.02\n\ndef step(x):\n    return x + REWARD\n")
    assert checkpoints.module_fingerprint("shaping_example") != first


def test_every_module_that_shapes_a_run_is_fingerprinted():
    fingerprint = checkpoints.run_fingerprint("agent")
    assert set(checkpoints.SHAPING) <= set(fingerprint)
    assert {"reacher.physics", "reacher.physx", "continuous_control.training"} <= set(fingerprint)


def test_a_second_process_cannot_train_into_a_busy_folder(tmp_path):
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys
        from continuous_control.training import lock_folder
        lock_folder({str(tmp_path)!r})
        print("HELD", flush=True)
        sys.stdin.readline()
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        with pytest.raises(RuntimeError, match=rf"in use by another training run \(pid {holder.pid}\)"):
            lock_folder(str(tmp_path))
        with pytest.raises(RuntimeError, match="in use by another training run"):
            one_episode(tmp_path)
    finally:
        holder.communicate("\n", timeout=60)
    lock_folder(str(tmp_path))                 # free once the other process has ended
    lock_folder(str(tmp_path))                 # and the same process may take it again
    unlock_folder(str(tmp_path))


@pytest.mark.parametrize("value, expected", [("1", True), ("true", True), ("YES", True), ("0", False),
                                             ("false", False), ("no", False), ("", False), (None, False)])
def test_resume_takes_the_usual_spellings(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("RESUME", raising=False)
    else:
        monkeypatch.setenv("RESUME", value)
    assert env_flag("RESUME") is expected


def test_a_misspelt_flag_is_refused(monkeypatch):
    monkeypatch.setenv("RESUME", "ture")
    with pytest.raises(ValueError, match="RESUME='ture': expected 1, true or yes"):
        env_flag("RESUME")


def fed(agent, steps, seed=0):
    rng = np.random.default_rng(seed)
    agent.begin_episode(1)
    for _ in range(steps):
        s = rng.standard_normal((20, 33)).astype(np.float32)
        agent.step(s, agent.act(s), rng.random(20), rng.standard_normal((20, 33)).astype(np.float32), False)


@pytest.mark.parametrize("changes", [{}, {"noise_per_arm": True}, {"exploration": "ou"}, {"exploration": "gaussian"},
                                     {"exploration": "none"}, {"exploration": "ou", "n_step": 1, "alpha": 0.0}])
def test_the_behaviour_acts_with_the_learners_current_actor_in_every_mode(changes):
    agent = Agent(Config(**SMALL, **changes), 33, 4, 20)
    fed(agent, 60)
    first = agent.updates
    fed(agent, 30, seed=1)
    assert agent.updates > first > 0
    agent.behaviour.refresh()                                 # as the next step would
    behaviour, learner = agent.behaviour.actor, agent.actor
    if agent.behaviour.draws:                                 # shared NoisyNet sample: drawn from the learner
        expected = Actor(33, 4, SMALL["hidden"])
        learner.draw(agent.behaviour.noise.state, into=expected)
        pairs = zip(behaviour.parameters(), expected.parameters())
    else:                                                     # a copy of the learner's parameters
        pairs = zip(behaviour.parameters(), learner.parameters())
    for mine, theirs in pairs:
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    for mine, theirs in zip(agent.behaviour.norm.buffers(), agent.norm.buffers()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("changes", [{}, {"exploration": "ou"}])
def test_acting_without_noise_leaves_the_next_step_exploring(changes):
    agent = Agent(Config(**SMALL, **changes), 33, 4, 20)
    fed(agent, 40)
    s = np.random.default_rng(2).standard_normal((20, 33)).astype(np.float32)
    exploring = agent.act(s)
    greedy = agent.act(s, explore=False)
    assert not np.allclose(exploring, greedy)
    np.testing.assert_array_equal(agent.act(s), exploring)      # the same exploring policy as before
    mean = Actor(33, 4, SMALL["hidden"]) if isinstance(agent.actor, NoisyActor) else None
    if mean is not None:                                       # greedy is the mean weights, exactly
        agent.actor.draw(torch.zeros(agent.actor.noise_size), into=mean)
        with torch.no_grad():
            np.testing.assert_array_equal(greedy, mean(agent.norm(torch.as_tensor(s))).clamp(-1, 1).numpy())

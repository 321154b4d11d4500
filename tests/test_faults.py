"""Faults and hostile input: nothing a user is handed is unpickled, a damaged or foreign checkpoint is
refused with a way out, a changed code base is not resumed, two runs never share a folder, and the
behaviour policy always acts with the learner's current actor."""

import contextlib
import errno
import io
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import safetensors.torch
import torch

from continuous_control import checkpoints
from continuous_control.agent import Actor, Agent, Config, NoisyActor, train
from continuous_control.behaviour import ActionNoise, draw
from continuous_control.config import env_flag
from continuous_control.provenance import ROOT, SHAPING
from continuous_control.training import lock_folder, unlock_folder
from experiments.ablations import Ablation, PerArmBehaviour, make_agent
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(32, 32))


def one_episode(run_dir, resume=False, **changes):
    return train(
        Config(**{**SMALL, **changes}),
        ReacherEnvironment(seed=0, verbose=False),
        str(run_dir),
        1,
        resume=resume,
        live=False,
        checkpoint_every=1,
    )


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A run of one episode, made once."""
    run_dir = tmp_path_factory.mktemp("trained")
    one_episode(run_dir)
    return run_dir


@pytest.fixture
def saved(trained, tmp_path):
    """A copy of that run in tmp_path; the path of its checkpoint."""
    shutil.copytree(trained, tmp_path, dirs_exist_ok=True)
    return tmp_path / "resume" / checkpoints.FILE


class Payload:
    """What a crafted checkpoint holds: unpickling it would create `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (self.marker,)


def recrafted(path, tensors=None, state=None):
    """The checkpoint at `path` with its tensors replaced by `tensors(dict)` or its state text by `state(text)`,
    its SHA-256 made anew (a crafted file, not a damaged one)."""
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    text = json.loads(data[8 : 8 + size])["__metadata__"]["state"]
    arrays = safetensors.torch.load(data)
    if tensors:
        tensors(arrays)
    path.write_bytes(checkpoints.checkpoint_bytes(arrays, state(text) if state else text))


def test_a_crafted_checkpoint_runs_no_code_and_is_refused(saved, tmp_path):
    """A pickle where the checkpoint should be (an older project's format, or a crafted one): nothing in it runs."""
    marker = tmp_path / "pwned"
    blob = io.BytesIO()
    torch.save({"config": Payload(str(marker))}, blob)
    saved.write_bytes(blob.getvalue())
    with pytest.raises(checkpoints.CheckpointError, match=re.escape(str(saved)) + ".*not a safetensors file"):
        one_episode(tmp_path, resume=True)
    assert not marker.exists()
    assert saved.exists()  # nothing deleted


@pytest.mark.parametrize("damage", ["truncated", "empty", "random", "crc", "missing member", "not a state"])
def test_a_damaged_checkpoint_names_the_file_and_the_ways_out(saved, tmp_path, damage):
    data = saved.read_bytes()
    if damage == "truncated":
        saved.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        saved.write_bytes(b"")
    elif damage == "random":
        saved.write_bytes(np.random.default_rng(0).bytes(4096))
    elif damage == "crc":  # one byte flipped inside the stored replay
        middle = bytearray(data)
        middle[len(data) // 2] ^= 0xFF
        saved.write_bytes(bytes(middle))
    elif damage == "missing member":
        recrafted(saved, tensors=lambda t: t.pop("priorities"))
    else:
        recrafted(saved, state=lambda text: "[1, 2, 3]")
    before = saved.read_bytes()
    with pytest.raises(checkpoints.CheckpointError) as error:
        one_episode(tmp_path, resume=True)
    message = str(error.value)
    assert str(saved) in message and "RESUME=0" in message and "delete" in message, message
    assert saved.read_bytes() == before  # nothing deleted or changed


def test_a_change_to_any_file_that_shapes_training_is_not_resumed(saved, tmp_path, monkeypatch):
    """The fingerprint is the SHAPING files' text: a change to any of them (the physics, the agent)
    changes it, and a checkpoint made before is refused."""
    assert {
        "continuous_control/agent.py",
        "continuous_control/behaviour.py",  # acting
        "continuous_control/networks.py",  # the arrays' device and dtype
        "continuous_control/sumtree.py",  # prioritized sampling
        "reacher/physics.py",
        "reacher/physx.py",
        "continuous_control/training.py",
    } <= set(SHAPING)
    copy = tmp_path / "code"
    for path in SHAPING:
        (copy / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(os.path.join(ROOT, path), copy / path)
    today = checkpoints.code_fingerprint()
    monkeypatch.setattr(checkpoints, "ROOT", str(copy))
    assert checkpoints.code_fingerprint() == today
    for path in SHAPING:
        text = (copy / path).read_bytes()
        (copy / path).write_bytes(text + b"\n")
        assert checkpoints.code_fingerprint() != today, path
        (copy / path).write_bytes(text)
    with open(copy / "reacher" / "physics.py", "a") as f:
        f.write("\nREWARD = 0.2\n")
    with pytest.raises(checkpoints.CheckpointError, match="reacher/physics.py"):
        one_episode(tmp_path, resume=True)


def test_a_checkpoint_made_on_another_kind_of_processor_is_not_resumed(saved, tmp_path, monkeypatch):
    """A run resumes to the same scores only on the kind of processor that began it."""
    monkeypatch.setattr(checkpoints, "processor", lambda *args: "Another CPU 1000")
    with pytest.raises(checkpoints.CheckpointError, match="Another CPU 1000"):
        one_episode(tmp_path, resume=True)


def test_a_second_process_cannot_train_into_a_busy_folder(tmp_path):
    """Refused at once, naming the holder's pid, that it is a Jupyter kernel (an interrupted notebook's
    idle kernel keeps the lock), and the command that frees it."""
    kernel = tmp_path / "ipykernel_launcher.py"  # what a Jupyter kernel runs
    kernel.write_text(
        textwrap.dedent(f"""
        import sys
        from continuous_control.training import lock_folder
        lock_folder({str(tmp_path)!r})
        print("HELD", flush=True)
        sys.stdin.readline()
    """)
    )
    holder = subprocess.Popen([sys.executable, str(kernel)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "HELD"
        with pytest.raises(RuntimeError) as refused:
            lock_folder(str(tmp_path))
        message = str(refused.value)
        assert f"pid {holder.pid}" in message and f"kill {holder.pid}" in message, message
        if os.path.exists(f"/proc/{holder.pid}/cmdline"):
            assert "Jupyter kernel" in message and str(kernel) in message
        with pytest.raises(RuntimeError, match=f"kill {holder.pid}"):
            one_episode(tmp_path)
    finally:
        holder.communicate("\n", timeout=60)
    lock_folder(str(tmp_path))  # free once the other process has ended
    lock_folder(str(tmp_path))  # and the same process may take it again
    unlock_folder(str(tmp_path))


@pytest.mark.parametrize(
    "value, expected",
    [
        ("1", True),
        ("true", True),
        ("YES", True),
        ("0", False),
        ("false", False),
        ("no", False),
        ("", False),
        (None, False),
    ],
)
def test_resume_takes_the_usual_spellings(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv("RESUME", raising=False)
    else:
        monkeypatch.setenv("RESUME", value)
    assert env_flag("RESUME") is expected


def test_a_misspelt_flag_is_refused(monkeypatch):
    monkeypatch.setenv("RESUME", "ture")
    with pytest.raises(ValueError, match="RESUME='ture'"):
        env_flag("RESUME")


def fed(agent, steps, seed=0):
    rng = np.random.default_rng(seed)
    agent.begin_episode(1)
    for _ in range(steps):
        s = rng.standard_normal((20, 33)).astype(np.float32)
        agent.step(s, agent.act(s), rng.random(20), rng.standard_normal((20, 33)).astype(np.float32), False)


@pytest.mark.parametrize(
    "changes",
    [
        {},
        {"noise_per_arm": True},
        {"exploration": "ou"},
        {"exploration": "none"},
        {"exploration": "ou", "n_step": 1, "alpha": 0.0},
        {"clipped_double_q": True},
    ],
)
def test_the_behaviour_acts_with_the_learners_current_actor_in_every_mode(changes):
    agent = make_agent(Ablation(**SMALL, **changes), 33, 4, 20)
    fed(agent, 60)
    first = agent.updates
    fed(agent, 30, seed=1)
    assert agent.updates > first > 0
    agent.behaviour.refresh()  # as the next step would
    behaviour, learner = agent.behaviour.actor, agent.actor
    if not isinstance(agent.behaviour, (ActionNoise, PerArmBehaviour)):  # shared NoisyNet sample: drawn
        expected = Actor(33, 4, SMALL["hidden"])
        draw(learner, agent.behaviour.noise.state, into=expected)
        pairs = zip(behaviour.parameters(), expected.parameters())
    else:  # a copy of the learner's parameters
        pairs = zip(behaviour.parameters(), learner.parameters())
    for mine, theirs in pairs:
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    for mine, theirs in zip(agent.behaviour.norm.buffers(), agent.norm.buffers()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("changes", [{}, {"exploration": "ou"}])
def test_acting_without_noise_leaves_the_next_step_exploring(changes):
    agent = make_agent(Ablation(**SMALL, **changes), 33, 4, 20)
    fed(agent, 40)
    s = np.random.default_rng(2).standard_normal((20, 33)).astype(np.float32)
    exploring = agent.act(s)
    greedy = agent.act(s, explore=False)
    assert not np.allclose(exploring, greedy)
    np.testing.assert_array_equal(agent.act(s), exploring)  # the same exploring policy as before
    mean = Actor(33, 4, SMALL["hidden"]) if isinstance(agent.actor, NoisyActor) else None
    if mean is not None:  # greedy is the mean weights, exactly
        draw(agent.actor, torch.zeros(agent.actor.noise_size), into=mean)
        with torch.no_grad():
            np.testing.assert_array_equal(greedy, mean(agent.norm(torch.as_tensor(s))).clamp(-1, 1).numpy())


def test_no_exploration_acts_with_the_learners_actor_as_it_was_at_the_refresh():
    agent = make_agent(Ablation(**SMALL, exploration="none"), 33, 4, 20)
    fed(agent, 60)
    agent.behaviour.refresh()  # as the next step would: no update since
    s = np.random.default_rng(4).standard_normal((20, 33)).astype(np.float32)
    np.testing.assert_array_equal(agent.act(s), agent.act(s, explore=False))


def test_an_ablation_at_its_defaults_is_the_lessons_agent_step_for_step():
    """experiments.ablations swaps parts only where a field asks: at its defaults an
    AblationAgent draws the same numbers and learns the same weights as the lesson's Agent."""
    lesson, variant = Agent(Config(**SMALL), 33, 4, 20), make_agent(Ablation(**SMALL), 33, 4, 20)
    fed(lesson, 40)
    fed(variant, 40)
    assert lesson.updates == variant.updates > 0
    for mine, theirs in zip(variant.actor.parameters(), lesson.actor.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=0, atol=0)
    np.testing.assert_array_equal(variant.memory.priorities.tree, lesson.memory.priorities.tree)


def test_the_mirror_is_a_symmetry_of_the_reacher():
    """Arm 1's goal is arm 0's mirrored (start angle 40 -> 320, speed -0.55 -> 0.55), and arm 1 gets arm 0's
    actions mirrored: its observations stay arm 0's mirrored (ablations.MIRROR_OBS, MIRROR_ACT)."""
    from experiments.ablations import MIRROR_ACT, MIRROR_OBS

    env = ReacherEnvironment(num_agents=2, seed=0, verbose=False)
    env.reset()
    env.physics.set_goal(np.array([40.0, 320.0]), np.array([-0.55, 0.55], np.float32))
    rng = np.random.default_rng(1)
    for _ in range(8):
        a = rng.uniform(-1, 1, 4).astype(np.float32)
        obs = env.step(np.stack([a, a * MIRROR_ACT]))["ReacherBrain"].vector_observations
        np.testing.assert_allclose(obs[0] * MIRROR_OBS, obs[1], atol=1e-4)
    env.close()


def test_a_mirroring_agent_acts_on_a_mirrored_goal_with_mirrored_actions(tmp_path):
    """The policy (acting and exported) of mirror=True answers a state and its mirror image with
    mirrored actions, and stores every transition with the goal orbiting one way."""
    from continuous_control.results import exported_policy
    from experiments.ablations import GOAL_SPEED, MIRROR_ACT, MIRROR_OBS

    agent = make_agent(Ablation(**SMALL, mirror=True), 33, 4, 20)
    fed(agent, 40)
    s = np.random.default_rng(3).standard_normal((20, 33)).astype(np.float32)
    s[:, GOAL_SPEED] = np.abs(s[:, GOAL_SPEED])
    np.testing.assert_allclose(
        agent.act(s * MIRROR_OBS, explore=False), agent.act(s, explore=False) * MIRROR_ACT, atol=1e-6
    )
    stored = agent.memory.states[: agent.memory.size]
    assert agent.memory.size > 0 and np.all(stored[:, GOAL_SPEED] >= 0)
    (tmp_path / "actor.pt2").write_bytes(exported_policy(agent, 33))
    policy = torch.export.load(str(tmp_path / "actor.pt2")).module()
    with torch.no_grad():
        torch.testing.assert_close(
            policy(torch.as_tensor(s * MIRROR_OBS)), policy(torch.as_tensor(s)) * torch.as_tensor(MIRROR_ACT)
        )


def crafted_policy(folder, marker, where: str):
    """checkpoints/actor.pt2 with a pickle that would create `marker`: as a weight marked `use_pickle`, or as
    the sample inputs (which torch.export.load unpickles fully when a weights-only load fails)."""
    import zipfile

    payload = io.BytesIO()
    torch.save(Payload(str(marker)), payload)
    path = folder / "actor.pt2"
    with zipfile.ZipFile(os.path.join(ROOT, "checkpoints", "actor.pt2")) as source, zipfile.ZipFile(path, "w") as out:
        config_name = next(n for n in source.namelist() if n.endswith("model_weights_config.json"))
        config = json.loads(source.read(config_name))
        first = next(iter(config["config"].values()))
        first["use_pickle"] = True
        for item in source.infolist():
            data = source.read(item)
            if where == "weight" and item.filename == config_name:
                data = json.dumps(config).encode()
            elif item.filename.endswith(
                "/weights/" + first["path_name"] if where == "weight" else "/sample_inputs/model.pt"
            ):
                data = payload.getvalue()
            out.writestr(item, data)
    return path


@pytest.mark.parametrize("where", ["weight", "sample inputs"])
def test_a_crafted_exported_policy_runs_no_code_and_is_never_read(trained, tmp_path, where):
    """The project rebuilds a policy from policy.json and policy.safetensors: a crafted actor.pt2 beside them is
    never read (nothing loads it), though torch alone would run it."""
    from continuous_control.playback import load_policy

    folder = tmp_path / "run"
    shutil.copytree(trained, folder, ignore=shutil.ignore_patterns("resume*"))
    states = np.random.default_rng(0).standard_normal((20, 33)).astype(np.float32)
    expected = load_policy(str(folder))(states)
    marker = tmp_path / "pwned"
    path = crafted_policy(folder, marker, where)
    assert np.array_equal(load_policy(str(path))(states), expected)
    assert not marker.exists()
    with contextlib.suppress(Exception):  # what the project no longer does: torch alone runs it
        torch.export.load(str(path))
    assert marker.exists()


class FullDisk(io.RawIOBase):
    """A file on a full disk: every write fails as the operating system's does."""

    def writable(self):
        return True

    def write(self, data):
        raise OSError(errno.ENOSPC, "No space left on device")


def fill_the_disk(monkeypatch):
    """From now on, every file the project writes (a new file, made with O_EXCL|O_NOFOLLOW by `files.new_beside`
    or `files.create_new`, then renamed into place) is on a full disk: it is made, and its first write fails as the
    operating system's does."""
    from continuous_control import files, results

    def full(make, with_name: bool):
        def made(path, mode="wb"):
            out = make(path, mode)
            (out[0] if with_name else out).close()
            return (FullDisk(), out[1]) if with_name else FullDisk()

        return made

    for module in (files, results):
        for name, with_name in (("new_beside", True), ("create_new", False)):
            if hasattr(module, name):
                monkeypatch.setattr(module, name, full(getattr(files, name), with_name))


def small_result(folder, episodes, arms=2):
    """save_results for a small agent and a made-up history of `episodes` episodes: the folder's files."""
    from continuous_control.results import save_results

    mean = [float(k) for k in range(episodes)]
    history = {
        "mean": mean,
        "min": mean,
        "max": mean,
        "avg100": mean,
        "wall": mean,
        "arms": [[m] * arms for m in mean],
        "solved_at": None,
    }
    save_results(str(folder), Agent(Config(**SMALL), 33, 4, arms), history, None)
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def test_a_full_disk_while_results_are_written_changes_nothing_and_says_so(tmp_path, monkeypatch):
    """torch's own file writer aborts the process on a full disk (a Jupyter kernel dies, and the history with it):
    results are made in memory and written to a sibling folder first, so a full disk is an OSError naming the
    folder, and the old results stay whole."""
    folder = tmp_path / "run"
    before = small_result(folder, 3)
    fill_the_disk(monkeypatch)
    with pytest.raises(OSError) as error:
        small_result(folder, 1)
    assert error.value.errno == errno.ENOSPC and str(folder) in str(error.value) and "disk is full" in str(error.value)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no partial folder left behind


def test_a_recorded_result_replaces_the_old_one_whole_or_not_at_all(tmp_path, monkeypatch):
    """experiments.run's results/<variant>/seed<k>/: every file of the new run and none of the old (an old
    diagnostics.csv would otherwise stay beside new scores); on a full disk, the old folder as it was."""
    from experiments import run as runner

    monkeypatch.setattr(runner, "evaluate", lambda run_dir, seed: {"episode_means": [1.0] * 5, "arm_means": [1.0, 1.0]})
    run_dir, out = tmp_path / "runs", tmp_path / "results" / "full" / "seed0"
    small_result(run_dir, 2)
    out.mkdir(parents=True)
    (out / "diagnostics.csv").write_text("episode,q\n1,0.5\n")
    (out / "summary.json").write_text("{}")
    runner.record(str(run_dir), str(out), "full", 0)
    assert sorted(p.name for p in out.iterdir()) == [
        "arm_scores.csv",
        "config.json",
        "manifest.json",
        "scores.csv",
        "summary.json",
    ]
    assert (out / "scores.csv").read_bytes() == (run_dir / "scores.csv").read_bytes()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    small_result(run_dir, 3)
    fill_the_disk(monkeypatch)
    with pytest.raises(OSError, match="disk is full"):
        runner.record(str(run_dir), str(out), "full", 0)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert sorted(p.name for p in out.parent.iterdir()) == ["seed0"]


def test_a_checkpoint_whose_parts_disagree_is_refused_naming_them(saved, tmp_path):
    """A checkpoint that says episode 50 over a 1-episode history, or a replay larger than its arrays, is
    refused before anything is restored."""
    original = saved.read_bytes()
    for craft, named in (
        (dict(state=lambda text: text.replace('"episode": 1,', '"episode": 50,', 1)), "episode 50"),
        (dict(tensors=lambda t: t.update(states=t["states"][:10].clone())), "states 10"),
    ):
        saved.write_bytes(original)
        recrafted(saved, **craft)
        with pytest.raises(checkpoints.CheckpointError) as error:
            one_episode(tmp_path, resume=True)
        assert str(saved) in str(error.value) and named in str(error.value)


def test_the_exported_policy_takes_numpy_and_single_states(trained):
    """The policy as load_policy gives it (from the folder of the actor.pt2 older code loaded): tensors or numpy
    arrays, float32 or float64, one state or one per arm;
    anything else is a ValueError that names the file and the state size."""
    from continuous_control.playback import load_policy

    policy, path = load_policy(str(trained / "actor.pt2")), str(trained / "policy.safetensors")
    states = np.random.default_rng(0).standard_normal((20, 33))
    expected = policy(torch.as_tensor(states, dtype=torch.float32)).detach().numpy()
    np.testing.assert_allclose(policy(states), expected, atol=1e-6)
    np.testing.assert_allclose(policy(states[3].astype(np.float32)), expected[3], atol=1e-6)
    assert isinstance(policy(states), np.ndarray) and policy(torch.as_tensor(states[0])).shape == (4,)
    for bad in (states[:, :30], states[None], np.zeros((2, 33), int)):
        with pytest.raises(ValueError) as error:
            policy(bad)
        assert path in str(error.value) and "33" in str(error.value)


def test_an_opengl_backend_that_cannot_load_is_named(tmp_path):
    """MUJOCO_GL=osmesa on a machine without OSMesa: importing the Reacher says which backend and what to do,
    not PyOpenGL's AttributeError (here the library is kept from being found, as on such a machine)."""
    script = (
        "import ctypes.util\nfind = ctypes.util.find_library\n"
        "ctypes.util.find_library = lambda name: None if 'osmesa' in name.lower() else find(name)\nimport reacher"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        env={**{k: v for k, v in os.environ.items() if k != "PYOPENGL_PLATFORM"}, "MUJOCO_GL": "osmesa"},
    )
    last = done.stderr.strip().splitlines()[-1]
    assert done.returncode != 0 and "MUJOCO_GL='osmesa'" in last and "unset MUJOCO_GL" in last, done.stderr[-2000:]


def test_the_executable_started_by_hand_says_it_needs_the_client(tmp_path):
    """The built-in executable connects to the unityagents client: started alone, it says so and exits 2."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # a port no client listens on
    done = subprocess.run(
        [sys.executable, "-m", "reacher.serve", "--port", str(port), "--wait", "1"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 2 and f"port {port}" in done.stderr and "UnityEnvironment" in done.stderr, done.stderr

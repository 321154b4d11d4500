"""Every file the project reads is hostile until checked (issue: files and sockets trust nothing). Each finding of
the review has its test: the mirrored policy as data, symlinks planted where the run writes, edited or impossible
scores, a FIFO, /dev/zero, deep JSON, a NaN priority, too many arms; then a fuzz test that flips bytes in every kind
of file a run folder holds and sees a refusal naming the file, or the exact values. The crafted checkpoints and
policies of the later review are in test_data_files.py."""

import json
import os
import shutil
import threading

import numpy as np
import pytest
import torch

from continuous_control import checkpoints
from continuous_control.agent import Config, train, walk_step
from continuous_control.files import MANIFEST, FileRefused, manifest
from continuous_control.playback import load_policy
from continuous_control.results import load_run, policy_files, write_files
from continuous_control.sumtree import SumTree
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(16, 16))
STATES = np.random.default_rng(0).standard_normal((20, 33)).astype(np.float32)


def run(folder, episodes=2, **options):
    cfg = Config(**SMALL)
    return train(cfg, ReacherEnvironment(seed=0, verbose=False), str(folder), episodes, live=False, **options)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 2-episode run with its checkpoint: tests work on copies (`folder`)."""
    folder = tmp_path_factory.mktemp("finished") / "run"
    run(folder, checkpoint_every=1)
    return folder


@pytest.fixture
def folder(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


def reseal(folder) -> None:
    """The manifest written anew over the folder's files: an editor who rewrites it too, so that only the checks
    of the values stand between the edit and the report."""
    names = [n for n in json.loads((folder / MANIFEST).read_text()) if (folder / n).exists()]
    (folder / MANIFEST).write_text(manifest({n: (folder / n).read_bytes() for n in names}))


# --- policies are data ---


def test_the_report_s_mirrored_policy_is_saved_as_data_and_acts_as_the_module(tmp_path):
    """The report's mirroring ablation: its policy, rebuilt from policy.json and policy.safetensors, acts as the
    MirroredPolicy it was saved from, bit for bit."""
    from experiments.ablations import Ablation, AblationAgent, MirroredPolicy

    agent = AblationAgent(Ablation(mirror=True, **SMALL), 33, 4, 20)
    write_files(str(tmp_path), policy_files(agent))
    states = STATES * np.where(np.arange(20) % 2, 1, -1)[:, None].astype(np.float32)  # both goal directions
    with torch.no_grad():
        expected = MirroredPolicy(agent.norm, agent.actor_target)(torch.as_tensor(states)).numpy()
    assert np.array_equal(load_policy(str(tmp_path))(states), expected)


# --- writes that cannot be redirected ---


def test_symlinks_planted_where_a_run_writes_are_never_written_through(tmp_path, capsys):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("untouched")
    folder = tmp_path / "run"
    (folder / "resume").mkdir(parents=True)
    os.symlink(victim / "precious.txt", folder / ".lock")
    os.symlink(victim / "precious.txt", folder / "resume" / (checkpoints.FILE + ".tmp"))
    os.symlink(victim, tmp_path / "run.partial")
    history = run(folder, checkpoint_every=1)
    assert (victim / "precious.txt").read_text() == "untouched" and os.listdir(victim) == ["precious.txt"]
    assert not os.path.islink(folder / ".lock") and (folder / "resume" / checkpoints.FILE).is_file()
    assert load_run(str(folder))["scores"]["mean"].tolist() == [round(m, 4) for m in history["mean"]]
    shutil.rmtree(folder / "resume.old")  # the first run's fresh start set the planted resume/ aside
    os.symlink(victim, folder / "resume.old")  # where the next fresh start sets resume/ aside
    run(folder, checkpoint_every=1)
    assert os.listdir(victim) == ["precious.txt"] and (folder / "resume.old").is_dir()
    assert not os.path.islink(folder / "resume.old")


def test_a_folder_left_half_replaced_is_refused_by_its_manifest(folder):
    """A kill between the renames of a save leaves new files beside the old manifest: the mix is refused."""
    load_run(str(folder))  # as written: accepted
    listed = json.loads((folder / MANIFEST).read_text())
    assert {"scores.csv", "summary.json", "policy.json", "policy.safetensors", "networks.safetensors"} <= set(listed)
    (folder / "policy.safetensors").write_bytes((folder / "networks.safetensors").read_bytes())  # another write's
    with pytest.raises(FileRefused, match=r"policy\.safetensors is not the file that .*manifest\.json lists"):
        load_policy(str(folder))


# --- silently wrong numbers ---


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda t: t.replace("\n1,", "\n1,1", 1), "mean"),  # a two-character edit of a score
        (lambda t: t.replace("episode,mean,min", "episode,min,mean", 1), "columns"),  # a swapped header
    ],
    ids=["edited score", "swapped header"],
)
def test_an_edited_scores_file_is_refused_naming_the_file_and_field(folder, edit, field):
    (folder / "scores.csv").write_text(edit((folder / "scores.csv").read_text()))
    reseal(folder)  # the checks of the values alone
    with pytest.raises(FileRefused, match=rf"scores\.csv.*{field}"):
        load_run(str(folder))


def test_a_summary_that_disagrees_with_the_scores_is_refused(folder):
    summary = json.loads((folder / "summary.json").read_text())
    summary["mean_episodes_1_100"] += 100
    (folder / "summary.json").write_text(json.dumps(summary))
    reseal(folder)
    with pytest.raises(FileRefused, match=r"summary\.json: mean_episodes_1_100"):
        load_run(str(folder))


# --- hangs and memory ---


def refused_in_time(call, seconds=20):
    """The exception `call` raises, which it must raise within `seconds` (a thread: a hang is seen, not waited)."""
    out = {}

    def target():
        try:
            call()
        except Exception as error:
            out["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), "the reader hangs"
    assert "error" in out, "nothing was refused"
    return out["error"]


def test_a_fifo_in_place_of_scores_is_refused_without_waiting(folder):
    os.remove(folder / "scores.csv")
    os.mkfifo(folder / "scores.csv")
    error = refused_in_time(lambda: load_run(str(folder)))
    assert isinstance(error, FileRefused) and "scores.csv" in str(error)


def test_dev_zero_in_place_of_the_summary_is_refused_without_reading_it(folder):
    os.remove(folder / "summary.json")
    os.symlink("/dev/zero", folder / "summary.json")
    error = refused_in_time(lambda: load_run(str(folder)))
    assert isinstance(error, FileRefused) and "summary.json is a symbolic link" in str(error)


def test_deeply_nested_json_is_refused_naming_the_file(folder):
    (folder / "config.json").write_text("[" * 100_000 + "]" * 100_000)
    reseal(folder)
    with pytest.raises(FileRefused, match=r"config\.json nests deeper"):
        load_run(str(folder))


def test_a_nan_priority_is_refused_naming_the_transition_and_leaves_the_tree_as_it_was():
    """The review's NaN priorities gave NaN actions: a NaN in the tree poisons every sum above it."""
    tree = SumTree(8, walk_step)
    tree[np.arange(8)] = np.arange(1.0, 9.0)
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(ValueError, match=f"priority {bad} for transition 5"):
            tree[np.array([4, 5])] = np.array([2.0, bad])
    assert tree.total() == 36.0 and tree[4] == 5.0


def test_an_environment_of_a_million_arms_is_refused_at_once():
    with pytest.raises(ValueError, match="from 1 to 1000; got 1000000"):
        ReacherEnvironment(num_agents=10**6, verbose=False)


# --- the fuzz test ---

KINDS = ["scores.csv", "arm_scores.csv", "summary.json", "config.json", "diagnostics.csv", "policy.json"]
KINDS += ["policy.safetensors", MANIFEST]


@pytest.mark.parametrize("name", KINDS + [checkpoints.FILE])
def test_a_flipped_byte_is_refused_naming_the_file_or_changes_nothing(folder, name):
    """40 flips per kind, each alone, from a fixed seed: the outcome is a refusal that names the file, or the
    exact values of the untouched folder."""
    original = load_run(str(folder))
    policy = load_policy(str(folder))(STATES)
    path = folder / "resume" / name if name == checkpoints.FILE else folder / name
    data = path.read_bytes()
    rng = np.random.default_rng(sum(map(ord, name)))
    refused = 0
    for position, bit in zip(rng.integers(0, len(data), 40), rng.integers(0, 8, 40)):
        damaged = bytearray(data)
        damaged[position] ^= 1 << bit
        path.write_bytes(bytes(damaged))
        try:
            if name == checkpoints.FILE:
                checkpoints.read_checkpoint(str(path))
            else:
                again = load_run(str(folder))
                assert json.dumps(again["summary"]) == json.dumps(original["summary"])
                assert all(np.array_equal(again["scores"][k], original["scores"][k]) for k in original["scores"])
                assert np.array_equal(again["arms"], original["arms"]) and again["config"] == original["config"]
                assert np.array_equal(load_policy(str(folder))(STATES), policy)
        except (ValueError, checkpoints.CheckpointError) as error:
            assert name in str(error), str(error)
            refused += 1
        finally:
            path.write_bytes(data)
    assert refused > 0


def test_two_hand_outs_racing_for_one_folder_leave_one_whole_and_a_refusal_naming_it(tmp_path, monkeypatch):
    from tools import student

    target = tmp_path / "handout"
    real = student.write_support

    raced = []

    def racing(stage, notebook):  # the other hand-out fills the folder while this one is made
        real(stage, notebook)
        if not raced:
            raced.append(True)
            student.handout(str(target))

    monkeypatch.setattr(student, "write_support", racing)
    with pytest.raises(SystemExit, match=r"handout: something else filled it"):
        student.handout(str(target))
    assert (target / "Continuous_Control.ipynb").is_file() and not list(tmp_path.glob(".handout-*"))

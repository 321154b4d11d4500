"""Every file the project reads is hostile until checked (issue: files and sockets trust nothing). Each finding of
the review has its test: a crafted policy archive or graph, symlinks planted where the run writes, edited or
impossible scores, a FIFO, /dev/zero, deep JSON, an impossible checkpoint, a NaN in a checkpoint or a priority,
too many arms; then a fuzz test that flips bytes in every kind of file a run folder holds and sees a refusal naming
the file, or the exact values."""

import io
import json
import os
import shutil
import threading
import zipfile

import numpy as np
import pytest
import torch

from continuous_control import checkpoints
from continuous_control.agent import Config, train, walk_step
from continuous_control.files import MANIFEST, FileRefused
from continuous_control.results import Float32Input, load_policy, load_run, saved
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


def rezip(path, out, extra=(), replace=None):
    """The archive `path` written to `out` with each member's bytes through `replace`, then `extra` members."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            target.writestr(info, replace(info.filename, data) if replace else data)
        for name, data in extra:
            target.writestr(name, data)
    return out


# --- exported policies are data ---


def test_a_policy_archive_with_a_member_twice_is_refused_before_torch_reads_it(folder):
    path = folder / "actor.pt2"
    with zipfile.ZipFile(path) as z:
        name = next(n for n in z.namelist() if n.endswith("model_weights_config.json"))
        twice = (name, z.read(name))
    with pytest.warns(UserWarning, match="Duplicate name"):
        rezip(path, folder / "twice.pt2", extra=[twice])
    with pytest.raises(FileRefused, match=r"twice\.pt2.*more than once"):
        load_policy(str(folder / "twice.pt2"))


def test_a_policy_archive_with_a_member_no_policy_holds_is_refused(folder):
    rezip(folder / "actor.pt2", folder / "extra.pt2", extra=[("archive/data/evil.pkl", b"\x80\x04N.")])
    with pytest.raises(FileRefused, match=r"extra\.pt2.*evil\.pkl"):
        load_policy(str(folder / "extra.pt2"))


class Sine(torch.nn.Module):  # arithmetic no actor needs
    def forward(self, x):
        return torch.sin(x)[:, :4]


class Random(torch.nn.Module):  # a random operator
    def forward(self, x):
        return torch.rand_like(x)[:, :4]


class Counter(torch.nn.Module):  # a write into its own state
    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(1))

    def forward(self, x):
        self.calls.add_(1)
        return x[:, :4] * 0


@pytest.mark.parametrize("module", [Sine(), Random(), Counter()], ids=["math", "random", "state write"])
def test_a_policy_whose_graph_does_what_no_actor_does_is_refused_before_it_runs(tmp_path, module):
    exported = torch.export.export(Float32Input(module), (torch.zeros(2, 33),))
    (tmp_path / "policy.pt2").write_bytes(saved(torch.export.save, exported))
    with pytest.raises(FileRefused, match=r"policy\.pt2: its graph"):
        load_policy(str(tmp_path / "policy.pt2"))


def test_a_graph_edited_to_call_a_file_operator_is_refused_before_it_runs(folder):
    """The review's exploit: an exported graph whose operator writes a file when the policy runs."""
    victim = folder / "victim.pth"
    victim.write_text("untouched")

    def to_file_op(name, data):  # every tanh of the program becomes aten.fill_ (an in-place write)
        return (
            data.replace(b"torch.ops.aten.tanh.default", b"torch.ops.aten.fill_.Scalar")
            if name.endswith("model.json")
            else data
        )

    rezip(folder / "actor.pt2", folder / "edited.pt2", replace=to_file_op)
    with pytest.raises(FileRefused, match=r"edited\.pt2"):
        load_policy(str(folder / "edited.pt2"))
    assert victim.read_text() == "untouched"


def test_the_report_s_mirrored_policy_exports_and_loads(tmp_path):
    """The allow-list holds what the report's mirroring ablation exports, besides the plain actor."""
    from continuous_control.agent import Actor, Normalizer
    from experiments.ablations import MirroredPolicy

    policy = Float32Input(MirroredPolicy(Normalizer(33), Actor(33, 4, (16, 16))).eval())
    exported = torch.export.export(policy, (torch.zeros(2, 33),), dynamic_shapes=({0: torch.export.Dim("arms")},))
    (tmp_path / "mirror.pt2").write_bytes(saved(torch.export.save, exported))
    with torch.no_grad():
        assert load_policy(str(tmp_path / "mirror.pt2"))(STATES).shape == (20, 4)


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
    manifest = json.loads((folder / MANIFEST).read_text())
    assert {"scores.csv", "summary.json", "actor.pt", "actor.pt2"} <= set(manifest)
    (folder / "actor.pt").write_bytes((folder / "critic.pt").read_bytes())  # a file of another write
    with pytest.raises(FileRefused, match=r"actor\.pt is not the file that .*manifest\.json lists"):
        load_run(str(folder))


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
    os.remove(folder / MANIFEST)  # the checks of the values alone, as for a folder written before manifests
    (folder / "scores.csv").write_text(edit((folder / "scores.csv").read_text()))
    with pytest.raises(FileRefused, match=rf"scores\.csv.*{field}"):
        load_run(str(folder))


def test_a_summary_that_disagrees_with_the_scores_is_refused(folder):
    os.remove(folder / MANIFEST)
    summary = json.loads((folder / "summary.json").read_text())
    summary["mean_episodes_1_100"] += 100
    (folder / "summary.json").write_text(json.dumps(summary))
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
    os.remove(folder / MANIFEST)
    with pytest.raises(FileRefused, match=r"config\.json nests deeper"):
        load_run(str(folder))


def crafted_checkpoint(folder, **changes):
    """The run's checkpoint with its state's fields changed."""
    path = folder / "resume" / checkpoints.FILE
    with np.load(path) as saved_arrays:
        arrays = dict(saved_arrays)
    state = torch.load(io.BytesIO(arrays["state"].tobytes()), weights_only=True)
    for key, value in changes.items():
        if value is None:
            del state[key]
        else:
            state[key] = value
    blob = io.BytesIO()
    torch.save(state, blob)
    arrays["state"] = np.frombuffer(blob.getvalue(), np.uint8)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize(
    "changes, reason",
    [({"episode": 10**9}, "episode"), ({"episode": -5}, "episode"), ({"nets": {}}, "networks"),
     ({"shape": [7, 33]}, "shape")],
    ids=["episode 10**9", "episode -5", "no networks", "bad shape"],
)  # fmt: skip
def test_an_impossible_checkpoint_is_refused_naming_it(folder, changes, reason):
    path = crafted_checkpoint(folder, **changes)
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*{reason}"):
        checkpoints.read_checkpoint(str(path))


def poisoned_checkpoint(folder, where):
    """The run's checkpoint with one value made NaN: in a network's weights, an optimiser's moments, or a priority."""
    path = folder / "resume" / checkpoints.FILE
    with np.load(path) as saved_arrays:
        arrays = dict(saved_arrays)
    state = torch.load(io.BytesIO(arrays["state"].tobytes()), weights_only=True)
    if where == "priorities":
        arrays["priorities"][3] = np.nan
    elif where == "nets":
        next(iter(state["nets"]["actor"].values())).view(-1)[0] = np.nan
    else:
        next(iter(state["opts"]["critic"]["state"].values()))["exp_avg"].view(-1)[0] = np.nan
    blob = io.BytesIO()
    torch.save(state, blob)
    arrays["state"] = np.frombuffer(blob.getvalue(), np.uint8)
    np.savez(path, **arrays)
    return path


@pytest.mark.parametrize("where", ["priorities", "nets", "opts"])
def test_a_checkpoint_holding_a_nan_is_refused_naming_where(folder, where):
    path = poisoned_checkpoint(folder, where)
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*its {where}\S* holds a value that"):
        checkpoints.read_checkpoint(str(path))


def test_a_nan_priority_is_refused_naming_the_transition_and_leaves_the_tree_as_it_was():
    """The review's NaN priorities gave NaN actions: a NaN in the tree poisons every sum above it."""
    tree = SumTree(8, walk_step)
    tree[np.arange(8)] = np.arange(1.0, 9.0)
    for bad in (np.nan, np.inf, -1.0):
        with pytest.raises(ValueError, match=f"priority {bad} for transition 5"):
            tree[np.array([4, 5])] = np.array([2.0, bad])
    assert tree.total() == 36.0 and tree[4] == 5.0


def test_a_checkpoint_that_would_inflate_past_its_limit_is_refused_before_it_does(folder, monkeypatch):
    """A small file whose arrays expand past the limit (the review's: 5 MB to 3.4 GB), here scaled down."""
    path = folder / "resume" / checkpoints.FILE
    with np.load(path) as saved_arrays:
        arrays = {**saved_arrays, "replayed": np.zeros(10**7, np.int8)}  # ten million zeros compress to little
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)
    limit = os.path.getsize(path) + 1
    monkeypatch.setattr(checkpoints, "CHECKPOINT_LIMIT", limit)
    with pytest.raises(checkpoints.CheckpointError, match=f"expands to more than {limit:,} bytes"):
        checkpoints.read_checkpoint(str(path))


def test_an_environment_of_a_million_arms_is_refused_at_once():
    with pytest.raises(ValueError, match="from 1 to 1000; got 1000000"):
        ReacherEnvironment(num_agents=10**6, verbose=False)


# --- the fuzz test ---

KINDS = ["scores.csv", "arm_scores.csv", "summary.json", "config.json", "diagnostics.csv", "actor.pt2", MANIFEST]


@pytest.mark.parametrize("name", KINDS + [checkpoints.FILE])
def test_a_flipped_byte_is_refused_naming_the_file_or_changes_nothing(folder, name):
    """40 flips per kind, each alone, from a fixed seed: the outcome is a refusal that names the file, or the
    exact values of the untouched folder."""
    original = load_run(str(folder))
    policy = load_policy(str(folder / "actor.pt2"))(STATES)
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
                assert np.array_equal(load_policy(str(folder / "actor.pt2"))(STATES), policy)
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

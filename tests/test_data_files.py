"""Files that are data by construction (issue: policies and checkpoints as safetensors, every folder under a
manifest read once, no write before the check or through a link). Each finding of the review has its test here or
in test_hostile_files.py; the property tests at the end fuzz each reader: a policy, a checkpoint, a run folder and
a results/ folder give a refusal that names the file, or exactly what they held, in bounded time and memory."""

import ast
import json
import math
import os
import shutil
import struct
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
import safetensors.torch
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from continuous_control import checkpoints, files, results
from continuous_control.agent import Config, train
from continuous_control.files import MANIFEST, FileRefused, manifest
from continuous_control.playback import load_policy
from continuous_control.provenance import ROOT
from continuous_control.results import load_run
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(16, 16))
STATES = np.random.default_rng(0).standard_normal((20, 33)).astype(np.float32)
SAVED = Path(ROOT, "results", "full", "seed0")  # a committed results/ folder


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished 2-episode run with its checkpoint: tests work on copies (`folder`)."""
    folder = tmp_path_factory.mktemp("finished") / "run"
    train(Config(**SMALL), ReacherEnvironment(seed=0, verbose=False), str(folder), 2, live=False, checkpoint_every=1)
    return folder


@pytest.fixture
def folder(finished, tmp_path):
    shutil.copytree(finished, tmp_path / "run")
    return tmp_path / "run"


@pytest.fixture
def saved(tmp_path):
    shutil.copytree(SAVED, tmp_path / "seed0")
    return tmp_path / "seed0"


def reseal(folder) -> None:
    """The folder's manifest written anew over its files as they are: an editor who rewrites the manifest too."""
    listed = json.loads((folder / MANIFEST).read_text()) if (folder / MANIFEST).exists() else None
    names = listed or [p.name for p in folder.iterdir() if p.is_file()]
    names = [n for n in names if n != MANIFEST and (folder / n).exists()]
    (folder / MANIFEST).write_text(manifest({name: (folder / name).read_bytes() for name in names}))


def snapshot(folder) -> dict:
    return {p.name: p.read_bytes() for p in sorted(Path(folder).iterdir()) if p.is_file()}


# --- 1. no program, no pickle ---

READERS = ("continuous_control", "reacher", "experiments", "benchmarks", "tools")
LOADERS = {"torch.load", "torch.export.load", "pickle.load", "pickle.loads", "torch.jit.load", "cloudpickle.load"}


def test_no_source_of_the_project_loads_a_program_or_unpickles():
    """Every call in the project's packages, by its dotted name: none of them reads a program or a pickle."""
    found = []
    for package in READERS:
        for path in Path(ROOT, package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call) and ast.unparse(node.func) in LOADERS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {ast.unparse(node.func)}")
                if isinstance(node, ast.keyword) and node.arg == "allow_pickle" and ast.unparse(node.value) != "False":
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} allow_pickle")
    assert found == []


def test_a_crafted_exported_program_is_never_read(folder, monkeypatch):
    """The review's actor.pt2 ran code through torch.export.load: the policy is now rebuilt from data, and the
    exported program, written for deployers, is read by nothing (a crafted one changes nothing)."""
    actions = load_policy(str(folder / "actor.pt2"))(STATES)
    (folder / "actor.pt2").write_bytes(b"PK\x03\x04 crafted program")
    monkeypatch.setattr(torch.export, "load", lambda *a, **k: pytest.fail("torch.export.load was called"))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load was called"))
    with pytest.raises(FileRefused, match=r"actor\.pt2 is not the file"):
        load_run(str(folder))  # the manifest vouches for another actor.pt2
    (folder / "actor.pt2").unlink()
    reseal(folder)
    assert np.array_equal(load_policy(str(folder / "actor.pt2"))(STATES), actions)
    assert np.array_equal(load_policy(str(folder))(STATES), actions)


def test_the_policy_acts_as_the_exported_program_does_bit_for_bit(folder):
    program = torch.export.load(str(folder / "actor.pt2")).module()  # the test reads it, to compare; never the project
    with torch.no_grad():
        assert np.array_equal(load_policy(str(folder))(STATES), program(torch.as_tensor(STATES)).numpy())


def test_the_committed_policy_is_data_and_acts_as_the_run_left_it():
    """checkpoints/: converted from the .pt files, not retrained: the actions of checkpoints/actor.pt2."""
    program = torch.export.load(os.path.join(ROOT, "checkpoints", "actor.pt2")).module()
    with torch.no_grad():
        assert np.array_equal(load_policy("checkpoints")(STATES), program(torch.as_tensor(STATES)).numpy())


# --- 2. one read, one truth ---


def test_a_file_swapped_between_the_check_and_the_parse_is_never_seen(folder, monkeypatch):
    """The review replaced scores.csv after the manifest's check and before the parse: it was returned unchecked."""
    original = load_run(str(folder))["scores"]
    lines = (folder / "scores.csv").read_text().splitlines()
    cells = lines[1].split(",")
    cells[-1] = f"{float(cells[-1]) / 2:.4f}"  # episode 1's clock: a change no check of the values can see
    forged = "\n".join([lines[0], ",".join(cells), *lines[2:]]).encode() + b"\n"
    opened, real_open = [], os.open

    def swapping_open(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        if str(path).endswith("scores.csv"):
            opened.append(path)
            if len(opened) == 1:  # once the first read has opened the original, the file is swapped
                (folder / "forged").write_bytes(forged)
                os.replace(folder / "forged", folder / "scores.csv")
        return fd

    monkeypatch.setattr(os, "open", swapping_open)
    try:
        again = load_run(str(folder))["scores"]
    except FileRefused as error:
        assert "scores.csv" in str(error)
    else:
        assert all(np.array_equal(again[k], original[k]) for k in original)


@pytest.mark.parametrize(
    "field, value",
    [
        ("eval_noise_free_5", [1e9] * 5),
        ("eval_noise_free_5", [39.9] * 5),  # a score, but not the evaluation the arms average to
        ("eval_arm_means", [float("nan")] * 20),
        ("wall_seconds", -300.0),  # negative minutes
        ("wall_seconds_to_solve", 1e12),
        ("processor", 5),
        ("commit", "x" * 5000),
        ("mean_episodes_1_100", float("nan")),
        ("arm_means_episodes_1_100", [float("nan")] * 20),
        ("seed", 123456789),
    ],
    ids=[
        "eval 1e9", "eval 39.9", "eval arms NaN", "negative minutes", "minutes 1e12", "processor", "commit",
        "mean NaN", "arm means NaN", "5000-digit seed",
    ],
)  # fmt: skip
def test_a_results_summary_field_the_report_reads_is_checked(saved, field, value):
    """The report's table reads these fields; edited (and the manifest rewritten to match), each is refused."""
    summary = json.loads((saved / "summary.json").read_text())
    summary[field] = value
    text = json.dumps(summary, indent=2)
    if field == "seed":
        text = text.replace(f'"seed": {value}', '"seed": ' + "9" * 5000)  # more digits than Python converts
    (saved / "summary.json").write_text(text)
    reseal(saved)
    with pytest.raises(FileRefused, match=r"summary\.json"):
        load_run(str(saved))


@pytest.mark.parametrize("column, change", [("min", -30.0), ("max", 20.0)])
def test_a_min_or_max_that_is_not_its_arms_is_refused(saved, column, change):
    """One changed digit of scores.csv moved an episode's min by 30 or its max by 20: both come from the arms."""
    lines = (saved / "scores.csv").read_text().splitlines()
    header = lines[0].split(",")
    row = next(i for i, line in enumerate(lines[1:], 1) if float(line.split(",")[header.index("min")]) > 30)
    cells = lines[row].split(",")
    cells[header.index(column)] = f"{float(cells[header.index(column)]) + change:.4f}"
    if column == "max":  # keep it a score: an early, low row
        row, cells = 1, lines[1].split(",")
        cells[header.index(column)] = f"{float(cells[header.index(column)]) + change:.4f}"
    lines[row] = ",".join(cells)
    (saved / "scores.csv").write_text("\n".join(lines) + "\n")
    reseal(saved)
    with pytest.raises(FileRefused, match=rf"scores\.csv: {column} of episode {row}"):
        load_run(str(saved))


def test_every_committed_results_folder_has_a_manifest_that_holds():
    from experiments import runs

    folders = [folder for *_, folder in runs.run_folders()]
    assert len(folders) > 100
    for folder in folders:
        assert os.path.isfile(os.path.join(folder, MANIFEST)), folder
        load_run(folder)


def test_a_results_folder_without_a_manifest_is_refused_naming_it(saved):
    (saved / MANIFEST).unlink()
    with pytest.raises(FileRefused, match=rf"{saved} has no manifest\.json"):
        load_run(str(saved))


def test_a_results_file_that_disagrees_with_the_manifest_is_refused_naming_it(saved):
    text = (saved / "arm_scores.csv").read_text()
    (saved / "arm_scores.csv").write_text(text.replace(",", ", ", 1))
    with pytest.raises(FileRefused, match=r"arm_scores\.csv is not the file that .*manifest\.json lists"):
        load_run(str(saved))


@pytest.mark.parametrize("name", ["weak_arm.json", "calibration/hinges_xz.json", "overestimation/checkpoints.json"])
def test_results_own_files_are_read_through_their_folder_s_manifest(tmp_path, name):
    """The report's other tables (weak arm, calibration, overestimation): an edited file is refused naming it;
    a writer (write_json, listed) keeps the manifest current, so its new file is read back."""
    source = Path(ROOT, "results", name)
    path = tmp_path / source.name
    shutil.copy(source, path)
    shutil.copy(source.parent / MANIFEST, tmp_path / MANIFEST)  # it lists the folder's other files too
    original = files.read_listed_json(str(path))
    path.write_text(path.read_text().replace("3", "4", 1))
    with pytest.raises(FileRefused, match=rf"{source.name} is not the file that .*manifest\.json lists"):
        files.read_listed_json(str(path))
    results.write_json(str(path), {**original, "seconds": 1.0}, listed=True)
    assert files.read_listed_json(str(path)) == {**original, "seconds": 1.0}


def measured(call):
    """(the exception `call` raises, seconds, peak MiB of Python's allocations while it ran)."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        call()
    except Exception as error:  # the refusal, returned to be checked
        raised = error
    else:
        raised = None
    seconds = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    return raised, seconds, peak


def test_a_huge_scores_file_is_refused_before_it_is_read(saved):
    """The review's 63 MiB scores.csv took 268 s and 2.75 GB before it was refused."""
    with open(saved / "scores.csv", "ab") as f:
        f.write(b"1,1,1,1,1,1\n" * (63 * 2**20 // 12))
    reseal(saved)
    error, seconds, peak = measured(lambda: load_run(str(saved)))
    assert isinstance(error, FileRefused) and "scores.csv" in str(error)
    assert seconds < 2 and peak < 16, (seconds, peak)


def test_a_huge_array_shape_in_a_checkpoint_is_refused_without_allocating_it(folder):
    """A header that declares an array of 10**12 numbers over a few bytes: a named refusal, no MemoryError."""
    path = folder / "resume" / checkpoints.FILE
    header = json.dumps({"states": {"dtype": "F32", "shape": [10**6, 10**6], "data_offsets": [0, 8]}}).encode()
    path.write_bytes(struct.pack("<Q", len(header)) + header + bytes(8))
    error, seconds, peak = measured(lambda: checkpoints.read_checkpoint(str(path)))
    assert isinstance(error, checkpoints.CheckpointError) and checkpoints.FILE in str(error)
    assert seconds < 2 and peak < 16, (seconds, peak)


def test_an_empty_diagnostics_file_is_refused_naming_it(folder):
    (folder / "diagnostics.csv").write_bytes(b"")
    reseal(folder)
    with pytest.raises(FileRefused, match=r"diagnostics\.csv"):
        load_run(str(folder))


# --- crafted checkpoints ---


def craft(path, edit=None, tensors=None):
    """The checkpoint at `path` with its state changed by `edit(state)` and its tensors by `tensors(dict)`, its
    SHA-256 made anew: a crafted file, not a damaged one."""
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    state = json.loads(json.loads(data[8 : 8 + size])["__metadata__"]["state"])
    arrays = safetensors.torch.load(data)
    if edit:
        edit(state)
    if tensors:
        tensors(arrays)
    path.write_bytes(checkpoints.checkpoint_bytes(arrays, json.dumps(state)))


def setter(*keys, value):
    def edit(state):
        for key in keys[:-1]:
            state = state[key]
        state[keys[-1]] = value

    return edit


@pytest.mark.parametrize(
    "edit, reason",
    [
        (lambda s: s["history"].update(arms=[row[:7] for row in s["history"]["arms"]]), "arms"),
        (setter("memory", "next", value=-5), "cursor"),
        (setter("memory", "next", value=10**9), "cursor"),
        (setter("memory", "next", value="x"), "cursor"),
        (setter("episode", value=10**9), "episode"),
        (setter("shape", value=[7, 33]), "shape"),
        (setter("steps", value=-1), "steps"),
        (lambda s: s["history"]["mean"].__setitem__(0, "x"), "mean"),
        (lambda s: s.pop("random"), "fields"),
    ],
    ids=["7 arms in a 20-arm run", "next -5", "next 10**9", "next 'x'", "episode", "shape", "steps", "mean 'x'",
         "no random state"],
)  # fmt: skip
def test_a_crafted_checkpoint_is_refused_naming_the_field(folder, edit, reason):
    path = folder / "resume" / checkpoints.FILE
    craft(path, edit)
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*{reason}"):
        checkpoints.read_checkpoint(str(path))


def test_a_checkpoint_with_a_5000_digit_number_is_refused_naming_it(folder):
    path = folder / "resume" / checkpoints.FILE
    data = path.read_bytes()
    size = struct.unpack("<Q", data[:8])[0]
    state = json.loads(data[8 : 8 + size])["__metadata__"]["state"].replace('"steps": ', '"steps": ' + "9" * 5000, 1)
    path.write_bytes(checkpoints.checkpoint_bytes(safetensors.torch.load(data), state))
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*digits"):
        checkpoints.read_checkpoint(str(path))


@pytest.mark.parametrize("name", ["nets.actor.layers.0.weight_mean", "priorities", "opts.critic.0.exp_avg"])
def test_a_checkpoint_holding_a_nan_is_refused_naming_the_tensor(folder, name):
    path = folder / "resume" / checkpoints.FILE
    craft(path, tensors=lambda t: t[name].view(-1).__setitem__(0, math.nan))
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*{name} holds a value that"):
        checkpoints.read_checkpoint(str(path))


def test_a_transposed_tensor_is_refused_by_the_checkpoint_s_digest(folder):
    """The table of shapes is covered by the digest: a weight read with another shape is refused."""
    path = folder / "resume" / checkpoints.FILE
    data = bytearray(path.read_bytes())
    size = struct.unpack("<Q", data[:8])[0]
    header = data[8 : 8 + size].replace(b'"shape":[16,33]', b'"shape":[33,16]', 1)
    assert header != data[8 : 8 + size]
    path.write_bytes(bytes(data[:8] + header + data[8 + size :]))
    with pytest.raises(checkpoints.CheckpointError, match=rf"{checkpoints.FILE}.*SHA-256"):
        checkpoints.read_checkpoint(str(path))


# --- 3. check, then write; never through a link ---


def test_a_hard_link_at_the_lock_is_refused_and_its_file_untouched(tmp_path):
    """The review's hard link at <run>/.lock: the file it shares was truncated to the pid."""
    from continuous_control.training import lock_folder, unlock_folder

    victim = tmp_path / "precious.txt"
    victim.write_text("untouched")
    (tmp_path / "run").mkdir()
    os.link(victim, tmp_path / "run" / ".lock")
    try:
        with pytest.raises(RuntimeError, match=r"\.lock is not a regular file of one link"):
            lock_folder(str(tmp_path / "run"))
    finally:
        unlock_folder(str(tmp_path / "run"))
    assert victim.read_text() == "untouched"


def result_files(folder) -> dict:
    names = ("summary.json", "scores.csv", "arm_scores.csv", "config.json")
    return {name: (folder / name).read_bytes() for name in names}


def test_a_refused_result_leaves_the_folder_as_it_was(saved, tmp_path):
    """The review's Ray driver wrote a result over the folder, then checked it: a mean of 999 stayed."""
    before = snapshot(saved)
    sent = result_files(saved)
    summary = json.loads(sent["summary.json"])
    summary["mean_episodes_1_100"] = 999.0
    sent["summary.json"] = json.dumps(summary).encode()
    with pytest.raises(FileRefused, match=r"summary\.json: mean_episodes_1_100"):
        results.replace_run(str(saved), sent)
    assert snapshot(saved) == before and sorted(os.listdir(saved)) == sorted(before)


@pytest.mark.parametrize("sent", [{}, {"summary.json": b"{}"}, {"../scores.csv": b""}], ids=["none", "one", "outside"])
def test_a_result_of_no_or_too_few_files_is_refused_naming_the_folder(saved, sent):
    before = snapshot(saved)
    with pytest.raises(FileRefused, match=str(saved)):
        results.replace_run(str(saved), sent)
    assert snapshot(saved) == before


def test_a_checked_result_is_written_past_planted_links_and_read_back(saved, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    sent = result_files(saved)
    out = tmp_path / "out"
    out.mkdir()
    for name in [*sent, MANIFEST]:
        os.symlink(victim, out / name)
    run = results.replace_run(str(out), sent)
    assert victim.read_text() == "untouched" and not any(p.is_symlink() for p in out.iterdir())
    assert np.array_equal(run["scores"]["mean"], load_run(str(out))["scores"]["mean"])
    assert snapshot(out) == {**sent, MANIFEST: manifest(sent).encode()}


def test_a_write_that_fails_midway_leaves_the_folder_as_it_was(saved, monkeypatch):
    before = snapshot(saved)
    made, real = [], files.new_beside

    def failing(path, mode="wb"):
        if made:
            raise OSError(28, "No space left on device")
        made.append(path)
        return real(path, mode)

    monkeypatch.setattr(files, "new_beside", failing)
    with pytest.raises(OSError, match=f"The disk is full: the files of {saved} were not written"):
        results.replace_run(str(saved), result_files(saved))
    assert snapshot(saved) == before and sorted(os.listdir(saved)) == sorted(before)


def test_a_whole_write_clears_what_a_killed_one_left_never_through_a_link(saved, tmp_path):
    """The sweep replaces a results folder whole: a stage or set-aside folder left by a kill is removed by the
    next write (else the table of runs refuses the stray folder), and a link planted there is removed, not followed."""
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious.txt").write_text("untouched")
    (tmp_path / ".out.partial.left").mkdir()
    os.symlink(victim, tmp_path / ".out.old.planted")
    sent = result_files(saved)
    results.write_files(str(tmp_path / "out"), sent, whole=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "seed0", "victim"]
    assert os.listdir(victim) == ["precious.txt"] and load_run(str(tmp_path / "out"))["summary"]["seed"] == 0


# --- 6. property tests: a named refusal or the same values, in bounded time ---

FUZZ = settings(
    max_examples=200,
    deadline=None,  # a busy machine: the bound on time is the test's own, per example
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
LONG = settings(FUZZ, max_examples=3000)
SECONDS = 10  # the most one read may take, refusal or load


def mutation():
    """How to damage a file's bytes: flip a bit, cut it short, insert or overwrite a run of bytes."""
    return st.one_of(
        st.tuples(st.just("flip"), st.integers(0, 2**31), st.integers(0, 7)),
        st.tuples(st.just("cut"), st.integers(0, 2**31), st.just(0)),
        st.tuples(st.just("insert"), st.integers(0, 2**31), st.binary(min_size=1, max_size=16)),
        st.tuples(st.just("overwrite"), st.integers(0, 2**31), st.binary(min_size=1, max_size=16)),
    )


def mutate(data: bytes, change) -> bytes:
    kind, at, what = change
    at = at % (len(data) or 1)
    if kind == "flip":
        return data[:at] + bytes([data[at] ^ (1 << what)]) + data[at + 1 :]
    if kind == "cut":
        return data[:at]
    if kind == "insert":
        return data[:at] + what + data[at:]
    return data[:at] + what + data[at + len(what) :]


def same_run(a: dict, b: dict) -> bool:
    return (
        json.dumps(a["summary"]) == json.dumps(b["summary"])
        and a["config"] == b["config"]
        and np.array_equal(a["arms"], b["arms"])
        and all(np.array_equal(a["scores"][k], b["scores"][k]) for k in a["scores"])
        and a.keys() == b.keys()
    )


def fuzz_folder(source, names, read, same, change, name_index, resealed):
    """One damaged copy of `source`: `read` must refuse naming the damaged file, or give what `same` accepts. With
    `resealed`, the manifest is written anew over the damage (an editor, not an accident): then a text field may
    change and load, so the property is a refusal naming the file, or a load, never another exception."""
    expected = read(str(source))
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch, "run")
        shutil.copytree(source, copy, ignore=shutil.ignore_patterns("resume*"))
        name = names[name_index % len(names)]
        (copy / name).write_bytes(mutate((copy / name).read_bytes(), change))
        if resealed and name != MANIFEST:
            reseal(copy)
        start = time.perf_counter()
        try:
            got = read(str(copy))
        except (FileRefused, ValueError) as error:
            assert name in str(error) or (resealed and MANIFEST in str(error)), str(error)
        else:
            assert resealed or same(got, expected), name
        assert time.perf_counter() - start < SECONDS


RUN_FILES = ["summary.json", "scores.csv", "arm_scores.csv", "config.json", "diagnostics.csv", MANIFEST]
POLICY_FILES = [results.POLICY, results.POLICY_WEIGHTS, MANIFEST]
policy_same = lambda a, b: np.array_equal(a(STATES), b(STATES))


@FUZZ
@given(change=mutation(), name=st.integers(0, 5), resealed=st.booleans())
def test_fuzzed_run_folders_are_refused_by_name_or_read_the_same(finished, change, name, resealed):
    fuzz_folder(finished, RUN_FILES, load_run, same_run, change, name, resealed)


@FUZZ
@given(change=mutation(), name=st.integers(0, 5), resealed=st.booleans())
def test_fuzzed_results_folders_are_refused_by_name_or_read_the_same(change, name, resealed):
    fuzz_folder(SAVED, RUN_FILES, load_run, same_run, change, name, resealed)


@FUZZ
@given(change=mutation(), name=st.integers(0, 2), resealed=st.booleans())
def test_fuzzed_policies_are_refused_by_name_or_act_the_same(finished, change, name, resealed):
    fuzz_folder(finished, POLICY_FILES, load_policy, policy_same, change, name, resealed)


def fuzz_checkpoint(finished, change):
    source = finished / "resume" / checkpoints.FILE
    expected = checkpoints.read_checkpoint(str(source))
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch, checkpoints.FILE)
        path.write_bytes(mutate(source.read_bytes(), change))
        start = time.perf_counter()
        try:
            state, tensors = checkpoints.read_checkpoint(str(path))
        except checkpoints.CheckpointError as error:
            assert checkpoints.FILE in str(error)
        else:
            assert json.dumps(state) == json.dumps(expected[0]) and tensors.keys() == expected[1].keys()
            assert all(torch.equal(tensors[k], expected[1][k]) for k in tensors)
        assert time.perf_counter() - start < SECONDS


@FUZZ
@given(change=mutation())
def test_fuzzed_checkpoints_are_refused_by_name_or_read_the_same(finished, change):
    fuzz_checkpoint(finished, change)


@pytest.mark.long
@LONG
@given(change=mutation(), name=st.integers(0, 5), resealed=st.booleans())
def test_long_fuzz_of_results_folders(change, name, resealed):
    fuzz_folder(SAVED, RUN_FILES, load_run, same_run, change, name, resealed)


@pytest.mark.long
@LONG
@given(change=mutation(), name=st.integers(0, 2), resealed=st.booleans())
def test_long_fuzz_of_policies(finished, change, name, resealed):
    fuzz_folder(finished, POLICY_FILES, load_policy, policy_same, change, name, resealed)


@pytest.mark.long
@LONG
@given(change=mutation())
def test_long_fuzz_of_checkpoints(finished, change):
    fuzz_checkpoint(finished, change)


@pytest.mark.long
@LONG
@given(change=mutation(), name=st.integers(0, 5), resealed=st.booleans())
def test_long_fuzz_of_run_folders(finished, change, name, resealed):
    fuzz_folder(finished, RUN_FILES, load_run, same_run, change, name, resealed)


# --- 4. the course client: only the launched executable, no wait without end ---

SERVE = """
import sys, threading, time
import grpc
from concurrent.futures import ThreadPoolExecutor
from reacher.client_hook import install_hook, _servicer, SECRET_KEY
install_hook()
import unityagents.rpc_communicator as module
from communicator_objects import UnityMessage, UnityToExternalStub, add_UnityToExternalServicer_to_server
secret = sys.argv[1] if len(sys.argv) > 1 else None
server = grpc.server(ThreadPoolExecutor(max_workers=10))
add_UnityToExternalServicer_to_server(_servicer(module, secret), server)
port = server.add_insecure_port("127.0.0.1:0")
server.start()
call = UnityToExternalStub(grpc.insecure_channel(f"127.0.0.1:{port}")).Exchange
"""


def run_python(code: str, *args, timeout: float = 300):  # a bound for a hang, far past a busy machine's time
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=timeout)


def test_a_process_that_calls_without_the_launch_s_secret_is_refused():
    """The review's local process that connected first fed a training run rewards of 1000."""
    pytest.importorskip("unityagents")
    done = run_python(
        SERVE
        + """
try:
    call(UnityMessage(), timeout=5)
except grpc.RpcError as error:
    print("REFUSED", error.code())
try:
    call(UnityMessage(), metadata=((SECRET_KEY, "guessed"),), timeout=5)
except grpc.RpcError as error:
    print("REFUSED", error.code())
future = call.future(UnityMessage(), metadata=((SECRET_KEY, sys.argv[1]),), timeout=5)
print("RECEIVED", module.UnityToExternalServicerImplementation.parent_conn.poll(5))
""",
        "s3cret",
    )
    assert done.stdout.split("\n")[:3] == [
        "REFUSED StatusCode.PERMISSION_DENIED",
        "REFUSED StatusCode.PERMISSION_DENIED",
        "RECEIVED True",
    ], done.stderr[-2000:]


def test_abandoned_calls_do_not_keep_the_process_from_exiting():
    """The review's ten abandoned calls left the process unable to exit."""
    pytest.importorskip("unityagents")
    done = run_python(
        SERVE
        + """
for _ in range(10):
    try:
        call(UnityMessage(), timeout=0.5)  # no one answers: the caller gives up
    except grpc.RpcError:
        pass
print("LEAVING")
""",
    )
    assert "LEAVING" in done.stdout and done.returncode == 0, done.stderr[-2000:]


@pytest.mark.parametrize("plant", ["fifo", "dev zero", "symlink to a victim"])
def test_the_executable_s_reason_is_read_bounded_from_the_launch_s_own_folder(tmp_path, plant):
    """A FIFO or /dev/zero at the error file's path hung the client or ate its memory; a symlink was written
    through. The folder is the launch's own (mkdtemp: only its owner can plant anything there)."""
    from reacher import client_hook

    folder = tempfile.mkdtemp(prefix="reacher-serve-")
    try:
        assert os.stat(folder).st_mode & 0o077 == 0
        path = os.path.join(folder, client_hook.ERROR_NAME)
        victim = tmp_path / "victim"
        victim.write_text("untouched")
        if plant == "fifo":
            os.mkfifo(path)
        else:
            os.symlink("/dev/zero" if plant == "dev zero" else victim, path)
        start = time.monotonic()
        assert client_hook.read_reason(folder) is None
        os.environ[client_hook.ERRORS_ENV] = folder
        try:
            client_hook.write_reason("the reason")
        finally:
            del os.environ[client_hook.ERRORS_ENV]
        assert time.monotonic() - start < 2 and victim.read_text() == "untouched"
    finally:
        shutil.rmtree(folder)


def test_the_executable_s_reason_reaches_the_client_and_no_more_than_its_bound(tmp_path):
    from reacher import client_hook

    os.environ[client_hook.ERRORS_ENV] = str(tmp_path)
    try:
        client_hook.write_reason("x" * 10**6)
    finally:
        del os.environ[client_hook.ERRORS_ENV]
    assert client_hook.read_reason(str(tmp_path)) == "x" * client_hook.ERROR_LIMIT


@pytest.mark.parametrize("wait", ["nan", "inf", "-1", "0", "soon"])
def test_serve_refuses_a_wait_that_is_not_a_finite_positive_number(wait):
    done = run_python("import sys; from reacher.serve import main; sys.exit(main(sys.argv[1:]))", "--wait", wait)
    assert done.returncode == 2 and "--wait" in done.stderr and done.stderr.count("\n") <= 3, done.stderr

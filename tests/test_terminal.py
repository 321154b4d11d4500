"""What `make run` shows on the terminal (tools/terminal.py): a bar per training run read from the run's own
progress file, and the result at the end, compared with the saved run of the run's processor kind."""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from continuous_control.agent import Config, train
from continuous_control.checkpoints import FILE
from continuous_control.files import MANIFEST, manifest
from continuous_control.provenance import ROOT
from continuous_control.training import PROGRESS
from reacher import ReacherEnvironment
from tools import tasks, terminal

INTEL, AMD = "results/full/seed0", "results/processor_check/full/seed0"


def test_make_run_follows_the_lessons_two_runs_then_prints_the_result():
    steps = [argv[2:] for argv, _ in tasks.commands("run")]
    assert steps[0][:6] == ["tools.terminal", "follow", "runs/plain", "checkpoints", "--", "-m"]
    assert "Continuous_Control.ipynb" in steps[0] and steps[-1] == ["tools.terminal", "result", "checkpoints"]


def test_a_run_writes_its_latest_episode_for_the_terminal(tmp_path):
    cfg = Config(buffer_size=5_000, batch_size=32, warmup=500, hidden=(16, 16))
    history = train(cfg, ReacherEnvironment(seed=0, verbose=False), str(tmp_path / "run"), 2, live=False)
    latest = terminal.progress(str(tmp_path / "run"), since=0)
    assert latest == {
        "episode": 2,
        "of": 2,
        "mean": history["mean"][-1],
        "avg100": history["avg100"][-1],
        "wall_seconds": history["wall"][-1],
    }


WRITER = textwrap.dedent("""
    import json, os, sys, time
    for folder, episodes in (("{a}", 3), ("{b}", 5)):
        os.makedirs(os.path.join(folder, "resume"), exist_ok=True)
        for e in range(1, episodes + 1):
            latest = dict(episode=e, of=episodes, mean=5.0 * e, avg100=2.5 * e, wall_seconds=1.0 * e)
            path = os.path.join(folder, "resume", "progress.json")
            with open(path + ".tmp", "w") as f:
                json.dump(latest, f)
            os.replace(path + ".tmp", path)
            time.sleep(0.15)
    sys.exit(7)
""")


def test_follow_draws_each_runs_bar_from_its_file_and_returns_the_commands_status(tmp_path):
    a, b = tmp_path / "plain", tmp_path / "full"
    script = WRITER.replace("{a}", str(a)).replace("{b}", str(b))
    done = subprocess.run(
        [sys.executable, "-m", "tools.terminal", "follow", str(a), str(b), "--", "-c", script],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 7, done.stderr
    bars = done.stderr.replace("\r", "\n")
    assert "3/3" in bars and "5/5" in bars and "mean=25.00" in bars and "avg100=12.50" in bars, bars


def test_a_progress_file_from_before_or_not_a_runs_shows_nothing(tmp_path):
    folder = tmp_path / "run"
    (folder / "resume").mkdir(parents=True)
    path = folder / "resume" / PROGRESS
    good = dict(episode=2, of=100, mean=12.0, avg100=6.0, wall_seconds=3.0)
    path.write_text(json.dumps(good))
    assert terminal.progress(str(folder), since=0) == good
    assert terminal.progress(str(folder), since=os.stat(path).st_mtime + 1) is None  # an earlier run's
    for bad in ({"mean": 1e9}, {"episode": 101}, {"of": 10**9, "episode": 10**9}, {"avg100": float("nan")}):
        path.write_text(json.dumps({**good, **bad}))
        assert terminal.progress(str(folder), since=0) is None, bad
    os.remove(path)
    os.mkfifo(path)  # a FIFO: read_json refuses it without waiting
    assert terminal.progress(str(folder), since=0) is None


def summary_of(saved: str) -> dict:
    with open(os.path.join(ROOT, saved, "summary.json")) as f:
        return json.load(f)


def copy_of(saved, tmp_path, **summary):
    folder = tmp_path / "run"
    shutil.copytree(os.path.join(ROOT, saved), folder)
    data = json.loads((folder / "summary.json").read_text())
    (folder / "summary.json").write_text(json.dumps({**data, **summary}))
    listed = json.loads((folder / MANIFEST).read_text())  # the run as if it had been written so
    (folder / MANIFEST).write_text(manifest({name: (folder / name).read_bytes() for name in listed}))
    return folder


@pytest.mark.parametrize("saved", [INTEL, AMD])
def test_the_result_names_the_saved_run_it_repeats(tmp_path, capsys, saved):
    terminal.result(str(copy_of(saved, tmp_path)))
    out = capsys.readouterr().out.splitlines()
    summary = summary_of(saved)
    assert f"solved_at {summary['solved_at']}," in out[0]
    assert f"first episode at 30: {summary['first_episode_mean_30']}," in out[0]
    assert f"mean of episodes 1-100 {summary['mean_episodes_1_100']:.2f}," in out[0]
    assert out[1].startswith(f"repeats {saved}/")


def test_the_result_says_from_which_episode_a_run_differs_and_when_there_is_nothing_to_compare(tmp_path, capsys):
    intel = summary_of(INTEL)["processor"]
    terminal.result(str(copy_of(AMD, tmp_path, processor=intel)))  # AMD's scores, said to be Intel's
    assert capsys.readouterr().out.splitlines()[1].startswith(f"differs from {INTEL}/ from episode 1 on")
    shutil.rmtree(tmp_path / "run")
    folder = copy_of(AMD, tmp_path, processor="Example CPU")
    (folder / "resume.old").mkdir()
    (folder / "resume.old" / FILE).write_bytes(b"0" * 3_000_000)
    terminal.result(str(folder))
    out = capsys.readouterr().out.splitlines()
    assert out[1].startswith("no saved run on this processor kind")
    assert str(folder / "resume.old") in out[-1] and "3 MB" in out[-1]

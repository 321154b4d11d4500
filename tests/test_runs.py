"""The table of runs (experiments/runs.py): its measures on a run whose numbers are known, and its
refusal of a damaged results folder, naming the folder."""

import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from continuous_control.files import MANIFEST, manifest
from continuous_control.provenance import ROOT
from continuous_control.results import first_episode_at, running_mean
from experiments import runs


def fake_run(folder, seed, means, variant=None, **summary):
    """A run folder as training leaves it (its config.json holds only the seed): every arm scores the episode's
    mean, but arm 0 is 1 below
    and arm 1 is 1 above."""
    os.makedirs(folder)
    means = np.asarray(means, float)
    arms = np.repeat(means[:, None], 20, axis=1)
    arms[:, 0] -= 1.0
    arms[:, 1] += 1.0
    episodes = np.arange(1, len(means) + 1)
    average = running_mean(means)
    solved = next((int(e) for e, a in zip(episodes, average) if e >= 100 and a >= 30), None)
    np.savetxt(
        os.path.join(folder, "scores.csv"),
        np.column_stack([episodes, means, means - 1, means + 1, average, episodes * 120.0 / len(means)]),
        delimiter=",",
        header="episode,mean,min,max,avg100,wall_seconds",
        comments="",
    )
    np.savetxt(
        os.path.join(folder, "arm_scores.csv"),
        np.column_stack([episodes, arms]),
        delimiter=",",
        header="episode," + ",".join(f"arm{k}" for k in range(20)),
        comments="",
    )
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump({"seed": seed}, f)
    with open(os.path.join(folder, "summary.json"), "w") as f:
        json.dump(
            {
                "seed": seed,
                "variant": variant,
                "solved_at": solved,
                "first_episode_mean_30": first_episode_at(means),
                "mean_episodes_1_100": float(means[:100].mean()),
                "arm_means_episodes_1_100": arms[:100].mean(0).tolist(),
                "wall_seconds": 120.0,
                "wall_seconds_to_solve": solved * 120.0 / len(means) if solved else None,
                "final_avg100": float(average[-1]),
                "environment": "built-in replica",
                "machine": "x86_64 (Example CPU), 2 cores, torch threads 1",
                "episodes": len(means),
                "commit": "abc1234",
                "processor": "Example CPU",
                **summary,
            },
            f,
        )
    names = ("scores.csv", "arm_scores.csv", "config.json", "summary.json")
    with open(os.path.join(folder, MANIFEST), "w") as f:  # last, as every run's writer does
        f.write(manifest({name: Path(folder, name).read_bytes() for name in names}))


def test_a_runs_measures_are_its_first_100_episodes(tmp_path):
    means = np.r_[
        np.linspace(1, 39, 90), np.full(10, 20.0), np.full(10, 5.0)
    ]  # 110 episodes: the last 10 must not count
    fake_run(tmp_path / "full" / "seed3", 3, means, eval_arm_means=[38.0] * 19 + [30.0], eval_noise_free_5=[37.6] * 5)
    row = runs.load(str(tmp_path)).iloc[0]
    assert (row.variant, row.seed, row.processor, row.commit) == ("full", 3, "Example CPU", "abc1234")
    assert row.mean_1_100 == pytest.approx(means[:100].mean())
    assert row.mean_91_100 == pytest.approx(20.0)
    assert row.first_30 == int(np.argmax(means >= 30)) + 1
    assert row.worst_arm_1_100 == pytest.approx(means[:100].mean() - 1)
    assert (row.eval, row.eval_worst_arm, row.minutes) == (pytest.approx(37.6), 30.0, 2.0)


def test_a_run_that_never_reached_30_is_ordered_last(tmp_path):
    fake_run(tmp_path / "one_step" / "seed0", 0, np.full(100, 29.0))
    assert runs.load(str(tmp_path)).first_30[0] == runs.NEVER


@pytest.mark.parametrize(
    "damage, names",
    [
        ("short", "arm_scores.csv"),
        ("no summary", "seed3"),
        ("other seed", "seed3"),
        ("stray", "seed3.bak"),
        ("other variant", "seed3"),
        ("empty value", "scores.csv"),
    ],
)
def test_a_damaged_folder_is_refused_naming_it(tmp_path, damage, names):
    folder = tmp_path / "full" / "seed3"
    fake_run(folder, 3, np.full(100, 35.0), variant="full")
    fake_run(tmp_path / "full" / "seed4", 4, np.full(100, 35.0))
    if damage == "short":
        lines = (folder / "arm_scores.csv").read_text().splitlines()
        (folder / "arm_scores.csv").write_text("\n".join(lines[:60]))
    elif damage == "no summary":
        (folder / "summary.json").unlink()
    elif damage in ("other seed", "other variant"):
        summary = json.loads((folder / "summary.json").read_text())
        summary.update({"seed": 4} if damage == "other seed" else {"variant": "uniform"})
        (folder / "summary.json").write_text(json.dumps(summary))
    elif damage == "stray":
        shutil.copytree(folder, tmp_path / "full" / "seed3.bak")
    else:
        lines = (folder / "scores.csv").read_text().splitlines()
        lines[1] = lines[1].split(",", 1)[0] + ",," + lines[1].split(",", 2)[2]  # episode 1's mean left empty
        (folder / "scores.csv").write_text("\n".join(lines))
    with pytest.raises(runs.RunError, match=names.replace(".", r"\.")):
        runs.load(str(tmp_path))


def test_the_saved_results_load_with_provenance_as_fields():
    table = runs.load()
    assert not table.duplicated(["group", "variant", "seed"]).any()
    full = table[(table.group == "agent") & (table.variant == "full")]
    assert sorted(full.seed) == list(range(10)) and set(full.processor) == {"Intel(R) Xeon(R) Processor"}
    assert table.commit.str.fullmatch(r"[0-9a-f]{7}(\+changes)?").all()
    assert (table.episodes == 100).all()


@pytest.mark.parametrize("damage", ["an arm column gone", "a word in the scores", "summary.json cut short"])
def test_a_damaged_run_folder_is_refused_naming_its_file(tmp_path, damage):
    """The package's load_run, and the analyses' measure, which reads a folder through it, name the file."""
    from continuous_control.results import load_run

    folder = tmp_path / "run"
    shutil.copytree(os.path.join(ROOT, "checkpoints"), folder, ignore=shutil.ignore_patterns("resume*", ".lock"))
    if damage == "an arm column gone":
        lines = (folder / "arm_scores.csv").read_text().splitlines()
        (folder / "arm_scores.csv").write_text("\n".join(",".join(line.split(",")[:-1]) for line in lines) + "\n")
        named = "arm_scores.csv"
    elif damage == "a word in the scores":
        lines = (folder / "scores.csv").read_text().splitlines()
        lines[5] = ",".join(["6", "abc", *lines[5].split(",")[2:]])
        (folder / "scores.csv").write_text("\n".join(lines) + "\n")
        named = "scores.csv"
    else:
        (folder / "summary.json").write_text((folder / "summary.json").read_text()[:100])
        named = "summary.json"
    with pytest.raises(ValueError, match=named):
        load_run(str(folder))
    with pytest.raises((runs.RunError, ValueError), match=named if named != "arm_scores.csv" else "arm"):
        runs.measure(str(folder))

"""The report's sweep on Ray (experiments/run.py --ray): a local Ray of 2 CPUs runs two 1-episode runs whose results
equal the same runs made without Ray, and a run that fails is retried, then reported by name. Ray starts here only."""

import json

import numpy as np
import pytest

from experiments import run as runner

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(16, 16))
RUNS = [("full", 0, 1, False), ("one_step", 1, 1, False)]


def results_of(folder) -> dict:
    """A run folder's numbers: every column of its score files, and its summary without times and places."""
    files = {name: np.genfromtxt(folder / name, delimiter=",", names=True) for name in ("scores.csv", "arm_scores.csv")}
    scores = {f"{name}:{column}": files[name][column] for name in files for column in files[name].dtype.names}
    scores.pop("scores.csv:wall_seconds")
    summary = json.loads((folder / "summary.json").read_text())
    for key in ("wall_seconds", "wall_seconds_to_solve", "machine", "concurrent_runs", "commit"):
        summary.pop(key, None)
    return {**scores, "summary": summary, "config": json.loads((folder / "config.json").read_text())}


@pytest.fixture(scope="module")
def without_ray(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("without_ray")
    for variant, seed, episodes, stop in RUNS:
        runner.run_one(variant, seed, episodes, stop, runs=str(tmp / "runs"), results=str(tmp / "results"), **SMALL)
    return tmp / "results"


def test_a_local_ray_repeats_the_runs_made_without_it_and_names_a_run_that_fails(tmp_path, without_ray, capsys):
    pytest.importorskip("ray", reason="Ray is the [cluster] extra, in requirements.txt")
    bad = ("no_such_variant", 0, 1, False)
    failed = runner.ray_sweep(
        [(RUNS[:1], 1), (RUNS[1:] + [bad], 2)], "local", 2, str(tmp_path / "results"), str(tmp_path / "runs"), **SMALL
    )
    assert failed == [bad]
    out = capsys.readouterr()
    said = out.out + out.err
    assert f"failed no_such_variant seed 0 (after {runner.RETRIES} retries)" in said
    assert f"its log: {tmp_path / 'runs' / 'no_such_variant-seed0.log'}" in said
    for variant, seed, *_ in RUNS:
        ours, theirs = (results_of(root / variant / f"seed{seed}") for root in (tmp_path / "results", without_ray))
        assert ours.keys() == theirs.keys()
        for key in ours:
            if ":" in key:  # a column of a score file
                np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
            else:
                assert ours[key] == theirs[key], key
        assert (tmp_path / "runs" / f"{variant}-seed{seed}.log").exists()  # the log stays where it ran

"""`make experiments` (experiments/run.py) says when its runs fail."""

import pytest

from experiments import run as runner


def test_a_failing_run_makes_the_whole_set_fail(tmp_path):
    """A run that cannot start (seed -1 is refused by Config) ends `make experiments` with a non-zero exit."""
    with pytest.raises(SystemExit) as exit_:
        runner.main(["--variant", "full", "--seeds", "-1", "--jobs", "1", "--results", str(tmp_path)])
    assert exit_.value.code not in (0, None) and str(exit_.value.code).startswith("1 of 1 ")  # how many failed


def test_a_finished_result_is_never_replaced_by_a_shorter_run(tmp_path):
    """results/full/seed0 of a fresh clone (its networks not in runs/) stays as it is: the run stops, naming it."""
    import json

    from experiments.variants import CHANGES, RESULTS_VERSION

    folder = tmp_path / "full" / "seed0"
    folder.mkdir(parents=True)
    summary = {"episodes": 100, "solved_at": 100, "changes": CHANGES["full"], "results_version": RESULTS_VERSION}
    (folder / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(SystemExit, match=r"full/seed0\b.*\b100\b.*\b1\b"):  # the folder, its episodes and the run's
        runner.main(["--variant", "full", "--seeds", "0", "--episodes", "1", "--jobs", "1", "--results", str(tmp_path)])
    assert json.loads((folder / "summary.json").read_text()) == summary and sorted(
        p.name for p in folder.iterdir()
    ) == ["summary.json"]


def test_the_largest_ever_replay_enters_new_transitions_at_the_largest_priority_of_all():
    import numpy as np

    from experiments.ablations import LargestEverReplay

    replay, rng = LargestEverReplay(16, 1, 1, 0.6, 0.1, np.random.default_rng(0)), np.random.default_rng(1)
    largest = 1.0  # where the lesson's ring starts
    for scale in (5.0, 0.1, 3.0, 0.01):  # priorities that rise and fall: a ring of recent ones would forget
        idx, td = rng.choice(16, 4, replace=False), rng.standard_normal(4) * scale
        replay.update_priorities(idx, td)
        largest = max(largest, float(np.max(np.abs(td) + 0.1)))
        assert replay.entry_priority == largest
        assert np.allclose(replay.priorities[idx], (np.abs(td) + 0.1) ** 0.6)

"""`make experiments` (experiments/run.py) says when its runs fail."""
import pytest

from experiments import run as runner


def test_a_failing_run_makes_the_whole_set_fail(tmp_path):
    """A run that cannot start (seed -1 is refused by Config) ends `make experiments` with a non-zero exit."""
    with pytest.raises(SystemExit) as exit_:
        runner.main(["--variant", "full", "--seeds", "-1", "--jobs", "1", "--results", str(tmp_path)])
    assert exit_.value.code not in (0, None) and str(exit_.value.code).startswith("1 of 1 ")    # how many failed

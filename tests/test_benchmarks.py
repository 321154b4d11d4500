"""The training-speed profiler times the notebook's own training, and its options are typed."""
import json
from pathlib import Path

import pytest

from benchmarks import train_speed
from continuous_control.agent import Config, train
from reacher import ReacherEnvironment

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=300, hidden=(32, 32), learn_every_until=1, learn_every_later=4)


def test_profiled_training_is_the_training_and_times_every_phase(tmp_path):
    """Timing wraps the real methods: the profiled run learns exactly what an unprofiled run learns,
    and every phase, learning included, is timed in both timed episodes."""
    timings, profiled = train_speed.profile(warmup_episodes=0, **SMALL)
    plain = train(Config(**SMALL), ReacherEnvironment(seed=0, verbose=False), str(tmp_path), 3,
                  stop_when_solved=False, live=False)
    assert profiled["arms"] == plain["arms"]
    assert set(timings) == {"fast", "later"}
    assert (timings["fast"]["learn_every"], timings["later"]["learn_every"]) == (1, 4)
    for result in timings.values():
        ms = result["ms_per_step"]
        assert all(value > 0 for value in ms.values()), ms
        assert sum(ms.values()) < result["wall_ms_per_step"]      # exclusive times: no phase counted twice
    assert timings["later"]["ms_per_step"]["critic update"] < timings["fast"]["ms_per_step"]["critic update"]


def test_overrides_are_typed_against_the_config():
    parsed = train_speed.parse_overrides(["hidden=(64, 64)", "clipped_double_q=True", "tau=1", "batch_size=512",
                                          "warmup=6000"])
    assert parsed == {"hidden": (64, 64), "clipped_double_q": True, "tau": 1.0, "batch_size": 512, "warmup": 6000}
    assert type(parsed["tau"]) is float
    with pytest.raises(ValueError, match="Config.clipped_double_q must be bool, got 'yes'"):
        train_speed.parse_overrides(["clipped_double_q=yes"])
    with pytest.raises(ValueError, match="Config.batch_size must be int, got 1.5"):
        train_speed.parse_overrides(["batch_size=1.5"])
    with pytest.raises(ValueError, match="Config.grad_clip must be > 0, got -1.0"):
        train_speed.parse_overrides(["grad_clip=-1"])
    with pytest.raises(ValueError, match="Config has no field 'batchsize'"):
        train_speed.parse_overrides(["batchsize=5"])
    with pytest.raises(ValueError, match="expected FIELD=VALUE"):
        train_speed.parse_overrides(["batch_size"])


def test_cost_takes_the_ratio_pair_by_pair(tmp_path, monkeypatch):
    """benchmarks.cost: changed over default within each pair (not the ratio of sums), the warm-up not counted."""
    from benchmarks import cost
    calls = []
    times = iter([(99.0, 99.0),                                  # the warm-up
                  (12.0, 6.0), (10.0, 5.0), (30.0, 12.0), (20.0, 10.0), (9.0, 4.0), (10.0, 4.0)])

    def fake(changes):
        calls.append(list(changes))
        return next(times)
    monkeypatch.setattr(cost, "timed", fake)
    cost.main(["--set", "clipped_double_q=True", "--pairs", "3", "--out", str(tmp_path)])
    result = json.loads(Path(tmp_path / "cost_clipped_double_q.json").read_text())
    assert calls == [["clipped_double_q=True"], ["clipped_double_q=True"], [], ["clipped_double_q=True"], [],
                     ["clipped_double_q=True"], []]
    assert result["ratios"]["wall"] == [1.2, 1.5, 0.9]
    assert result["ratio_median"] == {"wall": 1.2, "cpu": 1.2} and result["ratio_range"]["cpu"] == [1.0, 1.2]

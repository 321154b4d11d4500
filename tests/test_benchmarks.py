"""The device benchmark times the notebook's own training, the cost benchmark takes its ratios pair by pair,
and Config changes given as text are typed."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import devices
from continuous_control import provenance
from continuous_control.agent import Config, train
from continuous_control.config import parse_overrides
from reacher import ReacherEnvironment

ROOT = Path(provenance.ROOT)

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=300, hidden=(32, 32), learn_every_until=1, learn_every_later=4)


def test_timed_training_is_the_training(tmp_path):
    """The benchmark's timers change nothing: its run scores what a plain run scores, and its times add up."""
    timed = devices.solve("cpu", 2, **SMALL)
    plain = train(
        Config(**SMALL), ReacherEnvironment(seed=0, verbose=False), str(tmp_path), 2, stop_when_solved=False, live=False
    )
    assert timed["mean"] == plain["mean"]
    # 1,001 steps an episode: from step 15 (300 transitions) every step, then at every 4th step of the run
    assert timed["updates"] == (1001 - 14) + (2002 // 4 - 1001 // 4)
    assert 0 < timed["env_s"] < timed["wall_s"] and timed["ms_per_update"] > 0
    assert timed["ms_per_env_step"] == pytest.approx(1000 * timed["wall_s"] / 2002)


def test_overrides_are_typed_against_the_config():
    parsed = parse_overrides(
        Config, ["hidden=(64, 64)", "clipped_double_q=True", "tau=1", "batch_size=512", "warmup=6000"]
    )
    assert parsed == {"hidden": (64, 64), "clipped_double_q": True, "tau": 1.0, "batch_size": 512, "warmup": 6000}
    assert type(parsed["tau"]) is float
    with pytest.raises(ValueError, match=r"clipped_double_q\b.*'yes'"):
        Config(**parse_overrides(Config, ["clipped_double_q=yes"]))
    with pytest.raises(ValueError, match=r"batch_size\b.*\b1\.5\b"):
        Config(**parse_overrides(Config, ["batch_size=1.5"]))
    with pytest.raises(ValueError, match=r"grad_clip\b.*-1\.0\b"):
        Config(**parse_overrides(Config, ["grad_clip=-1"]))
    with pytest.raises(ValueError, match="'batchsize'"):
        Config(**parse_overrides(Config, ["batchsize=5"]))
    with pytest.raises(ValueError, match="expected FIELD=VALUE"):
        Config(**parse_overrides(Config, ["batch_size"]))


def test_cost_takes_the_ratio_pair_by_pair(tmp_path, monkeypatch):
    """benchmarks.cost: changed over default within each pair (not the ratio of sums), the warm-up not counted."""
    from benchmarks import cost

    calls = []
    times = iter(
        [
            (99.0, 99.0),  # the warm-up
            (12.0, 6.0),
            (10.0, 5.0),
            (30.0, 12.0),
            (20.0, 10.0),
            (9.0, 4.0),
            (10.0, 4.0),
        ]
    )

    def fake(changes):
        calls.append(list(changes))
        return next(times)

    monkeypatch.setattr(cost, "timed", fake)
    cost.main(["--set", "clipped_double_q=True", "--pairs", "3", "--out", str(tmp_path)])
    result = json.loads(Path(tmp_path / "cost_clipped_double_q.json").read_text())
    assert calls == [
        ["clipped_double_q=True"],
        ["clipped_double_q=True"],
        [],
        ["clipped_double_q=True"],
        [],
        ["clipped_double_q=True"],
        [],
    ]
    assert result["ratios"]["wall"] == [1.2, 1.5, 0.9]
    assert result["ratio_median"] == {"wall": 1.2, "cpu": 1.2} and result["ratio_range"]["cpu"] == [1.0, 1.2]


def test_the_gpu_check_runs_its_cpu_half_and_saves_its_output(tmp_path):
    """benchmarks/device_check.sh, as the GPU machine runs it (doc/gpu.md), at one episode on the CPU."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(
        OUT=str(tmp_path),
        EPISODES="1",
        PYTHON=sys.executable,
        WHEELS=str(tmp_path / "no-wheels"),
        CUDA_VISIBLE_DEVICES="",
        TESTS="tests/test_devices.py tests/test_gpu_path.py -k cuda",
    )
    done = subprocess.run(
        ["bash", str(ROOT / "benchmarks" / "device_check.sh")], env=env, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    saved = json.loads((tmp_path / "devices.json").read_text())
    assert [run["device"] for run in saved["runs"]] == ["cpu"] and len(saved["runs"][0]["mean"]) == 1
    assert " skipped" in (tmp_path / "tests.log").read_text() and (tmp_path / "machine.txt").exists()


def test_the_device_benchmark_fails_when_a_device_fails(tmp_path):
    assert devices.main(["--devices", "cpu", "--episodes", "0", "--out", str(tmp_path / "d.json")]) == 1

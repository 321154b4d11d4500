"""The report's sweep on Ray (experiments/run.py), its whole path: the command line's --ray on a Ray it starts, and
on a cluster by address, started here on loopback with token authentication on, whose worker is killed mid-run;
both repeat the runs made without Ray. A run that fails is named with its error and its log, a result that does
not hold up changes nothing, and a missing or broken Ray is a named error. Every wait is bounded; every Ray process
and folder started here is ended and removed."""

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from continuous_control.files import FileRefused
from continuous_control.results import load_run
from experiments import run as runner

SMALL = dict(buffer_size=5_000, batch_size=32, warmup=500, hidden=(16, 16))
RUNS = [("full", 0, 1, False), ("one_step", 0, 1, False)]
SWEEP = ["--variant", "full", "one_step", "--episodes", "1", "--no-stop"]  # RUNS, with the seeds to add
DRIVER = f"import sys; from experiments import run; run.main(sys.argv[1:], **{SMALL!r})"  # the command line
WAIT = 300  # seconds: the longest any step here may take on a busy two-core machine


def results_of(folder) -> dict:
    """A run folder's numbers: every column of its score files, and its summary without times and places."""
    files = {name: np.genfromtxt(folder / name, delimiter=",", names=True) for name in ("scores.csv", "arm_scores.csv")}
    scores = {f"{name}:{column}": files[name][column] for name in files for column in files[name].dtype.names}
    scores.pop("scores.csv:wall_seconds")
    summary = json.loads((folder / "summary.json").read_text())
    for key in ("wall_seconds", "wall_seconds_to_solve", "machine", "concurrent_runs", "commit"):
        summary.pop(key, None)
    return {**scores, "summary": summary, "config": json.loads((folder / "config.json").read_text())}


def assert_same_runs(results, without_ray) -> None:
    for variant, seed, *_ in RUNS:
        ours, theirs = (results_of(root / variant / f"seed{seed}") for root in (results, without_ray))
        assert ours.keys() == theirs.keys()
        for key in ours:
            if ":" in key:  # a column of a score file
                np.testing.assert_array_equal(ours[key], theirs[key], err_msg=key)
            else:
                assert ours[key] == theirs[key], key


@pytest.fixture(scope="module")
def without_ray(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("without_ray")
    for variant, seed, episodes, stop in RUNS:
        runner.run_one(variant, seed, episodes, stop, runs=str(tmp / "runs"), results=str(tmp / "results"), **SMALL)
    return tmp / "results"


def children() -> list:
    """The processes this one started that still run."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        if int(fields[1]) == os.getpid() and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_the_command_line_runs_on_a_local_ray_and_names_each_failing_run_with_its_error_and_log(
    tmp_path, without_ray, capsys
):
    """`--ray` with no address: a Ray of --jobs CPUs started here (even where a `ray start` head runs), the runs'
    results equal to those made without Ray; seed -1, refused by Config, fails with its error's last line and its
    log, which holds the traceback after a line naming the node; nothing of Ray runs on afterwards."""
    args = ["--seeds", "0", "-1", "--jobs", "2", "--ray", "--results", str(tmp_path / "results")]
    before = set(children())  # what other tests in this worker left running is not this command's
    with pytest.raises(SystemExit) as exit_:
        runner.main(SWEEP + args + ["--runs", str(tmp_path / "runs")], **SMALL)
    assert re.fullmatch(r"2 of 4 runs failed: (full|one_step) seed -1, (full|one_step) seed -1", str(exit_.value))
    said = capsys.readouterr()
    for variant in ("full", "one_step"):
        log = tmp_path / "runs" / f"{variant}-seed-1.log"
        line = f"failed {variant} seed -1: ValueError: Config.seed must be >= 0, got -1; its log: "
        assert f"{line}{os.uname().nodename}:{log}\n" in said.out + said.err
        text = log.read_text()
        assert text.startswith(f"--- {variant} seed -1: attempt 1 of 3 on {os.uname().nodename}")
        assert "Traceback" in text and text.rstrip().endswith("ValueError: Config.seed must be >= 0, got -1")
    assert_same_runs(tmp_path / "results", without_ray)
    deadline = time.monotonic() + 120  # a bound for a process that stays, far past a busy machine's time
    while set(children()) - before and time.monotonic() < deadline:  # Ray's processes end as it shuts down
        time.sleep(0.5)
    assert not set(children()) - before


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def until(what, seconds: float, process=None):
    """`what()` once it is true, polled; a failure once `seconds` pass or `process` ends first."""
    deadline = time.monotonic() + seconds
    while not (found := what()):
        assert time.monotonic() < deadline, f"gave up after {seconds} s"
        assert process is None or process.poll() is None, f"the process ended first ({process.returncode})"
        time.sleep(0.2)
    return found


def reachable(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture
def cluster():
    """A one-node Ray cluster started as the README says (the token where Ray keeps it, `ray start --head` with
    token authentication on), on loopback; its address. Every process of it is ended afterwards, and its folder
    removed."""
    port = free_port()
    env = {**os.environ, "RAY_AUTH_MODE": "token", runner.LOOPBACK: "0"}
    ray = Path(sys.executable).with_name("ray")
    subprocess.run([ray, "get-auth-token", "--generate"], env=env, capture_output=True, check=True, timeout=WAIT)
    temp = tempfile.mkdtemp(prefix="ray-")  # short: Ray's socket paths must fit 107 characters
    command = [ray, "start", "--head", "--block", "--port", str(port), "--num-cpus", "2", "--temp-dir", temp]
    with open(os.path.join(temp, "head.log"), "w") as log:
        head = subprocess.Popen(
            command + ["--include-dashboard", "false", "--disable-usage-stats"],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group, ended whole
        )
    try:
        until(lambda: reachable(port), WAIT, head)
        yield f"127.0.0.1:{port}"
    finally:
        head.send_signal(signal.SIGTERM)  # --block: it stops its Ray as it ends
        try:
            head.wait(timeout=60)
            deadline = time.monotonic() + 60
            while group_runs(head.pid) and time.monotonic() < deadline:  # Ray's servers end after it
                time.sleep(0.5)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(head.pid, signal.SIGKILL)  # whatever of it is left
            head.wait(timeout=60)
            shutil.rmtree(temp, ignore_errors=True)


def group_runs(group: int) -> bool:
    """Whether a process of the process group `group` is still there."""
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_cluster_by_address_with_token_auth_retries_a_killed_worker_to_the_same_results(
    cluster, tmp_path, without_ray
):
    """The driver, on the command line, given only the head's address (the token where Ray keeps it, as on every
    node): a run whose worker is killed by SIGKILL mid-run is retried, logged as a retry, resumes from its
    checkpoint, and both runs' results equal those made without Ray."""
    results, runs = tmp_path / "results", tmp_path / "runs"
    args = SWEEP + ["--seeds", "0", "--ray", cluster, "--results", str(results), "--runs", str(runs)]
    log = runs / "full-seed0.log"
    env = {**os.environ, runner.LOOPBACK: "0"}  # 127.0.0.1 stays loopback, where the head listens
    env.pop("RAY_AUTH_MODE", None)  # the driver finds the token itself (a local Ray before set it here)
    with open(tmp_path / "driver.out", "w") as out:
        driver = subprocess.Popen([sys.executable, "-c", DRIVER, *args], env=env, stdout=out, stderr=subprocess.STDOUT)
        try:
            # trained and checkpointed; its evaluation still runs
            until(lambda: (runs / "full" / "seed0" / "summary.json").exists(), WAIT, driver)
            pid = int(re.search(r"attempt 1 of 3 on \S+ \(pid (\d+)", log.read_text())[1])
            os.kill(pid, signal.SIGKILL)
            assert driver.wait(timeout=WAIT) == 0, (tmp_path / "driver.out").read_text()
        finally:
            if driver.poll() is None:  # a failure above: Ctrl-C, as at a terminal, then ended for sure
                driver.send_signal(signal.SIGINT)
                try:
                    driver.wait(timeout=60)
                finally:
                    driver.kill()
                    driver.wait(timeout=60)
    said = (tmp_path / "driver.out").read_text()
    assert "finished full seed 0: solved at None" in said and f"(log: {os.uname().nodename}:{log})" in said
    attempts = log.read_text().split("--- full seed 0: ")
    assert len(attempts) == 3 and attempts[2].startswith("attempt 2 of 3") and "a retry" in attempts[2]
    assert "finished after episode 1: nothing to train" in attempts[2]  # resumed from its checkpoint
    assert_same_runs(results, without_ray)


def test_ctrl_c_ends_the_sweep_with_one_line_that_says_how_to_resume(tmp_path):
    """Ctrl-C at a terminal (SIGINT to the command's process group) while a run trains: the sweep ends within a
    bounded time with one line saying how to resume, and leaves no Ray process or folder behind."""
    folders = set(Path(tempfile.gettempdir()).glob("ray-*"))
    long = [*SWEEP[:3], "--episodes", "200", *SWEEP[5:]]  # still training when the signal comes, on a busy machine
    args = long + ["--seeds", "0", "--ray", "--results", str(tmp_path / "results"), "--runs", str(tmp_path / "runs")]
    with open(tmp_path / "driver.out", "w") as out:
        driver = subprocess.Popen(
            [sys.executable, "-c", DRIVER, *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # SIGINT as at a terminal: a background job of a shell (`make test &`) starts with it ignored
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )
        try:
            until(lambda: (tmp_path / "runs" / "full-seed0.log").exists(), WAIT, driver)
            os.killpg(driver.pid, signal.SIGINT)
            assert driver.wait(timeout=WAIT) == 1
            until(lambda: not group_runs(driver.pid), 60)  # Ray's processes end with it
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(driver.pid, signal.SIGKILL)  # only where the test failed
            driver.wait(timeout=60)
    last = (tmp_path / "driver.out").read_text().strip().splitlines()[-1]
    assert re.fullmatch(r"Interrupted: 2 of 2 runs unfinished\. Run the same command again to resume them.*", last)
    assert set(Path(tempfile.gettempdir()).glob("ray-*")) <= folders


@pytest.mark.parametrize("broken", ["missing", "init fails", "no head"])
def test_a_missing_or_broken_ray_is_a_named_error(broken, tmp_path, monkeypatch):
    """One line, at once: no Ray installed, a Ray that does not start, no head at the address given."""
    where = []
    if broken == "missing":
        monkeypatch.setitem(sys.modules, "ray", None)  # what `import ray` meets without it
        said = "The sweep runs on Ray, which does not import"
    elif broken == "init fails":
        import ray

        monkeypatch.setattr(ray, "init", lambda **_: (_ for _ in ()).throw(RuntimeError("no raylet")))
        said = "Ray did not start at local: RuntimeError: no raylet"
    else:
        where = ["--ray", f"127.0.0.1:{free_port()}"]  # nothing listens there
        said = f"No Ray head answers at {where[1]}"
    with pytest.raises(SystemExit, match=re.escape(said)):
        runner.main(["--seeds", "0", "--episodes", "1", "--results", str(tmp_path), *where])


def test_the_report_set_times_the_seeds_alone_on_this_machine_and_not_on_a_cluster(monkeypatch):
    """`make experiments`: every full-agent seed runs alone (recorded as alone) before any ablation starts, and the
    ablations `--jobs` at a time; on a cluster the seeds come first but hold nothing back."""
    sweeps = []
    monkeypatch.setattr(
        runner, "finished", lambda results, variant, seed, episodes, stop, runs: variant == "full" and seed == 0
    )
    monkeypatch.setattr(runner, "ray_sweep", lambda batches, address, *_, **__: sweeps.append(batches) or [])
    runner.main(["--all", "--jobs", "3"])
    runner.main(["--all", "--ray", "head:6379"])
    (alone, one, one_), (shared, jobs, jobs_) = sweeps[0]
    assert [r[:2] for r in alone] == [("full", k) for k in range(1, 10)] and one == one_ == 1
    assert shared and all(r[0] != "full" for r in shared) and jobs == jobs_ == 3
    assert {v for v, seed, *_ in shared if seed == 9} == set(runner.TEN_SEEDS) - {"full"}
    assert {"n3", "n10", "per_arm_noise"} <= {v for v, s, *_ in shared if s == 2}
    [(everything, limit, concurrent)] = sweeps[1]
    assert everything == alone + shared and limit is concurrent is None


def test_a_result_that_does_not_hold_up_leaves_the_folder_as_it_was(tmp_path, without_ray):
    """What comes back is checked whole before the folder changes: none, another file, or a damaged score file
    is one named error; a good result replaces the old one, never through a symlink planted there."""
    good = {p.name: p.read_bytes() for p in (without_ray / "full" / "seed0").iterdir() if p.name != "manifest.json"}
    folder = tmp_path / "full" / "seed0"
    folder.mkdir(parents=True)
    (folder / "summary.json").write_text("{}")
    (folder / "stale.csv").write_text("1\n")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    damaged = {**good, "scores.csv": good["scores.csv"].replace(b"\n1,", b"\n2,", 1)}
    for files, named in (
        ({}, "sent back no result files"),
        ({**good, "../x": b""}, "not a run's result files"),
        (damaged, f"{folder / 'scores.csv'}"),
    ):
        with pytest.raises(FileRefused, match=re.escape(named)):
            runner.replace_run(str(folder), runner.checked("full seed 0", str(folder), files))
        assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    got = runner.replace_run(str(folder), runner.checked("full seed 0", str(folder), good))
    # no temporary file left; a file no manifest listed is not the sweep's to remove
    assert sorted(p.name for p in folder.iterdir()) == sorted([*good, "manifest.json", "stale.csv"])
    assert got["summary"] == load_run(str(folder))["summary"] == json.loads(good["summary.json"])
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "full" / "seed1").symlink_to(elsewhere)
    with pytest.raises(FileRefused, match="symbolic link"):
        runner.replace_run(str(tmp_path / "full" / "seed1"), good)
    assert not any(elsewhere.iterdir())


def test_a_run_log_is_never_written_through_a_symlink(tmp_path):
    target = tmp_path / "target"
    target.write_text("mine\n")
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "full-seed0.log").symlink_to(target)
    with pytest.raises(FileRefused, match="symbolic link"):
        runner.open_log(str(tmp_path / "runs" / "full-seed0.log"))
    assert target.read_text() == "mine\n"

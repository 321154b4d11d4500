"""The judge (grader/): each blank judged alone, by its results on fresh inputs against the reference's, with
the student's code in a sandbox that shares nothing. One mistake costs one point, any correct way of writing
a blank earns it, and no attack on the judge earns anything or changes any other blank or submission.
tests/test_nbgrader.py runs submissions through nbgrader and the grading kernel."""

import os
import socket
import subprocess
import sys
import tempfile
import threading

import nbformat
import numpy as np
import pytest

import grader
from benchmarks.grading import (
    ALTERNATIVES,
    ATTACKS,
    KEYWORDS,
    LEFT_BEHIND,
    READS_THE_KEY,
    SHORTCUTS,
    armed,
    cheats,
    looping,
)
from grader import cases, sandbox, wire
from grader.judge import Judge, differs, read_key
from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
SOLVED = grader.blank_sources(LESSON)
BLANKS = list(SOLVED)
STUBS = grader.blank_sources(nbformat.read(student.EDITION, as_version=4))


def passed(judge, blank, source) -> bool:
    return judge.grade(blank, source)["passed"]


def test_the_judge_sees_every_blank_of_the_edition(judge):
    assert judge.blanks() == BLANKS == student.blank_ids(LESSON)


@pytest.mark.parametrize("blank", BLANKS)
def test_a_blank_earns_its_point_alone_and_loses_it_as_handed_out_or_raising(judge, blank):
    # every other blank is the edition's stub, which raises: nothing of the student's other blanks is used
    assert passed(judge, blank, SOLVED[blank])
    assert not passed(judge, blank, STUBS[blank]) and not passed(judge, blank, None)
    raising = SOLVED[blank].replace('"""\n', '"""\n' + " " * 4 + "raise ValueError('not yet')\n", 1)
    assert raising != SOLVED[blank] and not passed(judge, blank, raising)


@pytest.mark.parametrize("blank", BLANKS)
def test_a_second_correct_way_of_writing_each_blank_earns_its_point(judge, blank):
    assert passed(judge, blank, ALTERNATIVES[blank])


def test_keyword_arguments_and_the_real_signature_earn_the_point(judge):
    assert passed(judge, "ddpg-target", KEYWORDS)


def test_the_inputs_are_new_at_every_grading():
    first, second = (cases.draw("importance-weights", np.random.default_rng()) for _ in range(2))
    assert not np.array_equal(first[0]["priorities"], second[0]["priorities"])


def test_the_comparison_tells_right_from_wrong():
    want = {"w": np.arange(3.0), "n": 2, "ok": True}
    assert differs("b", want, {"w": np.arange(3.0), "n": 2, "ok": True}) is None
    assert "w" in differs("b", want, {"w": np.arange(3.0) + 1e-3, "n": 2, "ok": True})
    assert "shape" in differs("b", want, {"w": np.arange(4.0), "n": 2, "ok": True})
    assert differs("b", want, {"w": np.arange(3.0), "n": 2}) is not None
    assert differs("b", want, {"w": np.arange(3.0), "n": 2, "ok": 1}) is not None  # a bool is not a number


@pytest.mark.parametrize(
    "line",
    [b'{"~array": ["|O", [1], ""]}', b'{"~array": ["<f8", [2], "AAAAAAAA8D8="]}', b"[" * 100_000, b"{nope"],
    ids=["objects", "short", "deep", "not JSON"],
)
def test_the_wire_refuses_what_is_not_plain_data(line):
    with pytest.raises(wire.WireError):
        wire.decode(line)


def test_the_wire_carries_arrays_bit_for_bit():
    message = {"a": np.float32([1.5, -0.0, np.nan]), "b": [np.int64([[1], [2]]), None, "x", 3.0]}
    back = wire.decode(wire.encode(message))
    assert back["a"].dtype == np.float32 and back["a"].tobytes() == message["a"].tobytes()
    assert np.array_equal(back["b"][0], message["b"][0]) and back["b"][1:] == [None, "x", 3.0]


def test_a_damaged_answer_key_is_refused_by_name(tmp_path):
    bad = tmp_path / "key.json"
    for text in ("{", "[]", '{"learn": 1}'):
        bad.write_text(text)
        with pytest.raises(ValueError, match="answer key"):
            read_key(bad, BLANKS)
    os.symlink(bad, tmp_path / "link.json")
    with pytest.raises(OSError):
        read_key(tmp_path / "link.json", BLANKS)


@pytest.fixture(scope="module")
def listener():
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    server.settimeout(0.5)
    yield server
    server.close()


def attack(name: str, port: int, folder) -> str:
    return armed(name, port, str(folder))


@pytest.mark.parametrize("name", ATTACKS)
def test_an_attack_earns_nothing_and_changes_nothing_after_it(judge, listener, tmp_path, name):
    (tmp_path / "answer.txt").write_text("BEGIN SOLUTION weights / weights.max()")
    verdict = judge.grade("importance-weights", attack(name, listener.getsockname()[1], tmp_path))
    assert not verdict["passed"] and "SyntaxError" not in verdict["why"], verdict  # the attack ran, and failed
    with pytest.raises(TimeoutError):  # no connection from the sandbox reached this machine
        listener.accept()
    assert [path.name for path in tmp_path.iterdir()] == ["answer.txt"]
    # the next blank: graded as ever, and nothing the attack left behind is there
    probe = SOLVED["importance-weights"] + "".join(
        f"\nassert not __import__('os').path.exists({path!r})" for path in LEFT_BEHIND
    )
    assert passed(judge, "importance-weights", probe) and passed(judge, "ddpg-critic-loss", SOLVED["ddpg-critic-loss"])


def test_the_answer_key_is_out_of_reach_even_inside_the_checkout(judge):
    assert not passed(judge, "importance-weights", READS_THE_KEY)


def test_the_sandbox_has_no_network_no_environment_and_no_writable_place_but_its_own(judge):
    source = """
import os, socket
_seen = (sorted(os.environ), os.getuid(), os.access("/opt/contestant", os.W_OK), os.access("/", os.W_OK),
         os.path.exists(LESSON) or os.path.exists(os.path.expanduser("~root/.bash_history")),
         len([p for p in os.listdir("/proc") if p.isdigit()]) < 5, os.getpid())
def importance_weights(priorities, total, size, beta):
    return np.array([hash(repr(_seen)) % 1000], np.float64)
"""
    os.environ["GRADER_TEST_SECRET"] = "instructor"
    source = source.replace("LESSON", repr(student.LESSON))
    probe = source.replace("return np.array([hash(repr(_seen)) % 1000], np.float64)", "raise RuntimeError(repr(_seen))")
    why = judge.grade("importance-weights", probe)["why"]
    seen = eval(why.split(": ", 1)[1])  # the probe's own report, sent back as its error
    own = {"HOME", "LANG", "MPLCONFIGDIR", "NUMBA_CACHE_DIR", "OMP_NUM_THREADS", "PATH", "TMPDIR"}
    assert own <= set(seen[0]) <= own | {"PWD", "TORCHINDUCTOR_CACHE_DIR"}  # what bwrap and torch set themselves
    assert seen[1] == 65534 and seen[2:5] == (False, False, False) and seen[5] and seen[6] > 1


def test_an_endless_loop_in_any_blank_costs_that_blank_within_the_limit():
    short = Judge(cpu=3)
    try:
        for blank in BLANKS:
            why = short.grade(blank, looping(SOLVED[blank]))["why"]
            assert why.startswith("TimeoutError"), f"{blank}: {why}"
        assert passed(short, "ddpg-critic-loss", SOLVED["ddpg-critic-loss"])  # the next is graded as ever
    finally:
        short.close()


def test_a_runaway_allocation_costs_its_blank(judge):
    for grab in ("bytearray(1 << 40)", "torch.empty(1 << 38)", "[bytearray(1 << 27) for _ in range(1 << 10)]"):
        source = SOLVED["importance-weights"].replace('"""\n', f'"""\n    _ = {grab}\n', 1)
        assert not passed(judge, "importance-weights", source), grab  # out of memory, or of time zeroing it
    assert passed(judge, "importance-weights", SOLVED["importance-weights"])


def test_a_busy_machine_costs_no_correct_blank_its_point():
    burners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    short = Judge(cpu=3)
    try:
        assert all(passed(short, blank, SOLVED[blank]) for blank in BLANKS)
    finally:
        short.close()
        for burner in burners:
            burner.kill()
            burner.wait()


def test_two_submissions_graded_at_once_cannot_touch_each_other(listener, tmp_path):
    cheats = {name: attack(name, listener.getsockname()[1], tmp_path) for name in ATTACKS if name != "sleeps"}
    results = {}

    def grade(who, sources):
        judge = Judge(cpu=5)
        try:
            results[who] = [passed(judge, blank, source) for blank, source in sources]
        finally:
            judge.close()

    honest = [(blank, SOLVED[blank]) for blank in BLANKS] * 2
    cheat = [("importance-weights", source) for source in cheats.values()]
    cheat += [(blank, source) for sources in CHEATS.values() for blank, source in sources.items()]
    threads = [threading.Thread(target=grade, args=args) for args in (("honest", honest), ("cheat", cheat))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(1200)
    assert results["honest"] == [True] * len(honest) and results["cheat"] == [False] * len(cheat)


def test_a_hand_in_with_a_symbolic_link_is_refused_by_name(tmp_path):
    from grader import kernel

    (tmp_path / "Continuous_Control.ipynb").write_text("{}")
    os.symlink(student.LESSON, tmp_path / "notes.ipynb")
    transformer = kernel.Transformer(None, str(tmp_path))
    try:
        assert transformer(["pass"]) == ["pass\n"]
        with pytest.raises(AssertionError, match="symbolic link.*notes.ipynb"):
            transformer.grade("importance-weights")
    finally:
        transformer.judge.close()


def test_the_command_line_gives_the_points_grading_gives(tmp_path):
    key = student.write_key(str(tmp_path))
    assert oct(os.stat(key).st_mode & 0o777) == "0o600"
    for notebook, code, count in ((student.LESSON, 0, "13 of 13"), (student.EDITION, 1, "0 of 13")):
        done = subprocess.run(
            [sys.executable, "-m", "grader", notebook, "--key", key], capture_output=True, text=True, timeout=300
        )
        assert done.returncode == code and f"{count} blanks pass (graded)" in done.stdout, done.stdout + done.stderr


# --- attacks on the judge's implementation: each earns nothing, costs only its own blank, and leaves the
# next call as it would be without it (benchmarks/grading.py holds the cheats) ---

CHEATS = cheats(SOLVED)


@pytest.mark.parametrize("name", [name for name in CHEATS if name.startswith("forged")])
def test_a_forged_reply_fails_its_blank_and_the_next_blank_is_judged_as_ever(judge, name):
    (blank, source), *_ = CHEATS[name].items()
    assert not passed(judge, blank, source)
    for after in ("importance-weights", "ddpg-critic-loss", "sum-tree-walk"):  # the reference is in step
        assert passed(judge, after, SOLVED[after]), after


def test_nothing_a_blank_leaves_in_any_writable_place_reaches_the_next(judge):
    sources = CHEATS["state left for the next blank"]
    assert not passed(judge, "importance-weights", sources["importance-weights"])
    assert judge.grade("new-priority", sources["new-priority"])["why"].endswith("nothing was left behind")


@pytest.mark.parametrize(
    "name, why",
    [
        ("children over the sandbox's memory", ""),
        ("children over the sandbox's processor time", "across its processes"),
        ("40 spinning processes", "across its processes"),
    ],
)
def test_the_limits_hold_for_the_sandbox_as_a_whole(judge, name, why):
    (blank, source), *_ = CHEATS[name].items()
    verdict = judge.grade(blank, source)
    assert not verdict["passed"] and why in verdict["why"], (verdict, sandbox.limits())
    assert passed(judge, "importance-weights", SOLVED["importance-weights"])


@pytest.mark.parametrize("name", list(SHORTCUTS))
def test_a_shortcut_round_the_computation_earns_nothing(judge, name):
    blank, source = SHORTCUTS[name]
    assert not passed(judge, blank, source)


def test_the_ou_step_passes_written_any_equivalent_way(judge):
    other = """
@method_of(OrnsteinUhlenbeck)
def sample(self):
    keep = 1.0 - self.kappa
    noise = torch.normal(torch.zeros(self.state.shape), 1.0, generator=self.generator)
    self.state = self.state * keep + noise * (self.scale * math.sqrt(1.0 - keep * keep))
    return self.state
"""
    assert passed(judge, "ou-step", "import math\n" + other)


@pytest.mark.parametrize(
    "want, got, same",
    [
        (np.float32([1, np.nan, np.inf]), np.float32([1, np.nan, np.inf]), True),
        (np.float32([1, 2, 3]), np.float32([1, np.nan, 3]), False),  # NaN passes no tolerance
        (np.float32([1, 2, 3]), np.float32([1, np.inf, 3]), False),
        (np.float32([1, np.nan, 3]), np.float32([1, 2, 3]), False),
        (np.float32([1, np.inf, 3]), np.float32([1, -np.inf, 3]), False),
        (np.float64([1.0, 2.0]), np.int64([1, 2]), False),  # integers for floats
        (np.int64([2**62, 1]), np.int64([2**62 + 1, 1]), False),  # compared as integers, not as floats
        (np.int64([2**62, 1]), np.int64([2**62, 1]), True),
        (np.float64([1.0]), np.float64([1.0, 1.0]), False),
        (0.5, 10**400, False),  # no OverflowError
        (0.5, float("nan"), False),
        (float("nan"), float("nan"), True),
        (3, 3.0, True),
        (True, 1, False),
        ("a", None, False),
        ([np.float64([1.0])], [np.float64([1.0]), 1], False),
    ],
)
def test_the_comparison_is_exact_and_total(want, got, same):
    assert (differs("b", {"x": want}, {"x": got}) is None) is same


def test_a_blank_is_judged_once_however_many_copies_of_its_check_run(monkeypatch):
    from grader import kernel

    transformer = kernel.Transformer(None, "/nonexistent")
    calls = []
    monkeypatch.setattr(transformer.judge, "grade", lambda blank, source: calls.append(blank) or {"passed": True})
    check = next(c["source"] for c in transformer.judge.edition if c["id"] == "check-importance-weights")
    try:
        assert transformer([check]) == ["__grade__('importance-weights')\n"]
        for _ in range(3):
            transformer.grade("importance-weights")
        assert calls == ["importance-weights"]
    finally:
        transformer.judge.close()


def test_a_spent_hand_in_fails_its_remaining_blanks_without_running_them():
    short = Judge(budget=0)
    try:
        assert "spent" in short.grade("importance-weights", SOLVED["importance-weights"])["why"]
        assert short.contestant is None  # nothing started
    finally:
        short.close()


def test_the_sandbox_s_limits_and_filter_are_in_place(judge):
    probe = """
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_seen = (open("/proc/self/status").read().split("CapEff:")[1].split()[0],
         open("/proc/self/status").read().split("Seccomp:")[1].split()[0],
         _libc.unshare(0x10000000), _libc.mount(b"none", b"/scratch", b"tmpfs", 0, None),
         os.access("/dev", os.W_OK), os.access("/dev/shm", os.W_OK))
raise RuntimeError(repr(_seen))
"""
    why = judge.grade("importance-weights", probe)["why"]
    assert eval(why.split(": ", 1)[1]) == ("0000000000000000", "2", -1, -1, False, False)


def test_grading_puts_nothing_in_the_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where tempfile would put anything
    short = Judge(cpu=3)
    try:
        assert passed(short, "importance-weights", SOLVED["importance-weights"])
        assert list(tmp_path.iterdir()) == []  # while the sandboxes run, too: a kill leaves nothing behind
    finally:
        short.close()

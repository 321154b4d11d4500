"""The judge: decides each blank's point, in a process where no student code ever runs.

    python -m grader Continuous_Control.ipynb               # a student's own check: the visible checks, sandboxed
    python -m grader Continuous_Control.ipynb --key KEY     # the grade: one line per blank, as nbgrader gives it

Trusted by: the instructor. It holds the reference (the answer key: the lesson's own blanks, from `--key`, a
JSON file {blank: source}, or the lesson itself where the project has it) and never runs a line of a
submission. For each blank it draws fresh inputs (`grader.cases.draw`, from a new seed each time), sends them
to two sandboxes (`grader.sandbox`): the reference's, which runs the given code with the key's blanks and no
student code, and the submission's contestant, which runs the given code with the student's cell for that
blank and the edition's stubs for every other (one mistake costs one point). Each request runs in a fresh box
(`grader.confine`). Both replies are read at once, whole, within a bound of bytes and of time, and compared
here (`differs`): a point needs the same results, within a float's rounding, on inputs that no code could know
in advance.

Every call stands alone and fails closed: any error (a reply too big, late or not plain data, a sandbox that
dies, a comparison that cannot be made, the judge's own) fails that blank with one line a student can act on,
and the sandbox it came from is ended, so the next call starts from a fresh one. A hand-in's grading has a
bound of `HAND_IN` seconds in all; once it is spent, the blanks not yet graded fail.
"""

import argparse
import contextlib
import json
import math
import os
import secrets
import select
import signal
import subprocess
import time
from pathlib import Path

import numpy as np

import grader
from grader import cases, contestant, sandbox, wire

CPU = float(os.environ.get("GRADER_CPU", 10))  # processor seconds a blank may use (a correct one: about 1)
MEMORY = int(os.environ.get("GRADER_MEMORY_GB", 4)) << 30  # bytes a blank may allocate on top of the libraries
START = 180.0  # seconds a sandbox may take to start (torch and the given code, loaded once)
HAND_IN = float(os.environ.get("GRADER_HAND_IN", 600))  # seconds the grading of one hand-in may take, in all
SLACK = 2.0  # processor seconds a sandbox's PID 1 may add to a request's own, in the control group's count
KEY_BYTES = 1 << 20


def read_key(path: str | Path, blanks: list[str]) -> dict:
    """The answer key: a regular JSON file {blank: source} with a string for every blank, nothing else."""
    path = Path(path)
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as file:
        if not os.path.isfile(path) or os.fstat(file.fileno()).st_size > KEY_BYTES:
            raise ValueError(f"the answer key {path} is not a regular file of at most {KEY_BYTES} bytes")
        try:
            key = json.loads(file.read(KEY_BYTES + 1))
        except ValueError as error:
            raise ValueError(f"the answer key {path} is not JSON: {error}") from None
    if not (isinstance(key, dict) and set(key) == set(blanks) and all(isinstance(v, str) for v in key.values())):
        raise ValueError(f"the answer key {path} must map each of the {len(blanks)} blanks to its source, and no more")
    return key


def default_key() -> dict | None:
    """The lesson's own blanks, where this is the project (a hand-out has no lesson)."""
    lesson = grader.HERE.parent / "Continuous_Control.ipynb"
    if not lesson.is_file():
        return None
    import nbformat

    return grader.blank_sources(nbformat.read(str(lesson), as_version=4))


def one_line(text) -> str:
    return " ".join(str(text).split())[:500]


class Sandbox:
    """A contestant process in a sandbox of its own (`grader.sandbox`), seen from the judge: started with the
    given code, then one request at a time through `talk`. If it misbehaves it is ended, and the next request
    starts a new one."""

    def __init__(self, given: list[str], cpu: float = CPU, memory: int = MEMORY):
        self.given, self.limits = given, {"cpu": cpu, "memory": memory}
        self.wall = contestant.WALL * cpu + 30  # the contestant's own bound on a child, and a margin
        self.process = self.group = None

    def spawn(self) -> bytes:
        """A new sandbox; returns its first message (the given code), whose answer is {"ready": True}."""
        self.group = sandbox.Cgroup()
        self.process = subprocess.Popen(
            self.group.wrap(sandbox.command()),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for pipe in (self.process.stdin, self.process.stdout):
            os.set_blocking(pipe.fileno(), False)
        return wire.encode({"given": self.given, "limits": self.limits})

    def close(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.group.kill()
            self.process.wait()
            for pipe in (self.process.stdin, self.process.stdout):
                with contextlib.suppress(OSError):
                    pipe.close()
            self.process = None
        if self.group is not None:
            self.group.remove()
            self.group = None


class _Call:
    """One sandbox's side of a `talk`: its message going out, its answer (one line) coming in."""

    def __init__(self, box: Sandbox, message: bytes, cpu: float | None):
        self.box, self.out, self.got, self.answer = box, memoryview(message), bytearray(), None
        self.spent = box.group.cpu() if cpu is not None else None  # the sandbox's processor time before it

    def fail(self, why: str) -> None:
        self.answer = {"error": why}
        self.box.close()

    def write(self) -> None:
        try:
            self.out = self.out[os.write(self.box.process.stdin.fileno(), self.out[: 1 << 16]) :]
        except BlockingIOError:
            pass
        except OSError:
            self.fail("the code's sandbox ended without an answer")

    def read(self) -> None:
        try:
            chunk = os.read(self.box.process.stdout.fileno(), 1 << 16)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        if not chunk:
            return self.fail("the code's sandbox ended without an answer")
        self.got += chunk
        end = self.got.find(b"\n")
        if end < 0:
            if len(self.got) > wire.REPLY:
                self.fail(f"a reply of more than {wire.REPLY} bytes")
        elif end + 1 != len(self.got):
            self.fail("the reply was not one line")
        else:
            try:
                reply = wire.decode(bytes(self.got[:end]), wire.REPLY)
            except wire.WireError as error:
                return self.fail(f"the answer is not plain data: {error}")
            self.answer = reply if isinstance(reply, dict) else {"error": "the answer is not plain data"}

    def over(self, cpu: float | None) -> bool:
        """Whether the sandbox's processes, all together, used more than `cpu` seconds (and SLACK) since."""
        used = self.box.group.cpu() if self.spent is not None else None
        return used is not None and used - self.spent > cpu + SLACK


def talk(calls: list, bound: float, cpu: float | None = None) -> list[dict]:
    """[(sandbox, message bytes)] -> each one's answer (a dict; {"error": ...} if it failed), all at once:
    every message written while every answer is read, each answer one line of at most `wire.REPLY` bytes, all
    within `bound` seconds, and, where the sandbox's control group counts it, within `cpu` processor seconds
    (and SLACK) for all its processes together. A sandbox that fails is ended."""
    deadline, calls = time.monotonic() + bound, [_Call(box, message, cpu) for box, message in calls]
    while live := [call for call in calls if call.answer is None]:
        left = deadline - time.monotonic()
        if left <= 0:
            for call in live:
                call.fail(f"TimeoutError: no answer in {bound:g} s (a loop that waits, or sleeps?)")
            break
        readers = {call.box.process.stdout.fileno(): call for call in live}
        writers = {call.box.process.stdin.fileno(): call for call in live if call.out}
        readable, writable, _ = select.select(list(readers), list(writers), [], min(left, 0.1))
        for fd in writable:
            if writers[fd].answer is None:
                writers[fd].write()
        for fd in readable:
            if readers[fd].answer is None:
                readers[fd].read()
        for call in live:
            if call.answer is None and call.over(cpu):
                call.fail(f"TimeoutError: the code used its {cpu:g} s of processor time, across its processes")
    return [call.answer for call in calls]


# --- the comparison: exact about what it compares, total over what it may be sent ---

RTOL, ATOL = 1e-4, 1e-5  # a float's rounding, with another order of operations


def _kind(dtype) -> str:
    """b (bool), i (any integer) or f (any real float); complex and the rest are never an answer."""
    return {"b": "b", "i": "i", "u": "i", "f": "f"}.get(dtype.kind, dtype.kind)


def _arrays_differ(name: str, want: np.ndarray, got: np.ndarray, exact: bool) -> str | None:
    if got.shape != want.shape:
        return f"{name} has the shape {got.shape}, not {want.shape}"
    if (exact and got.dtype != want.dtype) or _kind(got.dtype) != _kind(want.dtype):
        return f"{name} is {got.dtype}, not {want.dtype}"
    if _kind(want.dtype) in "bi":  # integers of any size: compared as integers, never as floats
        return None if np.array_equal(got, want) else f"{name} differs"
    a, b = want.astype(np.float64), got.astype(np.float64)
    finite = np.isfinite(a)
    if not np.array_equal(finite, np.isfinite(b)) or not np.array_equal(a[~finite], b[~finite], equal_nan=True):
        return f"{name} has NaN or inf where the right values have none, or the other way round"
    with np.errstate(all="ignore"):
        gap = np.abs(a - b)
        if np.all(gap[finite] <= ATOL + RTOL * np.abs(a[finite])):
            return None
    return f"{name} differs from the right values (by up to {np.max(gap[finite]):.3g})"


def _numbers_differ(name: str, want, got) -> str | None:
    if isinstance(got, bool) or not isinstance(got, (int, float)):
        return f"{name} is a {type(got).__name__}, not a number"
    if isinstance(want, int) and isinstance(got, int):
        return None if got == want else f"{name} is {got}, not the right number"
    try:
        a, b = float(want), float(got)
    except OverflowError:
        return f"{name} is far too large"
    if not (math.isfinite(a) and math.isfinite(b)):
        return None if (a == b or (math.isnan(a) and math.isnan(b))) else f"{name} is {b}, not the right number"
    return None if abs(a - b) <= ATOL + RTOL * abs(a) else f"{name} is {b:.6g}, not the right number"


def differs(blank: str, want, got, name: str = "") -> str | None:
    """Why `got` is not `want` (plain data both, from `wire`), or None when it matches. Total: any two values
    compare, without raising or warning, whatever their types, sizes, dtypes or non-finite values."""
    label = name or "the result"
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return f"{label} has the parts {sorted(got)[:20] if isinstance(got, dict) else type(got).__name__}"
        return next((why for key in want if (why := differs(blank, want[key], got[key], key))), None)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            return f"{label} is not a list of {len(want)}"
        return next((why for k, w in enumerate(want) if (why := differs(blank, w, got[k], f"{label}[{k}]"))), None)
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{label} is a {type(got).__name__}, not an array"
        exact = blank in cases.CASES and cases.CASES[blank].exact_dtype  # a dtype the docstring promises
        return _arrays_differ(label, want, got, exact)
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        return _numbers_differ(label, want, got)
    return None if type(got) is type(want) and got == want else f"{label} is not the right {type(want).__name__}"


class Judge:
    """Grades each blank of a submission alone (see the module's docstring)."""

    def __init__(
        self, edition=None, key: dict | None = None, cpu: float = CPU, memory: int = MEMORY, seed=None, budget=None
    ):
        self.edition = grader.read_edition(edition)
        self.key = default_key() if key is None else key
        self.rng = np.random.default_rng(secrets.randbits(128) if seed is None else seed)
        self.cpu, self.memory = cpu, memory
        self.budget = HAND_IN if budget is None else budget  # seconds, from the first call on
        self.reference = self.contestant = self.deadline = None

    def given(self, blanks: dict | None = None) -> list[str]:
        """The edition's given code, in order, with `blanks`' sources for the blanks (else the edition's stubs)."""
        return [
            cell["source"] for cell in grader.program(self.edition, sources=blanks or {}) if cell["kind"] != "check"
        ]

    def blanks(self) -> list[str]:
        return grader.blank_ids(self.edition)

    def _left(self) -> float:
        if self.deadline is None:
            self.deadline = time.monotonic() + self.budget
        return self.deadline - time.monotonic()

    def _start(self, boxes: list[Sandbox], bound: float) -> list[str | None]:
        """Each of `boxes` running (started at once where it is not): why it could not be, or None."""
        new = [box for box in boxes if box.process is None]
        answers = talk([(box, box.spawn()) for box in new], min(START, bound))
        why = dict(zip(map(id, new), answers))
        out = []
        for box in boxes:
            ready = why.get(id(box), {"ready": True})
            if ready.get("ready") is not True:
                box.close()
                out.append(f"the sandbox did not start: {ready.get('error', 'no answer')}")
                continue
            if id(box) in why:
                box.group.limit(box.limits["memory"])
            out.append(None)
        return out

    def grade(self, blank: str, source: str | None) -> dict:
        """{"passed": bool, "why": one line a student can act on} for the student's `source` of `blank`. Never
        raises: any failure of the call fails the blank, and ends the sandboxes, so the next call starts afresh."""
        left = self._left()
        if source is None:
            return {"passed": False, "why": "the blank is left as handed out"}
        if left <= 0:
            return {"passed": False, "why": f"this hand-in's grading time ({self.budget:g} s in all) is spent"}
        try:
            return self._grade(blank, source, left)
        except BaseException as error:  # the judge's own failure, a reply it could not judge, an interrupt
            self.close()  # whatever was under way: no answer of this call is read by the next
            if not isinstance(error, Exception):
                raise
            return {"passed": False, "why": one_line(f"the blank could not be judged: {type(error).__name__}: {error}")}

    def _grade(self, blank: str, source: str, left: float) -> dict:
        inputs = wire.decode(wire.encode(cases.draw(blank, self.rng)))  # what both sides get, as they get it
        if not self.key:
            raise ValueError("no answer key: pass --key (doc/instructors.md says where it is made)")
        self.reference = self.reference or Sandbox(self.given(self.key), self.cpu, self.memory)
        self.contestant = self.contestant or Sandbox(self.given(), self.cpu, self.memory)
        reference, mine = self._start([self.reference, self.contestant], left)
        if reference or mine:
            self.close()
            raise RuntimeError(f"the reference's {reference}" if reference else mine)
        want, got = talk(
            [
                (self.reference, wire.encode({"blank": blank, "source": None, "inputs": inputs})),
                (self.contestant, wire.encode({"blank": blank, "source": source, "inputs": inputs})),
            ],
            min(self.contestant.wall, self.deadline - time.monotonic()),
            self.cpu,
        )
        if "outputs" not in want:
            self.close()
            raise RuntimeError(f"the reference failed on {blank}: {want.get('error')}")
        if "outputs" not in got:
            return {"passed": False, "why": one_line(got.get("error", "no answer"))}
        why = differs(blank, want["outputs"], got["outputs"], "the results")
        return {"passed": why is None, "why": one_line(why or "")}

    def run(self, program: list[dict], first: bool = False, cpu: float | None = None) -> dict:
        """{"failed": {cell: error}} of a program of cells run in the contestant's sandbox (the visible checks;
        nothing in it is a verdict)."""
        try:
            self.contestant = self.contestant or Sandbox(self.given(), self.cpu, self.memory)
            (why,) = self._start([self.contestant], START)
            if why:
                return {"failed": {"program": why}}
            seconds = cpu or self.cpu
            message = wire.encode({"program": program, "first": first, "cpu": cpu})
            (reply,) = talk([(self.contestant, message)], contestant.WALL * seconds + 30, seconds)
        except Exception as error:
            self.close()
            return {"failed": {"program": one_line(f"{type(error).__name__}: {error}")}}
        failed = reply.get("failed")
        if isinstance(failed, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in failed.items()):
            return {"failed": {k: one_line(v) for k, v in failed.items()}}
        return {"failed": {"program": one_line(reply.get("error", "no answer"))}}

    def close(self) -> None:
        for box in (self.reference, self.contestant):
            if box is not None:
                box.close()


def main(argv=None) -> int:
    import nbformat

    parser = argparse.ArgumentParser(description="Grade, or check, each blank of a lab notebook alone.")
    parser.add_argument("notebook", help="your Continuous_Control.ipynb")
    parser.add_argument("--key", help="the answer key (JSON {blank: source}); without it, the visible checks run")
    args = parser.parse_args(argv)
    sources = grader.blank_sources(nbformat.read(args.notebook, as_version=4))
    judge = Judge(key={})  # the visible checks need no key
    if args.key:
        judge.key = read_key(args.key, judge.blanks())
    passed = 0
    try:
        for blank in judge.blanks():
            if args.key:
                verdict = judge.grade(blank, sources.get(blank))
                ok, why = verdict["passed"], verdict["why"]
            else:
                program = grader.program(judge.edition, blank, {blank: sources[blank]} if blank in sources else {})
                failed = judge.run(program, cpu=3 * judge.cpu)["failed"]  # every check before it runs too
                ok, why = not failed, "; ".join(str(v) for v in failed.values())
            passed += ok
            print(f"{blank:20s} " + ("passed" if ok else f"FAILED  {(why or '?').splitlines()[0]}"))
    finally:
        judge.close()
    print(f"{passed} of {len(judge.blanks())} blanks pass" + (" (graded)" if args.key else " their visible checks"))
    return 0 if passed == len(judge.blanks()) else 1

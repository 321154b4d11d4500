"""The judge: decides each blank's point, in a process where no student code ever runs.

    python -m grader Continuous_Control.ipynb               # a student's own check: the visible checks, sandboxed
    python -m grader Continuous_Control.ipynb --key KEY     # the grade: one line per blank, as nbgrader gives it

Trusted by: the instructor. It holds the reference (the answer key: the lesson's own blanks, from `--key`, a
JSON file {blank: source}, or the lesson itself where the project has it) and never runs a line of a
submission. For each blank it draws fresh inputs (`grader.cases.draw`, from a new seed each time), sends them
to two sandboxes (`grader.sandbox`): the reference's, which runs the given code with the key's blanks and no
student code, and the submission's contestant, which runs the given code with the student's cell for that
blank and the edition's stubs for every other (one mistake costs one point). Both send back plain data
(`grader.wire`), and the judge compares the two here: a point needs the same results, within a float's
rounding, on inputs that no code could know in advance.
"""

import argparse
import contextlib
import json
import os
import secrets
import select
import shutil
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


class Sandbox:
    """A contestant process in a sandbox of its own, seen from the judge: requests out, plain data back,
    every read bounded in time and size. If it misbehaves it is ended, and the next request starts a new one."""

    def __init__(self, given: list[str], cpu: float = CPU, memory: int = MEMORY):
        self.given, self.limits = given, {"cpu": cpu, "memory": memory}
        self.wall = contestant.WALL * cpu + 30  # the contestant's own bound on a child, and a margin
        self.process, self.lib, self.buffer = None, None, b""

    def start(self) -> None:
        self.lib = sandbox.library()
        self.process = subprocess.Popen(
            sandbox.command(self.lib),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self.process.stdin.write(wire.encode({"given": self.given, "limits": self.limits}))
            self.process.stdin.flush()
            ready = self.receive(START)
        except OSError as error:
            ready = {"error": str(error)}
        if ready.get("ready") is not True:
            self.close()
            raise RuntimeError(f"the sandbox did not start: {ready.get('error', ready)}")

    def send(self, message) -> None:
        if self.process is None:
            self.start()
        self.process.stdin.write(wire.encode(message))
        self.process.stdin.flush()

    def receive(self, bound: float) -> dict:
        """The next line, decoded; {"error": ...} (and the sandbox ended) if it is late, too long or not plain data."""
        deadline, fd = time.monotonic() + bound, self.process.stdout.fileno()
        while b"\n" not in self.buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.close()
                return {"error": f"TimeoutError: no answer in {bound:g} s"}
            chunk = os.read(fd, 1 << 20)
            if not chunk or len(self.buffer) > wire.LIMIT:
                self.close()
                return {"error": "the code's sandbox ended without an answer"}
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        try:
            reply = wire.decode(line)
        except wire.WireError as error:
            self.close()
            return {"error": f"the answer is not plain data: {error}"}
        return reply if isinstance(reply, dict) else {"error": "the answer is not plain data"}

    def ask(self, message, bound: float | None = None) -> dict:
        try:
            self.send(message)
        except (OSError, RuntimeError) as error:
            self.close()
            return {"error": f"the code's sandbox could not be reached: {error}"}
        return self.receive(bound or self.wall)

    def close(self) -> None:
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
            self.process.stdin.close()
            self.process.stdout.close()
            self.process = None
        if self.lib is not None:
            shutil.rmtree(self.lib, ignore_errors=True)
            self.lib = None
        self.buffer = b""


# --- the comparison ---

EXACT_DTYPE = {"n-step-return", "n-step-flush"}  # their docstrings promise float32


def differs(blank: str, want, got, name: str = "") -> str | None:
    """Why `got` is not `want` (plain data both), or None when it matches."""
    if isinstance(want, dict):
        if not isinstance(got, dict) or set(got) != set(want):
            return (
                f"{name or 'the result'} has the parts {sorted(got) if isinstance(got, dict) else type(got).__name__}"
            )
        for key in want:
            why = differs(blank, want[key], got[key], key)
            if why:
                return why
        return None
    if isinstance(want, np.ndarray):
        if not isinstance(got, np.ndarray):
            return f"{name} is {type(got).__name__}, not an array"
        if got.shape != want.shape:
            return f"{name} has the shape {got.shape}, not {want.shape}"
        if blank in EXACT_DTYPE and got.dtype != want.dtype:
            return f"{name} is {got.dtype}, not {want.dtype}"
        if (got.dtype.kind in "fc") != (want.dtype.kind in "fc") and want.dtype.kind != "b":
            return f"{name} is {got.dtype}, not {want.dtype}"
        if want.dtype.kind == "b" or got.dtype.kind == "b":
            return None if np.array_equal(got, want) else f"{name} differs"
        a, b = want.astype(np.float64), got.astype(np.float64)
        if not np.allclose(b, a, rtol=1e-4, atol=1e-5, equal_nan=True):
            worst = np.nanmax(np.abs(a - b)) if a.size else 0.0
            return f"{name} differs from the right values (by up to {worst:.3g})"
        return None
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return None if np.isclose(got, want, rtol=1e-4, atol=1e-5) else f"{name} is {got:.6g}, not {want:.6g}"
    return None if type(got) is type(want) and got == want else f"{name} is {got!r}"


def ou_differs(x: dict, got: dict) -> str | None:
    """The Ornstein-Uhlenbeck step judged by its law, since a correct step may draw its normals another way:
    x_{t+1} = (1 - kappa) x_t + scale sqrt(1 - (1 - kappa)^2) xi, xi standard normal and new each step."""
    need = {"path", "again", "other", "last"}
    if not (isinstance(got, dict) and set(got) == need and all(isinstance(got[k], np.ndarray) for k in need)):
        return "the process's states were not arrays"
    path = got["path"].astype(np.float64)
    if path.shape != (x["steps"] + 1, x["size"]) or got["again"].shape != path.shape:
        return f"a state has the shape {path.shape[1:]}, not ({x['size']},)"
    if not np.array_equal(got["path"], got["again"]):
        return "the same generator's seed gave another path: draw xi from self.generator"
    if np.array_equal(got["path"], got["other"]):
        return "another seed gave the same path: draw xi from self.generator"
    if not np.array_equal(got["last"], got["other"][-1]):
        return "self.state is not the state sample() returned"
    before, after = path[:-1].ravel(), path[1:].ravel()
    slope = before @ after / (before @ before)
    residual = after - slope * before
    spread = x["scale"] * np.sqrt(1 - (1 - x["kappa"]) ** 2)
    if abs(slope - (1 - x["kappa"])) > 0.01:
        return f"each step keeps {slope:.3f} of the state, not 1 - kappa = {1 - x['kappa']:.3f}"
    if abs(residual.std() / spread - 1) > 0.02 or abs(residual.mean()) > 0.02 * spread:
        return f"the step's noise has the spread {residual.std():.3f}, not {spread:.3f}"
    steps = residual.reshape(x["steps"], x["size"])
    if abs(np.corrcoef(steps[:-1].ravel(), steps[1:].ravel())[0, 1]) > 0.02:
        return "the noise of one step is correlated with the next: draw a new xi each step"
    return None


class Judge:
    """Grades each blank of a submission alone (see the module's docstring)."""

    def __init__(self, edition=None, key: dict | None = None, cpu: float = CPU, memory: int = MEMORY, seed=None):
        self.edition = grader.read_edition(edition)
        self.key = default_key() if key is None else key
        self.rng = np.random.default_rng(secrets.randbits(128) if seed is None else seed)
        self.cpu, self.memory = cpu, memory
        self.reference = self.contestant = None

    def given(self, blanks: dict | None = None) -> list[str]:
        """The edition's given code, in order, with `blanks`' sources for the blanks (else the edition's stubs)."""
        return [
            cell["source"] for cell in grader.program(self.edition, sources=blanks or {}) if cell["kind"] != "check"
        ]

    def blanks(self) -> list[str]:
        return grader.blank_ids(self.edition)

    def grade(self, blank: str, source: str | None) -> dict:
        """{"passed": bool, "why": a sentence a student can act on} for the student's `source` of `blank`."""
        if source is None:
            return {"passed": False, "why": "the blank is left as handed out"}
        inputs = wire.decode(wire.encode(cases.draw(blank, self.rng)))  # what both sides get, as they get it
        if self.reference is None:
            if not self.key:
                raise ValueError("no answer key: pass --key (doc/instructors.md says where it is made)")
            self.reference = Sandbox(self.given(self.key), self.cpu, self.memory)
        if self.contestant is None:
            self.contestant = Sandbox(self.given(), self.cpu, self.memory)
        request = {"blank": blank, "source": source, "inputs": inputs}
        self.reference.send({"blank": blank, "source": None, "inputs": inputs})
        got = self.contestant.ask(request)
        want = self.reference.receive(self.reference.wall)
        if "outputs" not in want:
            raise RuntimeError(f"the reference failed on {blank}: {want.get('error')}")
        if "outputs" not in got:
            return {"passed": False, "why": str(got.get("error", "no answer"))[:500]}
        got, want = got["outputs"], want["outputs"]
        if not isinstance(got, list) or len(got) != len(want):
            return {"passed": False, "why": "the harness's results are not one a case"}
        judged = (
            ou_differs(x, mine) if blank == "ou-step" else differs(blank, right, mine)
            for x, mine, right in zip(inputs, got, want)
        )
        why = next((why for why in judged if why), None)  # the first case that differs
        return {"passed": why is None, "why": why or ""}

    def run(self, program: list[dict], first: bool = False, cpu: float | None = None) -> dict:
        """{"failed": {cell: error}} of a program of cells run in the contestant's sandbox (the visible checks;
        nothing in it is a verdict)."""
        if self.contestant is None:
            self.contestant = Sandbox(self.given(), self.cpu, self.memory)
        reply = self.contestant.ask({"program": program, "first": first, "cpu": cpu})
        return (
            {"failed": reply["failed"]}
            if isinstance(reply.get("failed"), dict)
            else {"failed": {"program": reply.get("error")}}
        )

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
                failed = judge.run(
                    grader.program(judge.edition, blank, {blank: sources[blank]} if blank in sources else {})
                )["failed"]
                ok, why = not failed, "; ".join(str(v) for v in failed.values())
            passed += ok
            print(f"{blank:20s} " + ("passed" if ok else f"FAILED  {(why or '?').splitlines()[0]}"))
    finally:
        judge.close()
    print(f"{passed} of {len(judge.blanks())} blanks pass" + (" (graded)" if args.key else " their visible checks"))
    return 0 if passed == len(judge.blanks()) else 1

"""Grade one blank of the lab at a time, in a process of its own.

    python -m grader Continuous_Control.ipynb     # a student checks their own notebook: one line per blank

A blank's check runs in a fresh child process that holds the given code of the student edition, the
student's cell for that blank and nothing else of theirs: every other blank is the edition's stub, so one
mistake costs one point. Before the student's cell runs, the libraries the checks compare with (torch,
numpy, math, builtins) are made read-only, and they are put back as they were after it, so a cell that
rebinds `torch.allclose` fails instead of fooling the check. The child has a time limit and a memory
limit: a loop, compiled by numba or not, or a runaway allocation, costs that blank's point and nothing else.

The given code and the visible checks come from the student edition (`edition.ipynb` beside this file in a
hand-out, `lab/Continuous_Control_student.ipynb` in the project), never from the submission, whose
unlocked cells a student may have changed. The hidden tests come from the graded cell as nbgrader runs it
(`grader.kernel`); this package holds none.
"""

import ast
import io
import json
import math
import os
import re
import resource
import select
import signal
import subprocess
import sys
from pathlib import Path

import nbformat

HERE = Path(__file__).resolve().parent
# What the environment cells tell the cells after them.
SIZES = "state_size, action_size, num_agents = 33, 4, 20\n"
TIMEOUT = float(os.environ.get("GRADER_TIMEOUT", 20))  # seconds a blank's check may take (a correct one: about 1)
MEMORY = int(os.environ.get("GRADER_MEMORY_GB", 4)) << 30  # bytes a blank's check may allocate on top of the libraries
HIDDEN_BEGIN, HIDDEN_END = "### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"


def edition_path() -> Path:
    """The trusted student edition: a hand-out's copy beside this file, else the project's."""
    for path in (HERE / "edition.ipynb", HERE.parent / "lab" / "Continuous_Control_student.ipynb"):
        if path.exists():
            return path
    raise FileNotFoundError(
        f"no student edition beside {HERE}: make the hand-out with `python -m tools.student --handout DIR`"
    )


def uses_environment(source: str) -> bool:
    """Whether a cell reads the notebook's environment (`env.` or `env_info`), which a check process has not."""
    return re.search(r"(?<![\w.])env(\.|_info)", source) is not None


def cells(notebook) -> list[dict]:
    """The cells a check process runs, in order: `given` (code tagged export), `blank` (a student's cell,
    with its id) and `check` (a check that needs no environment, with its grade id or None)."""
    out = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        grading, tags = cell.metadata.get("nbgrader", {}), cell.metadata.get("tags", [])
        if grading.get("solution"):
            out.append({"kind": "blank", "id": grading["grade_id"], "source": cell.source})
        elif "export" in tags:
            out.append({"kind": "given", "id": None, "source": cell.source})
        elif (
            grading.get("grade") or ("nbval-check-output" in tags and "assert" in cell.source)
        ) and not uses_environment(cell.source):
            out.append({"kind": "check", "id": grading.get("grade_id"), "source": cell.source})
    return out


def defined_names(source: str) -> set[str]:
    """The functions and classes a cell defines at its top level (its blank's name, for a blank)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set(re.findall(r"^(?:def|class)\s+(\w+)", source, re.M))
    return {node.name for node in tree.body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def program(edition: list[dict], blank: str | None = None, sources: dict | None = None, hidden: str = "") -> list[dict]:
    """The cells to run: the edition's, each blank's source from `sources` (else the edition's stub), up to
    and including `check-<blank>` with `hidden` appended; with `blank` None, every cell and every check
    (a test's run of the whole lesson, nothing guarded)."""
    sources, out = sources or {}, [{"name": "sizes", "kind": "given", "source": SIZES}]
    for cell in edition:
        if cell["kind"] == "blank":
            out.append(
                {
                    "name": cell["id"],
                    "kind": "student" if cell["id"] in sources else "given",
                    "source": sources.get(cell["id"], cell["source"]),
                    "names": sorted(defined_names(cell["source"])),
                }
            )
        elif cell["kind"] == "given":
            out.append({"name": "given", "kind": "given", "source": cell["source"]})
        else:
            name = cell["id"] or "check: " + cell["source"].splitlines()[0][:60]
            mine = blank is not None and cell["id"] == f"check-{blank}"
            out.append(
                {
                    "name": name,
                    "kind": "graded" if mine else "check" if blank is None else "before",
                    "source": cell["source"] + ("\n" + hidden if mine and hidden else ""),
                }
            )
            if mine:
                break
    return out


# --- the child: runs one program with the libraries read-only while student code runs ---

WATCHED = (
    "torch",
    "torch.nn",
    "torch.nn.functional",
    "torch.nn.utils",
    "torch.testing",
    "torch.linalg",
    "numpy",
    "numpy.testing",
    "numpy.linalg",
    "math",
    "operator",
    "builtins",
    "grader",
)


Module = type(math)


class ReadOnly(Module):
    """A module whose attributes cannot be set or deleted: what a library becomes while student code runs."""

    def __setattr__(self, name, value):
        if name not in vars(self) and not name.startswith("__"):  # a new name (an import sets its submodules)
            return Module.__setattr__(self, name, value)
        raise AttributeError(f"the grader's libraries are read-only: {self.__name__}.{name} cannot be rebound")

    def __delattr__(self, name):
        raise AttributeError(f"the grader's libraries are read-only: {self.__name__}.{name} cannot be deleted")


def _guarded(run):
    """Run `run()` with the watched modules read-only; afterwards put back every attribute that was changed
    (through a module's __dict__, say) as it was."""
    modules = [sys.modules[name] for name in WATCHED if name in sys.modules]
    saved = [(m, type(m), dict(vars(m))) for m in modules]
    for m in modules:
        if type(m) is Module:
            m.__class__ = ReadOnly
    try:
        return run()
    finally:
        for m, kind, attributes in saved:
            Module.__setattr__(m, "__class__", kind)
            current = vars(m)
            for name, value in attributes.items():
                if name not in current or current[name] is not value:
                    current[name] = value


def _student(source: str, name: str, namespace: dict, blank_names: set) -> None:
    """Run a student's cell. Afterwards only what it defines for its blank (and new helpers) stays: every
    other name it rebound (a check's helper, `torch`, a builtin such as `all`) and every attribute it
    changed on the given classes, torch.Tensor and nn.Module is put back as it was."""
    import builtins

    import torch

    classes = {cls for cls in namespace.values() if isinstance(cls, type) and cls.__module__ == "__main__"}
    classes |= {torch.Tensor, torch.nn.Module}
    saved_names = dict(namespace)
    saved_classes = {cls: dict(vars(cls)) for cls in classes}
    try:
        _guarded(lambda: exec(compile(source, name, "exec"), namespace))
    finally:
        for key in list(namespace):
            if key in blank_names:
                continue
            if key in saved_names:
                namespace[key] = saved_names[key]
            elif hasattr(builtins, key):
                del namespace[key]
        for key, value in saved_names.items():
            namespace.setdefault(key, value)
        for cls, attributes in saved_classes.items():
            for key in set(vars(cls)) - set(attributes) - blank_names:
                delattr(cls, key)
            for key, value in attributes.items():
                if (
                    key not in blank_names
                    and vars(cls).get(key) is not value
                    and key not in ("__dict__", "__weakref__")
                ):
                    setattr(cls, key, value)


def run_program(cells: list[dict], first: bool = False) -> dict:
    """{name: error} of the graded cells that fail, and of a student cell that fails to run; with `first`,
    the first such failure alone (the rest of the program is not run)."""
    import matplotlib

    matplotlib.use("Agg")
    import torch

    torch.set_num_threads(1)
    namespace, failed = {"__name__": "__main__"}, {}
    for cell in cells:
        code = compile(cell["source"], cell["name"], "exec") if cell["kind"] != "student" else None
        try:
            if cell["kind"] == "student":
                _student(cell["source"], cell["name"], namespace, set(cell.get("names", ())))
            elif cell["kind"] == "graded":
                _guarded(lambda c=code: exec(c, namespace))
            else:
                exec(code, namespace)
        except BaseException as error:  # a check that fails, or code that no longer defines what follows
            if cell["kind"] in ("graded", "student", "check"):
                failed[cell["name"]] = f"{type(error).__name__}: {error}"[:500]
                if first:
                    break
    return failed


def _child(cells: list[dict], out_fd: int, first: bool = False) -> None:
    """In a forked child: limits, then the program; its result as JSON to `out_fd`."""
    pages = int(Path("/proc/self/statm").read_text().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (pages + MEMORY, pages + MEMORY))
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)  # the server's stdout carries the protocol: nothing else writes there
    os.dup2(devnull, 2)
    sys.stdout = sys.stderr = printed = io.StringIO()
    try:
        failed = run_program(cells, first)
    except BaseException as error:  # MemoryError included
        failed = {"program": f"{type(error).__name__}: {error}"[:500]}
    with os.fdopen(out_fd, "w") as out:
        json.dump({"failed": failed, "output": printed.getvalue()[-4000:]}, out)
    os._exit(0)


def serve() -> None:
    """The check server: libraries loaded once; for each request line (a program as JSON), a forked child
    runs it within TIMEOUT seconds and MEMORY bytes; one reply line each."""
    import matplotlib

    matplotlib.use("Agg")
    import numba  # noqa: F401  (loaded once, before the forks)
    import numpy  # noqa: F401
    import torch
    import torch._dynamo  # noqa: F401  (Adam's step imports it on first use)

    torch.set_num_threads(1)
    protocol = os.fdopen(os.dup(1), "w")  # replies go here; nothing else may write to it
    os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
    sys.stdout = io.StringIO()
    for line in sys.stdin:
        request = json.loads(line)
        if request.get("warmup"):  # the edition's stubs, run here once: torch's and numba's first-use
            run_program(request["cells"])  # costs are then paid before every fork
            sys.stdout = io.StringIO()
            continue
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            _child(request["cells"], write, request.get("first", False))
        os.close(write)
        ready, _, _ = select.select([read], [], [], request.get("timeout", TIMEOUT))
        if ready:
            with os.fdopen(read) as pipe:
                text = pipe.read()
        else:
            os.close(read)
            text = ""
        os.kill(pid, signal.SIGKILL) if not ready else None
        os.waitpid(pid, 0)
        reply = (
            json.loads(text)
            if text
            else {
                "failed": {
                    "program": f"TimeoutError: the check did not finish in {request.get('timeout', TIMEOUT):g} s "
                    "(a loop that never ends?)"
                    if not ready
                    else "the check process died (out of memory?)"
                },
                "output": "",
            }
        )
        protocol.write(json.dumps(reply) + "\n")
        protocol.flush()


class Grader:
    """Runs checks in the check server (a child process started on first use, and restarted if it dies)."""

    def __init__(self, edition: str | Path | None = None, timeout: float = TIMEOUT):
        self.edition = cells(nbformat.read(str(edition or edition_path()), as_version=4))
        self.timeout, self.server = timeout, None

    def blanks(self) -> list[str]:
        return [cell["id"] for cell in self.edition if cell["kind"] == "blank"]

    def run(self, cells_: list[dict], first: bool = False) -> dict:
        """{"failed": {name: error}, "output": text} of one program; with `first`, it stops at the first failure."""
        if self.server is None or self.server.poll() is not None:
            self.server = subprocess.Popen(
                [sys.executable, "-I", "-m", "grader", "--serve"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                cwd=HERE.parent,
                env={**os.environ, "GRADER_TIMEOUT": str(self.timeout)},
            )
            self.server.stdin.write(json.dumps({"warmup": True, "cells": program(self.edition)}) + "\n")
        self.server.stdin.write(json.dumps({"cells": cells_, "timeout": self.timeout, "first": first}) + "\n")
        self.server.stdin.flush()
        ready, _, _ = select.select([self.server.stdout], [], [], self.timeout + 30)
        line = self.server.stdout.readline() if ready else ""
        if not line:  # the server itself is stuck or gone: start afresh next time
            self.close()
            return {"failed": {"program": "the check server did not answer"}, "output": ""}
        return json.loads(line)

    def check(self, blank: str, source: str | None, hidden: str = "") -> dict:
        """One blank graded alone: its check (and `hidden`) with the student's `source` for it (None: the stub)."""
        return self.run(program(self.edition, blank, {} if source is None else {blank: source}, hidden))

    def close(self) -> None:
        if self.server is not None:
            self.server.kill()
            self.server.wait()
            self.server.stdin.close()
            self.server.stdout.close()
            self.server = None


def blank_sources(notebook) -> dict:
    """{blank id: the cell's source} of a notebook in nbgrader's format."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in notebook.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    }


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(description="Check each blank of a lab notebook alone, with its visible checks.")
    parser.add_argument("notebook", nargs="?", help="your Continuous_Control.ipynb")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve:
        serve()
        return 0
    if not args.notebook:
        parser.error("name the notebook to check")
    grader = Grader()
    sources, passed = blank_sources(nbformat.read(args.notebook, as_version=4)), 0
    try:
        for blank in grader.blanks():
            failed = grader.check(blank, sources.get(blank))["failed"]
            passed += not failed
            print(
                f"{blank:20s} " + ("passed" if not failed else "FAILED  " + "; ".join(failed.values()).splitlines()[0])
            )
    finally:
        grader.close()
    print(f"{passed} of {len(grader.blanks())} blanks pass their visible checks")
    return 0 if passed == len(grader.blanks()) else 1

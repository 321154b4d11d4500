"""Grading the lab, by role: a judge that no student code reaches, and contestants that hold nothing of it.

- `grader.judge`: decides each point; trusted by the instructor; runs no student code (`python -m grader`).
- `grader.contestant`: runs a submission's code on the judge's inputs; trusted by nobody.
- `grader.sandbox`: the bubblewrap box a contestant runs in, one per submission, sharing nothing, in control groups.
- `grader.confine`: the fresh box each request makes itself inside the sandbox (tmpfs, IPC, seccomp).
- `grader.cases`: each blank's fresh inputs and the harness that feeds them to the code (no expected value).
- `grader.wire`: plain data between them: numbers and arrays as raw bytes, never pickled.
- `grader.kernel`: the kernel nbgrader talks to; it runs no student code, only the judge.
- `grader.nbgrader_hooks`: nbgrader's side (the course's collect, copies of checks), copied into the course.

This module holds what they share about the student edition: its cells and blanks. It imports nothing heavy,
since the contestant imports it too.
"""

import ast
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The Reacher's sizes, as the environment cells tell the cells after them (the grader's one copy: no sandbox
# runs the environment).
STATE, ACTION, AGENTS = 33, 4, 20
SIZES = f"state_size, action_size, num_agents = {STATE}, {ACTION}, {AGENTS}\n"


def edition_path() -> Path:
    """The trusted student edition: a hand-out's copy beside this file, else the project's."""
    for path in (HERE / "edition.json", HERE.parent / "lab" / "Continuous_Control_student.ipynb"):
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


def program(edition: list[dict], blank: str | None = None, sources: dict | None = None) -> list[dict]:
    """The cells to run: the edition's, each blank's source from `sources` (else the edition's stub), up to
    and including `check-<blank>` (kind "graded"; the checks before it "before"); with `blank` None, every
    cell and every check (kind "check")."""
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
                    "source": cell["source"],
                }
            )
            if mine:
                break
    return out


def read_edition(path=None):
    import nbformat

    return cells(nbformat.read(str(path or edition_path()), as_version=4))


def blank_ids(edition: list[dict]) -> list[str]:
    return [cell["id"] for cell in edition if cell["kind"] == "blank"]


def blank_sources(notebook) -> dict:
    """{blank id: the cell's source} of a notebook in nbgrader's format."""
    return {
        c.metadata["nbgrader"]["grade_id"]: c.source
        for c in notebook.cells
        if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("solution")
    }

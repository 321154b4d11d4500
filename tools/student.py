"""The student edition of the lesson, and what an instructor needs to hand it out and grade it with nbgrader.

    python -m tools.student                  # write lab/Continuous_Control_student.ipynb from the lesson
    python -m tools.student --check          # exit 1 if the committed edition is not what the lesson gives
    python -m tools.student --handout DIR    # DIR: the edition and the files it runs with, no solution in any
    python -m tools.student --course DIR       # DIR/source/continuous_control/: nbgrader's source (doc/instructors.md)
    python -m tools.student --grading-env DIR  # DIR: an environment made from the hand-out alone, and its kernel

The lesson carries no grading markers. A blank is a code cell with nbgrader's metadata `solution: true`,
which holds one function (a method added to its class, d2l's pattern); its graded check is the cell whose
`grade_id` is `check-` and the blank's id. The student keeps the function's signature and docstring; its
body becomes a hint (blanks.toml, per blank) and nbgrader's stub. nbgrader's source notebook is the lesson
with the body between `### BEGIN SOLUTION` and `### END SOLUTION`, so that `nbgrader generate_assignment`
releases exactly the student edition. There are no hidden tests: the grading kernel's judge (grader/) draws
each blank's inputs afresh and compares with the answer key, `key.json` beside the grading environment.
"""

import argparse
import ast
import copy
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import nbformat

from continuous_control.provenance import ROOT

LESSON = os.path.join(ROOT, "Continuous_Control.ipynb")
EDITION = os.path.join(ROOT, "lab", "Continuous_Control_student.ipynb")
ASSIGNMENT = "continuous_control"
STUB = ["# YOUR CODE HERE", "raise NotImplementedError()"]  # nbgrader's own code stub
ANSWER = "YOUR ANSWER HERE"  # and its stub of a written answer
# What the lesson needs beside itself: the packages it imports, the grader, the report's small tables that its
# effect sentences and its critics' Q read (doc/, written by `make report`), and the environment's account (the
# lesson links to it). Not the report's analyses (experiments/) nor its saved runs (results/).
SUPPORT = [
    "reacher",
    "continuous_control",
    "grader",
    "doc/environment.md",
    "doc/effects.csv",
    "doc/critic_q.csv",
    "doc/plain.csv",
]
HANDOUT = os.path.join(ROOT, "tools", "handout")  # the hand-out's README and pyproject.toml
# The project's pins that the lab needs (the report's baselines, the Unity client and the tools stay out).
LAB_PACKAGES = {
    "torch",
    "numpy",
    "mujoco",
    "numba",
    "llvmlite",
    "pillow",
    "matplotlib",
    "safetensors",  # policies, networks and checkpoints: data only (continuous_control.results, checkpoints)
    "tqdm",
    "ipywidgets",
    "ipykernel",
    "nbconvert",
    "pandas",
    "python-dateutil",
    "tzdata",
    "scipy",
    "typing_extensions",
}

# Each blank's hint (the idea and its section, not the code): data, kept in blanks.toml, a table per blank id.
BLANKS = tomllib.loads(Path(__file__).with_name("blanks.toml").read_text(encoding="utf-8"))
HINTS = {blank: text["hint"] for blank, text in BLANKS.items()}


def blank_ids(lesson=None) -> list[str]:
    """The blanks' grade_ids, in the lesson's order."""
    lesson = lesson or nbformat.read(LESSON, as_version=4)
    return [c.metadata["nbgrader"]["grade_id"] for c in lesson.cells if is_blank(c)]


def is_blank(cell) -> bool:
    """A code cell the student fills in (a markdown answer cell, graded by hand, is not a blank)."""
    return cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("solution", False)


def body(source: str) -> tuple[int, int, str]:
    """(first, last) line numbers, from 0, of the body of the cell's one function after its docstring, and
    its indentation: what the student writes."""
    functions = [node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.FunctionDef)]
    if len(functions) != 1:
        raise ValueError(f"a blank holds one function, this cell {len(functions)}: {source[:80]!r}")
    statements = functions[0].body
    has_docstring = isinstance(statements[0], ast.Expr) and isinstance(statements[0].value, ast.Constant)
    first = statements[0].end_lineno if has_docstring else statements[0].lineno - 1
    line = source.splitlines()[first]
    return first, functions[0].end_lineno - 1, line[: len(line) - len(line.lstrip())]


def with_hint(source: str, hint: str, solution: bool) -> str:
    """The cell with the hint as a comment before the body, and the body between nbgrader's solution markers
    (nbgrader's source cell) or, where nbgrader's stub replaces it, the student's cell (what generate_assignment
    makes)."""
    lines = source.splitlines()
    first, last, indent = body(source)
    middle = (
        [f"{indent}### BEGIN SOLUTION", *lines[first : last + 1], f"{indent}### END SOLUTION"]
        if solution
        else [indent + line for line in STUB]
    )
    return "\n".join(lines[:first] + [f"{indent}# {hint}"] + middle + lines[last + 1 :])


def _clean(lesson):
    nb = copy.deepcopy(lesson)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)  # no text twin: saving it makes no scripts/ folder
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags", "nbgrader")}  # no run's timings
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def source_notebook(lesson):
    """nbgrader's source version of the lesson: solution markers in, outputs out."""
    nb = _clean(lesson)
    for cell in nb.cells:
        if is_blank(cell):
            cell.source = with_hint(cell.source, HINTS[cell.metadata["nbgrader"]["grade_id"]], True)
    return nb


def edition(lesson, keep: set = frozenset()):
    """The student edition (what nbgrader releases): each blank's body a stub, outputs cleared; the blanks
    whose ids are in `keep` are filled in (as a correct submission)."""
    nb = _clean(lesson)
    for cell in nb.cells:
        grade_id = cell.metadata.get("nbgrader", {}).get("grade_id")
        if is_blank(cell) and grade_id not in keep:
            cell.source = with_hint(cell.source, HINTS[grade_id], False)
        elif cell.metadata.get("nbgrader", {}).get("solution") and grade_id not in keep:
            cell.source = ANSWER  # a written answer: nbgrader's own stub for markdown
    return nb


def solutions(lesson) -> dict:
    """{blank: the lines of its solution}, as the lesson has them."""
    out = {}
    for cell in lesson.cells:
        if is_blank(cell):
            first, last, _ = body(cell.source)
            out[cell.metadata["nbgrader"]["grade_id"]] = [
                x.strip() for x in cell.source.splitlines()[first : last + 1] if x.strip()
            ]
    return out


def write_support(folder: str, notebook) -> None:
    """Into `folder`: the files the lesson runs with, `continuous_control/agent.py` exported from `notebook`
    (the edition's agent holds its blanks, not their solutions), and the edition as the grader's trusted copy."""
    from continuous_control import export

    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "python.path", "resume", "resume.old*", "*.egg-info")
    for name in SUPPORT:
        source, target = os.path.join(ROOT, name), os.path.join(folder, name)
        if os.path.isdir(source):
            shutil.copytree(source, target, ignore=ignore)
        else:
            os.makedirs(os.path.dirname(target), exist_ok=True)
            shutil.copy2(source, target)
    exported = os.path.join(folder, "continuous_control", "agent.py")
    nbformat.write(notebook, exported + ".ipynb")
    Path(exported).write_text(export.module_source(exported + ".ipynb"), encoding="utf-8")
    os.remove(exported + ".ipynb")
    # not .ipynb: nbgrader would take it for a notebook of the assignment, and leave it out of the release
    nbformat.write(edition(nbformat.read(LESSON, as_version=4)), os.path.join(folder, "grader", "edition.json"))
    for name in ("README.md", "pyproject.toml"):
        shutil.copy2(os.path.join(HANDOUT, name), os.path.join(folder, name))
    pins = [  # the pins alone: the project's comments name files the hand-out has not
        line.split("#")[0].strip()
        for line in Path(ROOT, "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.split("==")[0].strip() in LAB_PACKAGES
    ]
    Path(folder, "requirements.txt").write_text(
        "\n".join(["# The lab's pinned packages (the project's pins)", *pins]) + "\n", encoding="utf-8"
    )


def refuse_folder(folder: str, outside: bool = True) -> None:
    """A hand-out goes into a new or empty folder outside the checkout (`outside`): it never writes over anything."""
    if not folder.strip():
        raise SystemExit("refusing to write into an empty path: name a new folder")
    if os.path.islink(os.path.normpath(folder)):
        raise SystemExit(f"refusing to write into {folder}: it is a symbolic link, and nothing is written through one")
    target, root = os.path.realpath(folder), os.path.realpath(ROOT)
    if outside and (target == root or target.startswith(root + os.sep)):
        raise SystemExit(
            f"refusing to write into {folder}: it is inside the project's checkout ({root}); pick a folder outside it"
        )
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise SystemExit(
            f"refusing to write into {folder}: it exists and is not an empty folder, and a hand-out "
            "never writes over anything; pick a new folder"
        )


def claimed(folder: str, build) -> str:
    """`build(stage)` run on a new folder beside `folder`, then renamed to `folder` in one step: two hand-outs that
    race for one folder leave one whole hand-out and a refusal that names the folder, never a mix."""
    parent = os.path.dirname(os.path.abspath(folder))
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".handout-", dir=parent)
    mask = os.umask(0)
    os.umask(mask)
    os.chmod(stage, 0o777 & ~mask)  # as a folder made by makedirs would be, not mkdtemp's 0700
    try:
        build(stage)
        try:
            os.rename(stage, folder)  # onto nothing, or onto an empty folder; never onto a filled one
        except OSError as error:
            if error.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                raise
            raise SystemExit(
                f"refusing to write into {folder}: something else filled it while this hand-out was made; "
                "pick a new folder"
            ) from None
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return folder


def handout(folder: str) -> str:
    """What students get: the edition as `Continuous_Control.ipynb`, and the files it runs with."""
    refuse_folder(folder)
    student = edition(nbformat.read(LESSON, as_version=4))

    def build(stage):
        write_support(stage, student)
        nbformat.write(student, os.path.join(stage, "Continuous_Control.ipynb"))

    return claimed(folder, build)


def course(folder: str) -> str:
    """nbgrader's source folder of the assignment in the course directory `folder`."""
    source = os.path.join(folder, "source", ASSIGNMENT)
    refuse_folder(source)
    lesson = nbformat.read(LESSON, as_version=4)

    def build(stage):
        write_support(stage, edition(lesson))
        nbformat.write(source_notebook(lesson), os.path.join(stage, "Continuous_Control.ipynb"))

    made = claimed(source, build)
    # nbgrader's side of the grading (grader/nbgrader_hooks.py), which the course's nbgrader_config.py loads
    hooks, new = os.path.join(folder, "nbgrader_hooks.py"), os.path.join(folder, f".nbgrader_hooks.{os.getpid()}")
    text = Path(ROOT, "grader", "nbgrader_hooks.py").read_bytes()
    with os.fdopen(os.open(new, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644), "wb") as file:
        file.write(text)
    os.replace(new, hooks)
    return made


BUILDING = "building"  # in a grading environment's folder from the start of its build


def grading_env(folder: str) -> str:
    """A virtual environment in `folder/venv` made from a fresh hand-out alone (no lesson, no hidden tests, no
    editable install of the checkout), with the grading kernel registered in it (`grader.kernel`). An
    environment this made before is reused: its packages stay if the hand-out's pins are the same, and the
    hand-out itself is installed afresh. Returns the Jupyter data directory to put on JUPYTER_PATH."""
    venv = os.path.join(folder, "venv")
    python, stamp = os.path.join(venv, "bin", "python"), Path(venv, "lab-requirements.txt")
    pip = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    building = Path(folder, BUILDING)  # left by a build of ours that was cut short: this one builds it again
    if not stamp.exists() and not building.exists():
        refuse_folder(folder, outside=False)  # a cache under .venv/ will do: nothing of it is handed out
        os.makedirs(folder, exist_ok=True)
        building.touch()
    with tempfile.TemporaryDirectory() as tmp:
        lab = handout(os.path.join(tmp, "handout"))
        pins = Path(lab, "requirements.txt").read_text(encoding="utf-8")
        if not (stamp.exists() and stamp.read_text(encoding="utf-8") == pins):
            subprocess.run([sys.executable, "-m", "venv", "--clear", venv], check=True)
            subprocess.run([*pip, "-r", os.path.join(lab, "requirements.txt")], check=True)
            stamp.write_text(pins, encoding="utf-8")
        subprocess.run([*pip, "--no-deps", "--force-reinstall", lab], check=True)  # a copy in site-packages
    from grader import kernel

    key = write_key(folder)
    data = os.path.join(venv, "share", "jupyter")
    kernel.kernelspec(data, python, key)
    return data


def write_key(folder: str) -> str:
    """`folder/key.json`, the answer key ({blank: the lesson's source}), readable by its owner alone: the judge
    reads it, and no sandbox sees it (it lies outside the environment it binds)."""
    import json

    import grader

    path = os.path.join(folder, "key.json")
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(grader.blank_sources(nbformat.read(LESSON, as_version=4)), file, indent=1)
    os.replace(path + ".tmp", path)
    return path


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed edition is out of date")
    parser.add_argument("--handout", metavar="DIR", help="write the hand-out into DIR")
    parser.add_argument("--course", metavar="DIR", help="write nbgrader's source of the assignment into DIR/source/")
    parser.add_argument("--grading-env", metavar="DIR", help="make the grading environment and kernel in DIR")
    args = parser.parse_args(argv)
    for name in ("handout", "course", "grading_env"):
        if getattr(args, name) is not None and not getattr(args, name).strip():
            parser.error(f"--{name.replace('_', '-')} needs a folder, not an empty path")
    if args.grading_env:
        data = grading_env(args.grading_env)
        print(
            f"made the grading environment in {args.grading_env}; its kernel `continuous-control-grading` is in "
            f"{data}: export JUPYTER_PATH={data}"
        )
        from grader import sandbox

        for missing in sandbox.limits():
            print(f"note: on this machine, {missing}")
        return 0
    if args.handout:
        print(f"wrote the hand-out into {handout(args.handout)}")
        return 0
    if args.course:
        print(f"wrote nbgrader's source into {course(args.course)}")
        return 0
    wanted = nbformat.writes(edition(nbformat.read(LESSON, as_version=4))) + "\n"
    if args.check:
        current = Path(EDITION).read_text(encoding="utf-8") if os.path.exists(EDITION) else ""
        if current != wanted:
            print(f"{os.path.relpath(EDITION, ROOT)} is not the lesson's student edition: run `make student`")
            return 1
        return 0
    os.makedirs(os.path.dirname(EDITION), exist_ok=True)
    Path(EDITION).write_text(wanted, encoding="utf-8")
    print(f"wrote {os.path.relpath(EDITION, ROOT)}: {len(blank_ids())} blanks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

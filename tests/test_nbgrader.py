"""nbgrader as an instructor runs it (doc/instructors.md), end to end and slow (a few minutes): nbgrader
0.9 in an environment of its own, grading with the project's environment registered as a named kernel
that runs the lesson at SMOKE size. The assignment is generated from tools/student.py's source folder;
a correct, an empty and a buggy submission get full, zero and partial scores; the release carries no
jupytext pairing, and grading leaves nothing in the temporary folder."""
import csv
import os
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import nbformat
import pytest

from tools import student

NBGRADER = "nbgrader>=0.9,<0.10"
KERNEL = "continuous-control"
CONFIG = f"""c = get_config()
c.CourseDirectory.course_id = "drlnd"
c.ExecutePreprocessor.kernel_name = "{KERNEL}"
c.Execute.timeout = 600
"""
# The buggy submission: two blanks wrong, so two checks fail.
BUGS = {"clipped-double-q": ("torch.minimum(", "torch.maximum("), "ddpg-actor-loss": ("return -self.critic", "return self.critic")}


def run(command, **kwargs):
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{command}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


@pytest.fixture(scope="module")
def nbgrader(tmp_path_factory):
    """The nbgrader command of a fresh virtual environment (pip's wheel cache makes it quick)."""
    venv = tmp_path_factory.mktemp("nbgrader-env")
    run([sys.executable, "-m", "venv", str(venv)])
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--retries", "1", "--timeout", "20", NBGRADER]
    done = subprocess.run(pip, capture_output=True, text=True)
    if done.returncode != 0:
        try:
            urllib.request.urlopen("https://pypi.org/simple/nbgrader/", timeout=15)
        except OSError as error:
            pytest.skip(f"PyPI is unreachable: {error}")
        pytest.fail(f"pip install {NBGRADER} failed:\n{done.stderr[-3000:]}")
    return str(venv / "bin" / "nbgrader")


def submission(course, name, notebook):
    """A student's submitted folder: the release as handed out, with their notebook."""
    folder = course / "submitted" / name / student.ASSIGNMENT
    shutil.copytree(course / "release" / student.ASSIGNMENT, folder)
    nbformat.write(notebook, folder / "Continuous_Control.ipynb")


def test_nbgrader_generates_the_edition_and_scores_correct_empty_and_buggy_submissions(nbgrader, tmp_path):
    course, kernels, tmp = tmp_path / "course", tmp_path / "kernels", tmp_path / "tmp"
    tmp.mkdir()
    run([sys.executable, "-m", "ipykernel", "install", "--prefix", str(kernels), "--name", KERNEL, "--env", "SMOKE", "1",
         "--env", "TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "torch-cache")])       # torch.export's cache, out of /tmp
    env = {**os.environ, "JUPYTER_PATH": str(kernels / "share" / "jupyter"), "TMPDIR": str(tmp),
           "PATH": os.path.dirname(nbgrader) + os.pathsep + os.environ["PATH"]}      # as if activated: it runs `alembic`
    env.pop("SMOKE", None)
    student.course(str(course))
    (course / "nbgrader_config.py").write_text(CONFIG)
    run([nbgrader, "generate_assignment", student.ASSIGNMENT, "--force"], cwd=course, env=env)

    release = nbformat.read(course / "release" / student.ASSIGNMENT / "Continuous_Control.ipynb", as_version=4)
    assert "jupytext" not in release.metadata
    edition = nbformat.read(student.EDITION, as_version=4)
    assert [c.source for c in release.cells] == [c.source for c in edition.cells], "the release is not lab/'s edition"

    lesson = nbformat.read(student.LESSON, as_version=4)
    solved = {c.metadata["nbgrader"]["grade_id"]: c.source for c in lesson.cells if c.metadata.get("nbgrader", {}).get("solution")}
    correct, buggy = nbformat.from_dict(release), nbformat.from_dict(release)
    for good, bad in zip(correct.cells, buggy.cells):
        blank = good.metadata.get("nbgrader", {}).get("grade_id")
        if blank in solved:
            good.source = bad.source = solved[blank]
            if blank in BUGS:
                bad.source = bad.source.replace(*BUGS[blank])
    for name, notebook in (("correct", correct), ("empty", release), ("buggy", buggy)):
        submission(course, name, notebook)
    run([nbgrader, "autograde", student.ASSIGNMENT, "--create", "--force"], cwd=course, env=env)
    run([nbgrader, "export", "--to", "grades.csv"], cwd=course, env=env)

    with open(course / "grades.csv") as grades:
        scores = {row["student_id"]: (float(row["score"]), float(row["max_score"])) for row in csv.DictReader(grades)}
    total = sum(c.metadata["nbgrader"]["points"] for c in lesson.cells if c.metadata.get("nbgrader", {}).get("grade"))
    print("nbgrader's scores:", scores)
    assert scores == {"correct": (total, total), "empty": (0, total), "buggy": (total - len(BUGS), total)}
    assert not list(tmp.iterdir()), f"grading left {list(tmp.iterdir())} in the temporary folder"
    assert not list(Path(course, "autograded", "correct", student.ASSIGNMENT).glob("scripts"))

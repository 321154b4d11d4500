"""The student edition (tools/student.py): a blank at each core idea, each graded by its own check; a
hand-out that holds no solution in any file and, filled in, runs top to bottom; nbgrader's source version
with the markers and hidden tests that the lesson itself does not show."""
import os
import re
from pathlib import Path

import nbformat
import pytest
from lesson_cells import cells, failing_checks
from nbclient import NotebookClient

from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
BLANKS = student.blank_ids(LESSON)
GRADED = {c.metadata["nbgrader"]["grade_id"]: c for c in LESSON.cells if c.metadata.get("nbgrader", {}).get("grade")}


def graded_failures(notebook) -> set:
    return {name for name in failing_checks(cells(notebook)) if name in GRADED}


def test_the_committed_edition_is_the_lessons():
    assert student.main(["--check"]) == 0, "lab/Continuous_Control_student.ipynb is stale: make student"


def test_at_least_ten_blanks_each_with_a_hint_and_a_graded_check_of_its_own():
    assert len(BLANKS) >= 10 and set(BLANKS) == set(student.HINTS) and {"n-step-flush", "learn", "new-priority"} <= set(BLANKS)
    order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in LESSON.cells]
    for blank in BLANKS:
        check = GRADED[f"check-{blank}"].metadata["nbgrader"]
        assert check["locked"] and check["points"] >= 1 and not check["solution"]
        assert order.index(blank) < order.index(f"check-{blank}")
        assert re.match(r"\d(\.\d)?, ", student.HINTS[blank]), "a hint names its section"
    assert set(GRADED) == {f"check-{b}" for b in BLANKS} and set(student.HIDDEN) == set(GRADED)


def test_the_lesson_shows_no_grading_markers_and_the_source_version_has_them_all():
    assert not any("###" in c.source for c in LESSON.cells if c.cell_type == "code")
    source = student.source_notebook(LESSON)
    text = "\n".join(c.source for c in source.cells)
    assert text.count("### BEGIN SOLUTION") == text.count("### END SOLUTION") == len(BLANKS)
    assert text.count("### BEGIN HIDDEN TESTS") == text.count("### END HIDDEN TESTS") == len(GRADED)
    assert "jupytext" not in source.metadata and "jupytext" not in student.edition(LESSON).metadata


def test_empty_every_graded_check_fails_and_filled_none_does():
    assert graded_failures(student.edition(LESSON)) == set(GRADED)
    assert graded_failures(student.edition(LESSON, keep=set(BLANKS))) == set()


@pytest.mark.parametrize("blank", BLANKS)
def test_one_blank_left_fails_its_own_check_and_no_other(blank):
    assert graded_failures(student.edition(LESSON, keep=set(BLANKS) - {blank})) == {f"check-{blank}"}


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    return student.handout(str(tmp_path_factory.mktemp("handout")))


def test_the_handout_holds_no_solution_in_any_file(handout):
    lines = {line for body in student.solutions(LESSON).values() for line in body
             if len(line) >= 12 and not line.startswith("#")}
    found = []
    for path in Path(handout).rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".txt", ".json", ".toml"):
            text = path.read_text(encoding="utf-8", errors="replace")
            found += [(str(path.relative_to(handout)), line) for line in lines if line in text]
    assert not found, found


def test_the_filled_handout_runs_top_to_bottom_with_its_own_package(handout, monkeypatch):
    nb = nbformat.read(os.path.join(handout, "Continuous_Control.ipynb"), as_version=4)
    for cell, solved in zip(nb.cells, student.edition(LESSON, keep=set(BLANKS)).cells):
        cell.source = solved.source
    nb.cells.append(nbformat.v4.new_code_cell("import continuous_control.agent as a; print(a.__file__)"))
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.chdir(handout)                 # kernels talk over IPC sockets named relative to the folder
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": handout}}).execute()
    assert os.path.realpath(nb.cells[-1].outputs[0]["text"].strip()).startswith(os.path.realpath(handout))
    assert any("history = train(" in c.source and c.outputs for c in nb.cells)

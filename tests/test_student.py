"""The student edition (tools/student.py) is the lesson with a blank at each core idea, and the
lesson's own checks grade it: filled in, it runs to the end; with one blank left, the check right
after it fails, naming what to write, and every cell before that check runs."""
import os

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

from tools import student

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = nbformat.read(student.LESSON, as_version=4)
BLANKS = student.blanks(LESSON)
EXPECTED = ["ddpg-update"] * 3 + ["n-step-return", "sum-tree-walk", "importance-weights", "noisy-weights", "ou-step"]


def execute(nb, cells=None):
    """Run `nb` (its first `cells` cells) at SMOKE size in a fresh kernel, from the project's root."""
    nb = nbformat.from_dict(nb)
    if cells is not None:
        nb.cells = nb.cells[:cells]
    os.environ["SMOKE"] = "1"
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": ROOT}}).execute()
    return nb


def test_the_committed_edition_is_the_lessons():
    assert student.main(["--check"]) == 0, "lab/Continuous_Control_student.ipynb is stale: make student"


def test_each_core_idea_is_a_blank_with_a_hint_and_a_graded_check_after_it():
    assert [LESSON.cells[b["cell"]].metadata["nbgrader"]["grade_id"] for b in BLANKS] == EXPECTED
    for b in BLANKS:
        assert b["hint"], "a blank without a hint"
        check = LESSON.cells[b["check"]].metadata["nbgrader"]
        assert check["grade"] and check["locked"] and check["points"] >= 1 and not check["solution"]
        assert LESSON.cells[b["cell"]].metadata["nbgrader"]["solution"]
    edition = student.edition(LESSON)
    sources = [c.source for c in edition.cells if c.cell_type == "code"]
    assert sum(s.count("raise NotImplementedError(") for s in sources) == len(BLANKS)
    assert not any("SOLUTION" in s for s in sources)
    assert not any(c.get("outputs") for c in edition.cells if c.cell_type == "code")
    checks = [c.source for c in LESSON.cells if c.metadata.get("nbgrader", {}).get("grade")]
    assert checks == [c.source for c in edition.cells if c.metadata.get("nbgrader", {}).get("grade")]


def test_filled_in_the_edition_is_the_lessons_code_and_trains_at_smoke_size():
    filled = student.edition(LESSON, keep=set(range(len(BLANKS))))
    lesson_code = [student.blank(c.source, keep=set(range(99)), counter=[0]) if c.cell_type == "code" else c.source
                   for c in LESSON.cells]
    assert [c.source for c in filled.cells] == lesson_code
    executed = execute(filled)
    training = next(c for c in executed.cells if "history = train(" in c.source)
    assert "SMOKE = True" in str(executed.cells) and training.outputs


@pytest.mark.parametrize("k", range(len(EXPECTED)), ids=lambda k: f"{k}-{EXPECTED[k]}")
def test_one_blank_left_fails_the_check_right_after_it_and_nothing_before(k):
    blank = BLANKS[k]
    nb = student.edition(LESSON, keep=set(range(len(BLANKS))) - {k})
    with pytest.raises(CellExecutionError) as failed:
        execute(nb, cells=blank["check"] + 1)          # everything up to and including that check
    message = str(failed.value)
    assert "NotImplementedError" in message and blank["hint"][:40] in message
    assert nb.cells[blank["check"]].source.splitlines()[0] in message     # it is the check cell that failed

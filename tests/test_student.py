"""The student edition (tools/student.py): a blank at each core idea, each graded by its own check; a
hand-out that holds no solution in any file and, filled in, runs top to bottom; no visible check that states
an answer; nbgrader's source version with the markers that the lesson itself does not show."""

import ast
import json
import os
import re
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

import grader
from continuous_control.provenance import ROOT
from tools import student

LESSON = nbformat.read(student.LESSON, as_version=4)
BLANKS = student.blank_ids(LESSON)
GRADED = {
    c.metadata["nbgrader"]["grade_id"]: c
    for c in LESSON.cells
    if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")
}
BY_HAND = {
    c.metadata["nbgrader"]["grade_id"]: c
    for c in LESSON.cells
    if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("points")
}


def test_the_committed_edition_is_the_lessons():
    assert student.main(["--check"]) == 0, "lab/Continuous_Control_student.ipynb is stale: make student"


def test_at_least_ten_blanks_each_with_a_hint_and_a_graded_check_of_its_own():
    assert (
        len(BLANKS) >= 10
        and set(BLANKS) == set(student.HINTS)
        and {"n-step-flush", "learn", "new-priority"} <= set(BLANKS)
    )
    order = [c.metadata.get("nbgrader", {}).get("grade_id") for c in LESSON.cells]
    for blank in BLANKS:
        check = GRADED[f"check-{blank}"].metadata["nbgrader"]
        assert check["locked"] and check["points"] >= 1 and not check["solution"]
        assert order.index(blank) < order.index(f"check-{blank}")
        assert re.match(r"\d(\.\d)?, ", student.HINTS[blank]), "a hint names its section"
    assert set(GRADED) == {f"check-{b}" for b in BLANKS}


def test_the_run_and_the_report_are_graded_by_hand_with_the_rubrics_points():
    # a task (the full run's reward plot) and a written answer; doc/instructors.md's rubric gives their points
    assert BY_HAND["task-solved"].metadata["nbgrader"]["task"] and BY_HAND["report"].metadata["nbgrader"]["solution"]
    rubric = Path(ROOT, "doc", "instructors.md").read_text(encoding="utf-8")
    for grade_id, cell in BY_HAND.items():
        rows = re.findall(rf"^\| `{grade_id}` \|.*\| (\d+) \|$", rubric, re.M)
        assert [int(r) for r in rows] == [cell.metadata["nbgrader"]["points"]], grade_id
    assert all(c.metadata["nbgrader"]["points"] == 1 for c in GRADED.values())  # one automatic point a blank
    edition = student.edition(LESSON)
    answers = [c.source for c in edition.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "report"]
    assert answers == [student.ANSWER]


def test_the_lesson_shows_no_grading_markers_and_the_source_version_has_them_all():
    assert not any("###" in c.source for c in LESSON.cells if c.cell_type == "code")
    source = student.source_notebook(LESSON)
    text = "\n".join(c.source for c in source.cells)
    assert text.count("### BEGIN SOLUTION") == text.count("### END SOLUTION") == len(BLANKS)
    assert "HIDDEN TESTS" not in text  # the judge draws its own inputs: nothing to hide in a cell
    assert "jupytext" not in source.metadata and "jupytext" not in student.edition(LESSON).metadata


@pytest.fixture(scope="module")
def handout(tmp_path_factory):
    return student.handout(str(tmp_path_factory.mktemp("handout")))


# Expressions of a solution that are building blocks the given code shows too, not the answer: the twin
# critic's heads, the window's fullness, the tree's layout, the names of a batch's parts.
GIVEN = {
    "self.q1(state,action)",
    "self.q2(state,action)",
    "self.count==self.n",
    "online.parameters()",
    "2*node+1",
    "tree[2*node]",
    "s,a,ret,s_next,disc",
    "idx,weights,batch",
}


def squash(text: str) -> str:
    return re.sub(r"\s+", "", text)


def unhooked(text: str) -> str:
    """Squashed, and without what attributes hang on: `self.critic(s)` and `ddpg.critic(s)` read alike."""
    return re.sub(r"\b[A-Za-z_]\w*\.(?=[A-Za-z_])", "", squash(text))


def solution_keys() -> dict:
    """{blank: the key expressions of its solution}: every call, operation, comparison and subscript of at
    least 16 characters (spaces aside) in the body, not counting the docstring and the signature."""
    keys = {}
    for blank, source in grader.blank_sources(LESSON).items():
        found = set()
        for top in ast.parse(source).body:
            for statement in getattr(top, "body", []):
                for node in ast.walk(statement):
                    if isinstance(node, (ast.Call, ast.BinOp, ast.Compare, ast.Subscript, ast.UnaryOp, ast.Tuple)):
                        found.add(squash(ast.get_source_segment(source, node)))
        found -= GIVEN
        keys[blank] = {k for k in found if len(k) >= 16} or set(
            sorted(found, key=len)[-3:]
        )  # a short body: its longest
    return keys


def readable(path: Path) -> str:
    """A file's text, squashed; a notebook's or JSON file's as the strings it holds (no JSON escapes)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    if path.suffix in (".ipynb", ".json"):

        def strings(value):
            if isinstance(value, str):
                yield value
            for item in value.values() if isinstance(value, dict) else value if isinstance(value, list) else ():
                yield from strings(item)

        text = "\n".join(strings(json.loads(text)))
    return squash(text)


def solutions_in(folder) -> list:
    """(file, blank, expression) of every key expression of a solution found in a file of `folder`."""
    keys, found = solution_keys(), []
    for path in Path(folder).rglob("*"):
        if path.is_file() and path.suffix in (".py", ".ipynb", ".md", ".txt", ".json", ".toml", ".cfg"):
            text = readable(path)
            found += [(str(path.relative_to(folder)), b, k) for b, ks in keys.items() for k in ks if k in text]
    return found


def test_every_blank_has_key_expressions_and_the_lesson_holds_them():
    keys, lesson = solution_keys(), readable(Path(student.LESSON))
    assert all(keys.values()) and all(k in lesson for ks in keys.values() for k in ks)


def test_the_handout_holds_no_key_expression_of_any_solution(handout):
    assert solutions_in(handout) == []


def test_no_visible_check_states_an_answer():
    """No check cell holds a key expression of a solution, whatever object it is written on (`ddpg.` for
    `self.`), but for what the given code shows too."""
    edition = [c for c in student.edition(LESSON).cells if c.cell_type == "code"]
    given = unhooked("\n".join(c.source for c in edition if "export" in c.metadata.get("tags", [])))
    checks = unhooked("\n".join(c.source for c in edition if "export" not in c.metadata.get("tags", [])))
    keys = {(blank, unhooked(k)) for blank, ks in solution_keys().items() for k in ks}
    calls = {f"{name}()" for source in grader.blank_sources(LESSON).values() for name in grader.defined_names(source)}
    found = [(blank, k) for blank, k in keys if len(k) >= 16 and k not in given and k not in calls and k in checks]
    assert sorted(found) == []  # a check calls the function it checks, and states no more of it


def test_the_filled_handout_runs_top_to_bottom_with_its_own_package(handout, monkeypatch):
    nb = nbformat.read(os.path.join(handout, "Continuous_Control.ipynb"), as_version=4)
    for cell, solved in zip(nb.cells, student.edition(LESSON, keep=set(BLANKS)).cells):
        cell.source = solved.source
    nb.cells.append(nbformat.v4.new_code_cell("import continuous_control.agent as a; print(a.__file__)"))
    monkeypatch.setenv("SMOKE", "1")
    monkeypatch.chdir(handout)  # kernels talk over IPC sockets named relative to the folder
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": handout}}).execute()
    assert os.path.realpath(nb.cells[-1].outputs[0]["text"].strip()).startswith(os.path.realpath(handout))
    assert any("history = train(" in c.source and c.outputs for c in nb.cells)


def test_the_handout_holds_neither_the_reports_analyses_nor_its_saved_runs(handout):
    """The lesson reads the report's small tables in doc/; experiments/ and results/ stay with the maintainers,
    and nothing handed out imports experiments."""
    assert not Path(handout, "experiments").exists() and not Path(handout, "results").exists()
    assert Path(handout, "doc", "critic_q.csv").is_file() and Path(handout, "doc", "effects.csv").is_file()
    importing = re.compile(r"^\s*(from|import)\s+experiments\b", re.M)
    for path in Path(handout).rglob("*"):
        if path.suffix in (".py", ".ipynb"):
            text = (
                "\n".join(c.source for c in nbformat.read(path, as_version=4).cells)
                if path.suffix == ".ipynb"
                else path.read_text(encoding="utf-8")
            )
            assert not importing.search(text), f"{path.relative_to(handout)} imports experiments"


def test_the_handouts_requirements_are_pins_of_what_it_runs(handout):
    """One `name==version` a line, every name one the lab needs: nothing names the report's packages or files."""
    lines = Path(handout, "requirements.txt").read_text(encoding="utf-8").splitlines()
    pins = [line for line in lines if not line.startswith("#")]
    assert pins and all(re.fullmatch(r"[\w.-]+==[\w.+-]+", line) for line in pins), pins
    assert {line.split("==")[0] for line in pins} <= student.LAB_PACKAGES


def test_every_link_in_the_handout_leads_to_a_file_in_it(handout):
    links = []
    for path in [*Path(handout).glob("*.md"), Path(handout, "Continuous_Control.ipynb")]:
        text = (
            "\n".join(c.source for c in nbformat.read(path, as_version=4).cells if c.cell_type == "markdown")
            if path.suffix == ".ipynb"
            else path.read_text(encoding="utf-8")
        )
        links += [(path.name, target) for target in re.findall(r"\]\(([^)#\s]+)", text) if "://" not in target]
    assert links and [(name, t) for name, t in links if not Path(handout, t).exists()] == []


@pytest.mark.parametrize("where", ["a student's folder", "results/x", ".", "doc"])
def test_a_handout_never_writes_over_anything(tmp_path, where):
    """--handout into a folder that holds work, or inside the checkout (where it would copy itself into
    itself), stops with one sentence that names the folder, and writes nothing."""
    if where == "a student's folder":
        folder = tmp_path / "lab"
        folder.mkdir()
        (folder / "Continuous_Control.ipynb").write_text("my work")
    else:
        folder = Path(ROOT) / where
    with pytest.raises(SystemExit) as refused:
        student.main(["--handout", str(folder)])
    message = str(refused.value.code)
    assert message.startswith("refusing to write into") and str(folder) in message and "\n" not in message
    if where == "a student's folder":
        assert (folder / "Continuous_Control.ipynb").read_text() == "my work" and len(list(folder.iterdir())) == 1
    assert not (Path(ROOT) / "results" / "x").exists()


def test_a_grading_environment_whose_build_was_cut_short_is_built_again_and_no_other_folder(tmp_path, monkeypatch):
    """A `make test` killed while it built the grading environment leaves a half-made one; the next builds it
    again. A folder it did not start is still refused, naming it."""

    class Started(Exception):
        pass

    monkeypatch.setattr(student, "handout", lambda folder: (_ for _ in ()).throw(Started(folder)))
    folder = tmp_path / "grading"
    (folder / "venv").mkdir(parents=True)
    with pytest.raises(SystemExit, match=f"{folder}.*not an empty folder"):
        student.grading_env(str(folder))
    empty = tmp_path / "new"
    with pytest.raises(Started):  # a new folder: its build starts, and marks it
        student.grading_env(str(empty))
    assert (empty / student.BUILDING).exists()
    (empty / "venv").mkdir()  # what the cut-short build left
    with pytest.raises(Started):
        student.grading_env(str(empty))


def test_a_hand_out_is_never_written_to_an_empty_path_or_through_a_link(tmp_path, capsys):
    with pytest.raises(SystemExit) as end:
        student.main(["--handout", ""])
    assert end.value.code == 2 and "--handout needs a folder" in capsys.readouterr().err
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with pytest.raises(SystemExit, match="symbolic link"):
        student.main(["--handout", str(tmp_path / "link")])
    assert list((tmp_path / "real").iterdir()) == []

"""nbgrader as a course runs it (doc/instructors.md), end to end: nbgrader 0.9 in an environment of its own,
the grading kernel in one made from the hand-out alone, sandboxed by bubblewrap. generate, release, fetch
and submit as each student, collect, autograde, feedback and export (benchmarks/grading.py's flow), for
every kind of submission: each blank's points are what its own code earns, whatever the other blanks do."""

import ast
import base64
import csv
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path

import nbformat
import pytest
from test_student import solutions_in

from benchmarks import grading
from tools import student

BLANKS = student.blank_ids()
SOLVED = grading.blank_sources(nbformat.read(student.LESSON, as_version=4))
KINDS = grading.submissions(SOLVED)


def combined(*names: str) -> dict:
    """One submission that makes the changes of each of the kinds `names` to the correct one."""
    out = dict(SOLVED)
    for name in names:
        sources = KINDS[name][1]
        out.update({blank: source for blank, source in sources.items() if source != SOLVED[blank]})
        out = {blank: source for blank, source in out.items() if blank in sources}  # a blank left as handed out
    return out


CHEATS = grading.cheats(SOLVED)


def with_cheats(*names: str) -> dict:
    """The correct submission with the blanks of each cheat of `names`."""
    out = dict(SOLVED)
    for name in names:
        out.update(CHEATS[name])
    return out


# Submissions of every kind (benchmarks/grading.py grades each kind alone), and the blanks that earn no
# point; every other blank earns its one point. Two of them make several kinds of change at once, each to
# another blank: one mistake still costs one point.
MISTAKES = ("buggy: online actor", "buggy: tau, n-step", "one blank left")
ATTACKS = ("cheat: reads the key", "cheat: patches", "loop: compiled walk")
SUBMISSIONS = {
    "correct": (KINDS["correct"][1], set()),
    "empty": (KINDS["empty"][1], set(BLANKS)),
    "alternatives": ({**SOLVED, **grading.ALTERNATIVES}, set()),
    "mistakes: two bugs, a blank left": (
        combined(*MISTAKES),
        {"ddpg-target", "ddpg-soft-update", "n-step-return", "ou-step"},
    ),
    "cheats and loops": (
        combined(*ATTACKS, "loop: training path"),
        {"importance-weights", "ddpg-soft-update", "sum-tree-walk", "n-step-return"},
    ),
    "attack: forges the reply": (KINDS["attack: forges the reply on every descriptor"][1], {"importance-weights"}),
    "attack: signals": (KINDS["attack: signals every process it can"][1], {"importance-weights"}),
    "a symbolic link to the answer key": (KINDS["empty"][1], set(BLANKS)),
    # attacks on the judge's implementation (benchmarks/grading.py): each costs its own blank, and the blanks
    # graded after it keep their points
    "attack: forged replies": (
        with_cheats(
            "forged: bad base64",
            "forged: a shape whose size overflows",
            "forged: integers of 400 digits",
            "forged: a 64 MiB line",
        ),
        {"importance-weights", "sum-tree-walk", "new-priority", "noisy-weights"},
    ),  # fmt: skip
    "attack: state, limits and shortcuts": (
        {
            **with_cheats(
                "state left for the next blank",
                "children over the sandbox's processor time",
                "40 spinning processes",
                "OU: noise of +-1",
                "twin critic: one head",
            ),
            "ddpg-target": grading.OVER_MEMORY + SOLVED["ddpg-target"],
        },
        {
            "importance-weights",
            "new-priority",
            "n-step-return",
            "sum-tree-walk",
            "ou-step",
            "clipped-double-q",
            "ddpg-target",
        },
    ),  # fmt: skip
    "attack: copies of every check, one blank solved": (  # every other blank a reply the judge cannot decode
        {
            blank: source if blank == "importance-weights" else grading.forging(grading.FORGED["bad base64"][1], source)
            for blank, source in SOLVED.items()
        },
        set(BLANKS) - {"importance-weights"},
    ),
    "copies of every check, all solved": (KINDS["correct"][1], set()),
    "a link planted in the exchange": (KINDS["correct"][1], set(BLANKS)),
}
COPIES = ("attack: copies of every check, one blank solved", "copies of every check, all solved")
# The answer key, linked beside an empty notebook (`nbgrader submit` copies what the link points to): no file
# beside the notebook is read, so it earns nothing.
# The reward plot of a student's full run, as the training cell's saved output.
FIGURE = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
LINKS = {"a symbolic link to the answer key": {"key.ipynb": student.LESSON}}
PLANTED = {"a link planted in the exchange": {"key.json": "KEY"}}  # the grading environment's answer key
LOST = {name: lost for name, (_, lost) in SUBMISSIONS.items()}


def environments():
    """nbgrader's environment and the grading kernel's (both cached under .venv/cache/), or a skip that says
    why they cannot be made: no bubblewrap, or no package index."""
    if shutil.which("bwrap") is None:
        pytest.skip("the grading kernel needs bubblewrap (`apt install bubblewrap`); .ci/run installs it")
    try:
        return grading.nbgrader_env(), student.grading_env(str(grading.CACHE / "grading"))
    except (RuntimeError, subprocess.CalledProcessError) as error:
        try:
            urllib.request.urlopen("https://pypi.org/simple/nbgrader/", timeout=15)
        except OSError as offline:
            pytest.skip(f"the package index is unreachable ({offline}), so nbgrader cannot be installed")
        raise error


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    bin_, jupyter_path = environments()
    folder = tmp_path_factory.mktemp("course")
    course = grading.Course(folder, bin_, jupyter_path)
    course.env["GRADER_CPU"] = "3"  # a loop costs its blank's point after 3 s of processor time instead of 10
    course.release()
    key = str(Path(jupyter_path).parents[2] / "key.json")
    planted = {name: {link: key for link in files} for name, files in PLANTED.items()}
    sources = {name: sources for name, (sources, _) in SUBMISSIONS.items()}
    course.submit(sources, LINKS, {"correct": FIGURE}, COPIES, planted)
    course.commands(
        [
            (("collect", student.ASSIGNMENT), None),
            (("autograde", student.ASSIGNMENT, "--create", "--force"), None),
            (("generate_feedback", student.ASSIGNMENT, "--force"), None),
            (("release_feedback", student.ASSIGNMENT), None),
            (("export", "--to", folder / "grades.csv"), None),
        ]
    )
    return course


def test_the_submissions_are_what_they_say():
    attacks = SUBMISSIONS["cheats and loops"][0]
    assert (
        attacks["importance-weights"] == grading.READS_THE_KEY
        and attacks["ddpg-soft-update"] == grading.PATCHES_THE_CHECK
    )
    assert "spin > 0" in attacks["sum-tree-walk"] and "spin > 0" in attacks["n-step-return"]
    assert "ou-step" not in SUBMISSIONS["mistakes: two bugs, a blank left"][0] and set(grading.ALTERNATIVES) == set(
        BLANKS
    )


def test_each_blank_earns_its_point_by_its_own_code_alone(graded):
    """Cheats and copies of checks included: each costs its own blank, whatever it does to the judge."""
    points = graded.points()
    assert {name: {b for b, p in points[name].items() if p != 1} for name in LOST} == LOST
    assert all(set(points[name]) == set(BLANKS) for name in LOST)


def test_every_submission_is_graded_exported_and_gets_feedback(graded):
    with open(graded.folder / "grades.csv") as grades:
        scores = {row["student_id"]: float(row["score"]) for row in csv.DictReader(grades)}
    assert scores == {graded.ids[name]: len(BLANKS) - len(lost) for name, lost in LOST.items()}
    for name, sid in graded.ids.items():
        assert (graded.course / "autograded" / sid / student.ASSIGNMENT / "Continuous_Control.ipynb").exists(), name
        assert list((graded.course / "feedback" / sid / student.ASSIGNMENT).glob("*.html")), name


def test_the_students_saved_reward_plot_reaches_the_grader(graded):
    autograded = graded.course / "autograded" / graded.ids["correct"] / student.ASSIGNMENT / "Continuous_Control.ipynb"
    cells = [
        c
        for c in nbformat.read(autograded, as_version=4).cells
        if c.cell_type == "code" and "history = train(" in c.source
    ]
    shown = [
        base64.b64decode(o.data["image/png"]) for c in cells for o in c.outputs if "image/png" in o.get("data", {})
    ]
    assert cells and shown == [FIGURE] * len(cells)


def test_the_release_is_the_edition_and_holds_no_solution(graded):
    release = graded.course / "release" / student.ASSIGNMENT
    notebook = nbformat.read(release / "Continuous_Control.ipynb", as_version=4)
    assert "jupytext" not in notebook.metadata
    assert [c.source for c in notebook.cells] == [c.source for c in nbformat.read(student.EDITION, as_version=4).cells]
    assert solutions_in(release) == []
    # what the self-check needs (`python -m grader`): the edition, beside the grader
    shipped = nbformat.read(release / "grader" / "edition.json", as_version=4)
    assert [c.source for c in shipped.cells] == [c.source for c in nbformat.read(student.EDITION, as_version=4).cells]


def test_grading_runs_no_student_code_outside_the_checks_and_leaves_no_temporary_files(graded):
    assert not list((graded.folder / "tmp").iterdir())
    autograded = graded.course / "autograded" / graded.ids["correct"] / student.ASSIGNMENT
    assert not list(autograded.glob("checkpoints")) and not list(autograded.glob("scripts"))


def test_the_handouts_environment_imports_everything_the_lab_imports(tmp_path):
    """The environment made from the hand-out's requirements alone (the grading kernel's) has every package
    the student edition imports: a student who installs it can run the lab."""
    _, jupyter_path = environments()
    python = Path(jupyter_path).parent.parent / "bin" / "python"
    modules = set()
    for cell in nbformat.read(student.EDITION, as_version=4).cells:
        if cell.cell_type == "code":
            for node in ast.walk(ast.parse(cell.source)):
                if isinstance(node, ast.Import):
                    modules |= {alias.name for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0:
                    modules.add(node.module)
    assert {"torch", "reacher", "continuous_control.results"} <= modules
    script = "import importlib, sys\nfor m in sys.argv[1:]: importlib.import_module(m)"
    done = subprocess.run(
        [str(python), "-I", "-c", script, *sorted(modules)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"MPLBACKEND": "Agg", "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_no_file_handed_in_beside_the_notebook_goes_past_the_exchange(graded):
    for name in ("a symbolic link to the answer key", "a link planted in the exchange"):
        sid = graded.ids[name]
        for stage in ("submitted", "autograded", "feedback"):
            folder = graded.course / stage / sid / student.ASSIGNMENT
            names = {path.name for path in folder.rglob("*")}
            assert not names & {"key.ipynb", "key.json"}, (name, stage, names)
            for path in folder.rglob("*"):
                assert path.is_dir() or b"BEGIN SOLUTION" not in path.read_bytes(), (name, path)


def test_a_link_planted_in_the_exchange_is_refused_in_every_graded_cell(graded):
    sid = graded.ids["a link planted in the exchange"]
    notebook = graded.course / "autograded" / sid / student.ASSIGNMENT / "Continuous_Control.ipynb"
    graded_cells = [
        c for c in nbformat.read(notebook, as_version=4).cells if c.metadata.get("nbgrader", {}).get("grade")
    ]
    checks = [
        c for c in graded_cells if c.cell_type == "code" and c.metadata["nbgrader"]["grade_id"].startswith("check-")
    ]
    assert len(checks) == len(BLANKS)
    for cell in checks:
        assert any("refused" in o.get("evalue", "") and "key.json" in o.get("evalue", "") for o in cell.outputs)


@pytest.mark.parametrize(
    "name", ["mistakes: two bugs, a blank left", "attack: forged replies", "attack: state, limits and shortcuts"]
)
def test_the_command_line_gives_the_points_nbgrader_gives(graded, name):
    sid = graded.ids[name]
    notebook = graded.course / "submitted" / sid / student.ASSIGNMENT / "Continuous_Control.ipynb"
    key = Path(graded.env["JUPYTER_PATH"]).parents[2] / "key.json"
    done = subprocess.run(
        [sys.executable, "-m", "grader", str(notebook), "--key", str(key)],
        capture_output=True,
        text=True,
        timeout=900,
        env={**graded.env, "GRADER_CPU": "3"},
    )
    lines = [line.split() for line in done.stdout.splitlines() if line.split()[:1] and line.split()[0] in BLANKS]
    assert {words[0]: int(words[1] == "passed") for words in lines} == graded.points()[name], done.stdout

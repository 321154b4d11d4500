"""nbgrader's side of the grading: what the course's nbgrader_config.py adds to nbgrader (`configure(c)`).

Trusted by: the instructor. It runs in nbgrader's own environment (it imports nothing of this project), copied
into the course folder by `python -m tools.student --course COURSE`, and does two things there:

- `Collect`, the exchange's collect step: a hand-in becomes its notebook and nbgrader's own timestamp and
  secret, nothing else. A file beside them is left in the exchange (nothing of it reaches `submitted/`,
  `autograded/` or `feedback/`); a symbolic link anywhere in the hand-in is not followed, and the hand-in is
  refused: `REFUSED` beside the notebook names the links, and every graded cell says so (`grader.kernel`).
- `OnlyGradedChecks`, before the notebook runs: a code cell that repeats a graded check's text but is not that
  graded cell becomes a comment, so that each blank is judged once, at its graded cell.

The course's config loads it as a part of itself (`load_subconfig("nbgrader_hooks.py")`), which calls
`configure` on nbgrader's configuration: nothing is put on Python's path.
"""

import os
import shutil

from nbgrader.exchange.default.collect import ExchangeCollect
from nbgrader.preprocessors import NbGraderPreprocessor

NOTEBOOK = "Continuous_Control.ipynb"
KEPT = (NOTEBOOK, "timestamp.txt", "submission_secret.txt")  # and nbgrader's own two files
REFUSED = "REFUSED"  # the note of a refused hand-in, which the grading kernel reads
COPY = "# A copy of a graded check: each check is graded once, in its own cell, so this copy is not run.\n"


def _links(folder: str) -> list[str]:
    """Every symbolic link under `folder`, not followed."""
    found = []
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            if os.path.islink(os.path.join(root, name)):
                found.append(os.path.relpath(os.path.join(root, name), folder))
    return sorted(found)


def _copy(src: str, dest: str, limit: int) -> None:
    """A regular file of at most `limit` bytes, read without following a link, written anew."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as source:
        if not os.path.isfile(src) or os.fstat(source.fileno()).st_size > limit:
            return
        out = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(out, "wb") as target:
            shutil.copyfileobj(source, target)


class Collect(ExchangeCollect):
    """nbgrader's collect, taking of each hand-in only its notebook and timestamp (see the module's docstring)."""

    def do_copy(self, src, dest, log=None):
        os.makedirs(dest)
        limit = 1000 * self.coursedir.max_file_size
        links = _links(src)
        for name in KEPT:
            path = os.path.join(src, name)
            if name not in links and os.path.isfile(path):
                _copy(path, os.path.join(dest, name), limit)
        if links:
            self.log.warning("refused the hand-in %s: symbolic links %s", src, ", ".join(links))
            with open(os.path.join(dest, REFUSED), "x", encoding="utf-8") as note:
                note.write("symbolic links in the hand-in: " + ", ".join(links)[:500] + "\n")


class OnlyGradedChecks(NbGraderPreprocessor):
    """Copies of graded checks become comments (see the module's docstring); enabled, as nbgrader's own are."""

    def preprocess(self, nb, resources):
        graded = {
            cell.source.strip()
            for cell in nb.cells
            if cell.cell_type == "code" and cell.metadata.get("nbgrader", {}).get("grade")
        }
        for cell in nb.cells:
            grade = cell.metadata.get("nbgrader", {}).get("grade")
            if cell.cell_type == "code" and not grade and cell.source.strip() in graded:
                cell.source = COPY
        return nb, resources


def configure(c) -> None:
    """Add both to nbgrader's configuration `c` (the course's nbgrader_config.py calls this)."""
    from nbgrader.converters.autograde import Autograde

    c.ExchangeFactory.collect = Collect
    defaults = Autograde.class_traits()["autograde_preprocessors"].default()
    c.Autograde.autograde_preprocessors = [OnlyGradedChecks, *defaults]


if "get_config" in globals():  # run by the course's nbgrader_config.py through load_subconfig
    configure(globals()["get_config"]())

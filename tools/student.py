"""The student edition of the lesson: a blank at each core idea, graded by the lesson's own checks.

    python -m tools.student            # write lab/Continuous_Control_student.ipynb from the lesson
    python -m tools.student --check    # exit 1 if the committed edition is not what the lesson gives

The lesson marks each core idea with nbgrader's delimiters, one comment line at each end:

        ### BEGIN SOLUTION: <a one-line hint>
        ...the solution...
        ### END SOLUTION

and carries nbgrader's cell metadata: `solution: true` on the cells that hold a region, and
`grade: true` (1 point, locked) on the check cell that follows each, so that `nbgrader
generate_assignment` and `nbgrader autograde` work on it as they are. This exporter does what
nbgrader's ClearSolutions and ClearOutput do, with nbgrader's format, but puts the hint in the stub:
each region becomes `raise NotImplementedError("<hint>")` at the region's indentation, and every
output is cleared. The checks are left as they are; the first one after a blank fails on it.
"""
import argparse
import copy
import os
import re
import sys
from pathlib import Path

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = os.path.join(ROOT, "Continuous_Control.ipynb")
EDITION = os.path.join(ROOT, "lab", "Continuous_Control_student.ipynb")
BEGIN = re.compile(r"^(\s*)#+ BEGIN SOLUTION:?\s*(.*)$")
END = re.compile(r"^\s*#+ END SOLUTION\b")


def regions(source: str) -> list[tuple[int, int, str, str]]:
    """(first line, last line, indentation, hint) of each solution region of a cell's source, the
    delimiter lines included; ValueError for a region left open or an END without a BEGIN."""
    found, start = [], None
    for number, line in enumerate(source.splitlines()):
        begin, end = BEGIN.match(line), END.match(line)
        if begin:
            if start is not None:
                raise ValueError(f"a BEGIN SOLUTION inside another region: {line.strip()!r}")
            start, indent, hint = number, begin.group(1), begin.group(2).strip()
        elif end:
            if start is None:
                raise ValueError(f"an END SOLUTION with no BEGIN: {line.strip()!r}")
            found.append((start, number, indent, hint))
            start = None
    if start is not None:
        raise ValueError("a BEGIN SOLUTION with no END SOLUTION")
    return found


def blank(source: str, keep: set = frozenset(), counter: list | None = None) -> str:
    """The source with each region replaced by `raise NotImplementedError(hint)`; the regions whose
    number (counted over the whole notebook by `counter`) is in `keep` keep their solution, delimiters dropped."""
    lines, out, position = source.splitlines(), [], 0
    counter = [0] if counter is None else counter
    for first, last, indent, hint in regions(source):
        out += lines[position:first]
        if counter[0] in keep:
            out += lines[first + 1:last]
        else:
            out.append(f"{indent}raise NotImplementedError({hint or 'your code here'!r})")
        counter[0] += 1
        position = last + 1
    return "\n".join(out + lines[position:])


def edition(lesson, keep: set = frozenset()):
    """The student edition of a lesson notebook (nbformat), outputs cleared; `keep`: the blanks filled
    back in, by number (0 is the first region of the notebook)."""
    nb = copy.deepcopy(lesson)
    nb.metadata.pop("widgets", None)
    nb.metadata.pop("jupytext", None)              # the edition has no text twin
    counter = [0]
    for cell in nb.cells:
        cell.metadata = {k: v for k, v in cell.metadata.items() if k in ("tags", "nbgrader")}   # no run's timings
        if cell.cell_type == "code":
            cell.source = blank(cell.source, keep, counter)
            cell.outputs, cell.execution_count = [], None
    return nb


def blanks(lesson) -> list[dict]:
    """Each region in order: its cell, hint, and the graded check cell after it."""
    found = []
    for index, cell in enumerate(lesson.cells):
        if cell.cell_type != "code":
            continue
        for _, _, _, hint in regions(cell.source):
            check = next(k for k in range(index + 1, len(lesson.cells))
                         if lesson.cells[k].metadata.get("nbgrader", {}).get("grade"))
            found.append({"cell": index, "hint": hint, "check": check})
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed edition is out of date")
    args = parser.parse_args(argv)
    wanted = nbformat.writes(edition(nbformat.read(LESSON, as_version=4))) + "\n"
    if args.check:
        current = Path(EDITION).read_text(encoding="utf-8") if os.path.exists(EDITION) else ""
        if current != wanted:
            print(f"{os.path.relpath(EDITION, ROOT)} is not the lesson's student edition: run `make student`")
            return 1
        return 0
    os.makedirs(os.path.dirname(EDITION), exist_ok=True)
    with open(EDITION, "w", encoding="utf-8") as f:
        f.write(wanted)
    print(f"wrote {os.path.relpath(EDITION, ROOT)}: {len(blanks(nbformat.read(LESSON, as_version=4)))} blanks")
    return 0


if __name__ == "__main__":
    sys.exit(main())

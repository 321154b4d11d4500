"""Run the lesson's code and its checks without the environment: each check cell in order, in one
fresh process, reporting which checks fail. tests/test_bugs.py plants one bug at a time in it."""
import json
import os
import re
import subprocess
import sys

import nbformat

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSON = os.path.join(ROOT, "Continuous_Control.ipynb")
# What the first cells learn from the environment, for the cells that follow.
SIZES = "state_size, action_size, num_agents = 33, 4, 20\n"
RUNNER = r'''
import json, sys, traceback
import matplotlib
matplotlib.use("Agg")
import torch
torch.set_num_threads(1)
cells, failed = json.load(sys.stdin), {}
namespace = {"__name__": "__main__"}
for name, source in cells:
    try:
        exec(compile(source, name, "exec"), namespace)
    except BaseException as error:          # a check that fails, or code that no longer defines what follows
        failed[name] = f"{type(error).__name__}: {error}"[:300]
print("FAILED " + json.dumps(failed))
'''


def check_name(cell) -> str | None:
    """A check cell's name: its nbgrader grade_id, or `check:` and its first line for an ungraded one."""
    grading = cell.metadata.get("nbgrader", {})
    if grading.get("grade"):
        return grading["grade_id"]
    if "nbval-check-output" in cell.metadata.get("tags", []) and "assert" in cell.source:
        return "check: " + cell.source.splitlines()[0][:60]
    return None


USES_ENV = re.compile(r"(?<![\w.])env(\.|_info)")         # the notebook's environment, not a parameter's


def cells(notebook=None) -> list[tuple[str, str]]:
    """(name, source) of the agent's code and of every check that needs no environment, in order."""
    nb = notebook or nbformat.read(LESSON, as_version=4)
    out = [("sizes", SIZES)]
    for index, cell in enumerate(nb.cells):
        if cell.cell_type != "code":
            continue
        if "export" in cell.metadata.get("tags", []):
            out.append((f"cell {index}", cell.source))
        elif check_name(cell) and not USES_ENV.search(cell.source):
            out.append((check_name(cell) + ("" if cell.metadata.get("nbgrader") else f" (cell {index})"), cell.source))
    return out


def failing_checks(program: list[tuple[str, str]], timeout: float = 300) -> dict:
    """{name: error} of the cells that fail when `program` runs in a fresh Python."""
    done = subprocess.run([sys.executable, "-c", RUNNER], input=json.dumps(program), capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT)
    line = next((x for x in done.stdout.splitlines() if x.startswith("FAILED ")), None)
    assert line, done.stderr[-3000:]
    return json.loads(line[len("FAILED "):])

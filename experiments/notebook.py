"""Run the training notebook's own code headless.

The notebook teaches by defining its classes inline, and the experiments must run exactly that
code, not a copy. So this module reads the notebook's jupytext twin
(`scripts/Continuous_Control.py`, kept in sync with the .ipynb by a test) and executes the cells
tagged `definitions` into a fresh namespace: `Config`, `Agent`, `train`, ... A change to the
notebook is a change to the experiments.
"""
import os

import jupytext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWIN = os.path.join(ROOT, "scripts", "Continuous_Control.py")


def load_definitions(path: str = TWIN) -> dict:
    notebook = jupytext.read(path)
    cells = [c.source for c in notebook.cells
             if c.cell_type == "code" and "definitions" in c.metadata.get("tags", [])]
    namespace = {"__name__": "continuous_control"}
    exec(compile("\n\n".join(cells), path, "exec"), namespace)
    return namespace

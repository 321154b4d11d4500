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


def config_docs(path: str = TWIN) -> dict:
    """{field: docstring} of the notebook's `Config` dataclass (one docstring under each field)."""
    import ast
    cells = [c.source for c in jupytext.read(path).cells if "class Config" in c.source]
    tree = ast.parse(cells[0])
    body = next(n for n in ast.walk(tree) if isinstance(n, ast.ClassDef) and n.name == "Config").body
    return {field.target.id: doc.value.value
            for field, doc in zip(body, body[1:])
            if isinstance(field, ast.AnnAssign) and isinstance(doc, ast.Expr) and isinstance(doc.value, ast.Constant)}

"""Run the training notebook's own code headless.

The notebook teaches by defining its classes inline, and the experiments must run exactly that
code, not a copy. So this module reads the notebook's jupytext twin
(`scripts/Continuous_Control.py`, kept in sync with the .ipynb by a test) and executes the cells
tagged `definitions` into a fresh namespace: `Config`, `Agent`, `train`, ... A change to the
notebook is a change to the experiments. Each cell is compiled at its own line in the twin, so a
traceback points at the line a reader can open.
"""
import os

import jupytext

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWIN = os.path.join(ROOT, "scripts", "Continuous_Control.py")
HEADER = '# %% tags=["definitions"]'


def definition_cells(path: str = TWIN) -> list:
    """(first line, source) of each `definitions` cell, the line 1-based in the twin."""
    lines = open(path).read().split("\n")
    sources = [c.source for c in jupytext.read(path).cells
               if c.cell_type == "code" and "definitions" in c.metadata.get("tags", [])]
    headers = [i for i, line in enumerate(lines) if line.strip() == HEADER]
    if len(headers) != len(sources):
        raise ValueError(f"{path}: {len(headers)} '{HEADER}' lines for {len(sources)} definition cells")
    cells = []
    for header, source in zip(headers, sources):
        first = header + 2                                   # the line after the header, 1-based
        body = source.split("\n")
        if lines[first - 1:first - 1 + len(body)] != body:
            raise ValueError(f"{path}: the definition cell after line {header + 1} is not where expected")
        cells.append((first, source))
    return cells


def load_definitions(path: str = TWIN) -> dict:
    namespace = {"__name__": "continuous_control"}
    for first, source in definition_cells(path):
        exec(compile("\n" * (first - 1) + source, path, "exec"), namespace)
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

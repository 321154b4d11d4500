"""Export the notebook's agent to `continuous_control/agent.py`, as nbdev exports `#| export` cells.

    python -m continuous_control.export            # (re)write agent.py from Continuous_Control.ipynb
    python -m continuous_control.export --check    # exit 1, naming the difference, if they differ

The notebook is the only hand-edited source of the agent; experiments, benchmarks and tests import the
module (pickle works; linters, editors and tracebacks see a real file). tests/test_notebooks.py keeps them equal.
"""

import argparse
import ast
import difflib
import json
import os
import sys
import textwrap
from pathlib import Path

from .provenance import ROOT

NOTEBOOK = os.path.join(ROOT, "Continuous_Control.ipynb")
MODULE = os.path.join(ROOT, "continuous_control", "agent.py")
TAG = "export"
IMPORTS = (ast.Import, ast.ImportFrom)
HEADER = '''"""The agent of Continuous_Control.ipynb: DDPG with n-step targets, prioritized replay and NoisyNet.

GENERATED from the notebook's cells tagged `export` by `python -m continuous_control.export`.
Do not edit: edit the notebook, then export (`make export`). Each block below names its section.
"""
'''


def module_source(notebook: str = NOTEBOOK) -> str:
    """The module's text: the header, then the exported cells, each section's under one heading. A function
    decorated `@method_of(Cls)` in a later cell goes into the body of `class Cls`, as nbdev folds `@patch`."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    blocks = []  # [heading, source] in the notebook's order; a class's block grows by its methods
    classes = {}  # class name: its block
    heading = None
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            titles = [line.lstrip("#").strip() for line in source.splitlines() if line.startswith("#")]
            heading = titles[-1] if titles else heading
        elif TAG in cell.get("metadata", {}).get("tags", []):
            for node, owner, text in statements(source):
                if getattr(node, "name", None) == "method_of":  # how the notebook grows a class; no module needs it
                    continue
                if owner is None:
                    blocks.append([heading, text])
                    if isinstance(node, ast.ClassDef):
                        classes[node.name] = blocks[-1]
                elif owner in classes:
                    classes[owner][1] += "\n\n" + textwrap.indent(text, "    ")
                else:
                    raise ValueError(f"@method_of({owner}) in {notebook}: no exported class {owner} before it")
    out, last = [], None
    for block_heading, text in blocks:
        if block_heading != last and block_heading:
            text = f"# --- {block_heading} ---\n" + text
        last = block_heading
        out.append(text.strip("\n") + "\n")
    return HEADER + "\n" + "\n\n".join(out)  # one blank line after the docstring, two between blocks


def statements(source: str):
    """(the statement's node or None, the class a `@method_of` function belongs to or None, its text) for each top-level
    statement of a cell, with the comments above it (comments after the last one as a statement of their own);
    a method's `@method_of` line dropped; a run of imports is one statement, as `ruff format` keeps it. A
    ValueError for a method that folding would change."""
    lines = source.splitlines()
    start = 0  # the first line (0-based) after the previous statement
    body = ast.parse(source).body
    for node, after in zip(body, [*body[1:], None]):
        if isinstance(node, IMPORTS) and isinstance(after, IMPORTS):
            continue  # its lines go with the run's last import
        text = lines[start : node.end_lineno]
        owner = None
        for d in getattr(node, "decorator_list", []):
            if isinstance(d, ast.Call) and getattr(d.func, "id", None) == "method_of":
                if len(d.args) != 1 or not isinstance(d.args[0], ast.Name):
                    raise ValueError(f"line {d.lineno}: @method_of takes a class by its plain name")
                owner = d.args[0].id
                check_foldable(node)
                del text[d.lineno - 1 - start : d.end_lineno - start]
        start = node.end_lineno
        yield node, owner, "\n".join(text).strip("\n")
    if "".join(lines[start:]).strip():
        yield None, None, "\n".join(lines[start:]).strip("\n")


def check_foldable(function: ast.FunctionDef) -> None:
    """Indenting a method into its class keeps its meaning unless a string other than its docstring spans lines."""
    docstring = function.body[0].value if ast.get_docstring(function) is not None else None
    for node in ast.walk(function):
        multiline = isinstance(node, ast.Constant) and isinstance(node.value, str) and node.end_lineno > node.lineno
        if multiline and node is not docstring:
            raise ValueError(
                f"{function.name}, line {node.lineno}: a string over several lines would change "
                "when the method is indented into its class; join it into one line"
            )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if agent.py is out of date")
    args = parser.parse_args(argv)
    wanted = module_source()
    current = Path(MODULE).read_text(encoding="utf-8") if os.path.exists(MODULE) else ""
    if args.check:
        if current != wanted:
            diff = difflib.unified_diff(
                current.splitlines(), wanted.splitlines(), "agent.py", "the notebook", lineterm=""
            )
            print("\n".join(list(diff)[:40]))
            print("continuous_control/agent.py differs from the notebook: run `python -m continuous_control.export`")
            return 1
        return 0
    with open(MODULE, "w", encoding="utf-8") as f:
        f.write(wanted)
    print(f"wrote {os.path.relpath(MODULE, ROOT)} from {os.path.relpath(NOTEBOOK, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

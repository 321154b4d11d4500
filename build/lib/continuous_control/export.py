"""Export the notebook's agent to `continuous_control/agent.py`, as nbdev exports `#| export` cells.

    python -m continuous_control.export            # (re)write agent.py from Continuous_Control.ipynb
    python -m continuous_control.export --check    # exit 1, naming the difference, if they differ

The notebook is the only hand-edited source of the agent; experiments, benchmarks and tests import the
module (pickle works; linters, editors and tracebacks see a real file). tests/test_notebooks.py keeps them equal.
"""
import argparse
import difflib
import json
import os
import sys
from pathlib import Path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, "Continuous_Control.ipynb")
MODULE = os.path.join(ROOT, "continuous_control", "agent.py")
TAG = "export"
HEADER = '''"""The agent of Continuous_Control.ipynb: DDPG with n-step targets, prioritized replay and NoisyNet.

GENERATED from the notebook's cells tagged `export` by `python -m continuous_control.export`.
Do not edit: edit the notebook, then export (`make export`). Each block below names its section.
"""
'''


def module_source(notebook: str = NOTEBOOK) -> str:
    """The module's text: the header, then each exported cell under the notebook heading it follows."""
    cells = json.loads(Path(notebook).read_text(encoding="utf-8"))["cells"]
    blocks, heading = [HEADER], None
    for cell in cells:
        source = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            titles = [line.lstrip("#").strip() for line in source.splitlines() if line.startswith("#")]
            heading = titles[-1] if titles else heading
        elif TAG in cell.get("metadata", {}).get("tags", []):
            blocks.append((f"# --- {heading} ---\n" if heading else "") + source.strip() + "\n")
    return "\n\n".join(blocks)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if agent.py is out of date")
    args = parser.parse_args(argv)
    wanted = module_source()
    current = Path(MODULE).read_text(encoding="utf-8") if os.path.exists(MODULE) else ""
    if args.check:
        if current != wanted:
            diff = difflib.unified_diff(current.splitlines(), wanted.splitlines(), "agent.py", "the notebook", lineterm="")
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

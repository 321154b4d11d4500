"""How much a notebook asks of its reader, section by section: words of prose, lines of code, the
longest cell, and the figures its outputs hold.

    python -m tools.reading Continuous_Control.ipynb            # the working copy
    python -m tools.reading Continuous_Control.ipynb --rev HEAD~5   # the notebook as committed then

A section starts at each `## ` heading (the title and the box before section 1 count as "0").
Words are whitespace-separated tokens of markdown cells, math included; code lines are non-blank
lines of code cells; a figure is an image/png output.
"""
import argparse
import json
import re
import subprocess


def sections(nb: dict) -> dict:
    """{section: {"words", "code_lines", "cells", "longest", "figures"}} in the notebook's order."""
    out, name = {}, "0"
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        heading = re.match(r"## (\d+)\.", source) if cell["cell_type"] == "markdown" else None
        if heading:
            name = heading.group(1)
        row = out.setdefault(name, {"words": 0, "code_lines": 0, "cells": 0, "longest": 0, "figures": 0})
        row["cells"] += 1
        row["longest"] = max(row["longest"], len(source.splitlines()))
        if cell["cell_type"] == "markdown":
            row["words"] += len(source.split())
        elif cell["cell_type"] == "code":
            row["code_lines"] += sum(1 for line in source.splitlines() if line.strip())
            row["figures"] += sum("image/png" in o.get("data", {}) for o in cell.get("outputs", []))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebook")
    parser.add_argument("--rev", help="a git revision: read the notebook as committed there")
    args = parser.parse_args(argv)
    text = (subprocess.run(["git", "show", f"{args.rev}:{args.notebook}"], capture_output=True, text=True, check=True,
                           timeout=60).stdout if args.rev else open(args.notebook).read())
    table = sections(json.loads(text))
    print(f"{'section':>7} {'words':>6} {'code':>5} {'cells':>5} {'longest':>7} {'figures':>7}")
    for name, row in table.items():
        print(f"{name:>7} {row['words']:>6} {row['code_lines']:>5} {row['cells']:>5} {row['longest']:>7} {row['figures']:>7}")
    total = {k: sum(r[k] for r in table.values()) for k in ("words", "code_lines", "cells", "figures")}
    print(f"{'all':>7} {total['words']:>6} {total['code_lines']:>5} {total['cells']:>5} "
          f"{max(r['longest'] for r in table.values()):>7} {total['figures']:>7}")


if __name__ == "__main__":
    main()

"""The notebooks, their jupytext twins and the exported agent hold the same code; the committed
notebooks are executed and read well where no kernel runs; cells are short enough to read."""

import ast
import json
import os
import re

import jupytext
import nbformat
import pytest

from continuous_control import export
from continuous_control.provenance import ROOT

PAIRS = [("Continuous_Control.ipynb", "twins/Continuous_Control.py"), ("Report.ipynb", "twins/Report.py")]
LONGEST_CODE_CELL = {"Continuous_Control.ipynb": 60, "Report.ipynb": 25}


def cells(path):
    return [
        (c.cell_type, c.source.strip(), c.metadata.get("tags", []))
        for c in jupytext.read(os.path.join(ROOT, path)).cells
    ]


def notebook(name):
    with open(os.path.join(ROOT, name), encoding="utf-8") as f:
        return json.load(f)


@pytest.mark.parametrize("notebook_name, twin", PAIRS)
def test_notebook_and_twin_are_in_sync(notebook_name, twin):
    assert cells(notebook_name) == cells(twin), (
        f"{notebook_name} and {twin} differ: run `jupytext --sync {notebook_name}` (or edit one and sync)"
    )


def test_exported_agent_is_the_notebooks_code():
    """continuous_control/agent.py is the notebook's `export` cells, nothing else."""
    with open(export.MODULE, encoding="utf-8") as f:
        assert f.read() == export.module_source(), "run `python -m continuous_control.export` (make export)"
    assert export.main(["--check"]) == 0


def test_export_follows_an_edit_of_the_notebook(tmp_path):
    nb = notebook("Continuous_Control.ipynb")
    cell = next(
        c
        for c in nb["cells"]
        if "export" in c["metadata"].get("tags", []) and "self.updates += 1" in "".join(c["source"])
    )
    cell["source"] = "".join(cell["source"]).replace("self.updates += 1", "self.updates += 2")
    edited = tmp_path / "edited.ipynb"
    edited.write_text(json.dumps(nb), encoding="utf-8")
    source = export.module_source(str(edited))
    assert "self.updates += 2" in source and source != export.module_source()
    assert source.startswith('"""The agent of Continuous_Control.ipynb') and "GENERATED" in source


def test_the_exported_agent_defines_each_class_whole_under_one_heading_per_section():
    """The notebook grows classes cell by cell with @method_of; the module has every method inside its class."""
    with open(export.MODULE, encoding="utf-8") as f:
        source = f.read()
    classes = [node for node in ast.parse(source).body if isinstance(node, ast.ClassDef)]
    methods = {c.name: {f.name for f in c.body if isinstance(f, ast.FunctionDef)} for c in classes}
    assert {"td_target", "critic_loss", "actor_loss", "update_targets"} <= methods["DDPG"]
    assert {"emit", "flush"} <= methods["NStepAccumulator"] and "update_priorities" in methods["PrioritizedReplay"]
    assert "noisy_weights" in methods["NoisyLinear"] and "sample" in methods["OrnsteinUhlenbeck"]
    assert {"act", "step", "transitions", "learn"} <= methods["DDPGAgent"]
    assert {"transitions", "make_memory", "beta", "replay_batch", "after_critic"} <= methods["Agent"]
    assert "method_of" not in source
    headings = re.findall(r"^# --- (.+) ---$", source, re.M)
    assert len(headings) == len(set(headings)) >= 10


FOLDS = "class A:\n    x = 1\n", '@method_of(A)\ndef f(self):\n    """Doc,\n    two lines."""\n    return 2\n# kept\n'
REFUSED = [
    (("@method_of(B)\ndef f(self):\n    pass\n",), "B"),
    (("class A:\n    pass\n", "@method_of(m.A)\ndef f(self):\n    pass\n"), "line 1"),
    (("class A:\n    pass\n", "@method_of(A)\ndef f(self):\n    return '''a\nb'''\n"), "f, line 3"),
]


def test_the_export_folds_a_method_into_its_class_or_names_what_it_cannot_fold(tmp_path):
    def fold(*cells):
        nb = {"cells": [{"cell_type": "code", "metadata": {"tags": ["export"]}, "source": c} for c in cells]}
        (tmp_path / "nb.ipynb").write_text(json.dumps(nb), encoding="utf-8")
        return export.module_source(str(tmp_path / "nb.ipynb"))

    module = fold(*FOLDS)
    namespace = {}
    exec(module, namespace)
    assert namespace["A"]().f() == 2 and namespace["A"].f.__doc__.split() == ["Doc,", "two", "lines."]
    assert "# kept" in module and "method_of" not in module
    for cells, fact in REFUSED:
        with pytest.raises(ValueError, match=re.escape(fact)):
            fold(*cells)


@pytest.mark.parametrize("notebook_name, twin", PAIRS)
def test_committed_notebook_is_executed_top_to_bottom(notebook_name, twin):
    nb = notebook(notebook_name)
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    if notebook_name == "Continuous_Control.ipynb":
        shown = "".join("".join(o.get("data", {}).get("text/plain", "")) for c in code for o in c["outputs"])
        # the full run's outputs, not a smoke run's (2 episodes, never solved): section 8's table of the run
        assert re.search(r"^solved_at\s+100$", shown, re.M), "the committed outputs must be the full run's"


@pytest.mark.parametrize("notebook_name", LONGEST_CODE_CELL)
def test_cells_are_short_enough_to_read_at_once(notebook_name):
    nb, longest_prose, run = notebook(notebook_name), 0, 0
    for c in nb["cells"]:
        lines = len("".join(c["source"]).splitlines())
        if c["cell_type"] == "code":
            assert lines <= LONGEST_CODE_CELL[notebook_name], "".join(c["source"])[:200]
            run = 0
        else:
            run += lines
            longest_prose = max(longest_prose, run)
    assert longest_prose <= 60


@pytest.mark.parametrize("notebook_name", LONGEST_CODE_CELL)
def test_saved_outputs_read_well_without_a_kernel(notebook_name):
    """No widget shows as its repr (`VBox(children=...`) where no kernel runs, and the lesson's
    code carries no test markers (nbval's checks are cell tags)."""
    nb = notebook(notebook_name)
    for c in nb["cells"]:
        if c["cell_type"] != "code":
            continue
        assert "NBVAL" not in "".join(c["source"])
        for output in c["outputs"]:
            text = "".join(output.get("data", {}).get("text/plain", ""))
            assert not text.lstrip().startswith(("VBox(", "HBox(", "FloatProgress(")), text[:100]
            if "application/vnd.jupyter.widget-view+json" in output.get("data", {}):
                assert "image/png" in output["data"] or "text/plain" in output["data"]


def test_both_twins_pair_the_same_way():
    """The .ipynb and its twin name the same jupytext formats, so either can be synced from the other."""
    for notebook_name, twin in PAIRS:
        formats = {
            jupytext.read(os.path.join(ROOT, path)).metadata["jupytext"]["formats"] for path in (notebook_name, twin)
        }
        assert formats == {"ipynb,twins//py:percent"}, (notebook_name, formats)


def test_the_static_page_shows_the_replay_frame_and_no_widget_view():
    """nbconvert's HTML (as nbviewer and GitHub show it) of the committed lesson: the replay panel's
    cell shows its still frame, and no output is a widget view, which a page without a kernel cannot draw."""
    from nbconvert import HTMLExporter

    nb = nbformat.read(os.path.join(ROOT, "Continuous_Control.ipynb"), as_version=4)
    assert "widgets" not in nb.metadata, (
        "saved widget state: execute with --ExecutePreprocessor.store_widget_state=False"
    )
    html, _ = HTMLExporter().from_notebook_node(nb)
    assert 'type="application/vnd.jupyter.widget-view+json"' not in html
    replay = html[html.index("replay_panel") :]
    frame = replay.index("data:image/png;base64,")
    assert frame < replay.index("Replay:"), "the replay cell shows no frame before its printed line"


def test_the_lessons_effect_cells_and_imports_survive_re_running_a_cell_out_of_order():
    """A name a cell imports is never rebound by another cell, and the cells that show measured effects
    read only `effects`, bound in one cell: each can run again after any later section."""
    import ast

    trees = [ast.parse(source) for kind, source, _ in cells("Continuous_Control.ipynb") if kind == "code"]
    imported, assigned = {}, {}
    for k, tree in enumerate(trees):
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                imported.update({(a.asname or a.name).split(".")[0]: k for a in node.names})
            targets = (
                [node.target]
                if isinstance(node, (ast.AnnAssign, ast.AugAssign, ast.For))
                else getattr(node, "targets", [])
            )
            for name in (
                n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
            ):
                assigned.setdefault(name, set()).add(k)
    assert {name: cells_ for name, cells_ in assigned.items() if name in imported} == {}
    effect_cells = [t for t in trees if any(isinstance(n, ast.Name) and n.id == "effects" for n in ast.walk(t))]
    assert len(effect_cells) >= 4 and len(assigned["effects"]) == 1
    for tree in effect_cells:
        assert {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} <= {"effects", "pd"}, ast.unparse(tree)

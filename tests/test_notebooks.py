"""The notebooks and their jupytext twins hold the same cells; the committed notebooks are run."""
import json
import os

import jupytext
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = [("Continuous_Control.ipynb", "scripts/Continuous_Control.py"), ("Report.ipynb", "scripts/Report.py")]


def cells(path):
    return [(c.cell_type, c.source.strip(), c.metadata.get("tags", []))
            for c in jupytext.read(os.path.join(ROOT, path)).cells]


@pytest.mark.parametrize("notebook, twin", PAIRS)
def test_notebook_and_twin_are_in_sync(notebook, twin):
    assert cells(notebook) == cells(twin), (
        f"{notebook} and {twin} differ: run `jupytext --sync {notebook}` (or edit one and sync)")


@pytest.mark.parametrize("notebook, twin", PAIRS)
def test_committed_notebook_is_executed_top_to_bottom(notebook, twin):
    nb = json.load(open(os.path.join(ROOT, notebook)))
    code = [c for c in nb["cells"] if c["cell_type"] == "code" and "".join(c["source"]).strip()]
    assert [c["execution_count"] for c in code] == list(range(1, len(code) + 1))
    assert not [o for c in code for o in c["outputs"] if o["output_type"] == "error"]
    if notebook == "Continuous_Control.ipynb":
        text = "".join("".join(o.get("text", "")) for c in code for o in c["outputs"])
        assert "SMOKE = False" in text, "the committed outputs must be the full run's, not the smoke run's"


def test_definitions_load_headless():
    """The experiments run the notebook's own definitions (experiments/notebook.py)."""
    from experiments.notebook import load_definitions
    ns = load_definitions()
    assert {"Config", "SumTree", "NStepAccumulator", "PrioritizedReplay", "NoisyLinear",
            "Actor", "Critic", "Agent", "train"} <= set(ns)


def test_definitions_keep_their_line_numbers():
    """A traceback from the headless definitions points at the twin's real line."""
    import traceback
    from experiments.notebook import TWIN, load_definitions
    ns = load_definitions()
    lines = open(TWIN).read().split("\n")
    assert lines[ns["SumTree"].total.__code__.co_firstlineno - 1].strip().startswith("def total(")
    assert lines[ns["train"].__code__.co_firstlineno - 1].startswith("def train(")
    with pytest.raises(TypeError) as error:
        ns["SumTree"](4)[None]                             # None + self.leaves inside __getitem__
    frame = traceback.extract_tb(error.value.__traceback__)[-1]
    assert frame.filename == TWIN and "self.leaves]" in lines[frame.lineno - 1]


def test_both_twins_pair_the_same_way():
    """The .ipynb and its twin name the same jupytext formats, so either can be synced from the other."""
    for notebook, twin in PAIRS:
        formats = {jupytext.read(os.path.join(ROOT, path)).metadata["jupytext"]["formats"] for path in (notebook, twin)}
        assert formats == {"ipynb,scripts//py:percent"}, (notebook, formats)

"""The notebooks and their jupytext twins hold the same cells; the committed notebooks are run."""
import json
import os

import jupytext
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAIRS = [("Continuous_Control.ipynb", "scripts/Continuous_Control.py")]


def cells(path):
    return [(c.cell_type, c.source.strip(), c.metadata.get("tags", []))
            for c in jupytext.read(os.path.join(ROOT, path)).cells]


@pytest.mark.parametrize("notebook, twin", PAIRS)
def test_notebook_and_twin_are_in_sync(notebook, twin):
    assert cells(notebook) == cells(twin), (
        f"{notebook} and {twin} differ: run `jupytext --sync {notebook}` (or edit one and sync)")


def test_definitions_load_headless():
    """The experiments run the notebook's own definitions (experiments/notebook.py)."""
    from experiments.notebook import load_definitions
    ns = load_definitions()
    assert {"Config", "SegmentTree", "NStepAccumulator", "PrioritizedReplay", "NoisyLinear",
            "Actor", "Critic", "Agent", "train"} <= set(ns)

"""The README's results table says what the saved runs say, and the README stays a README.

The table is found by its header row (the columns named below), never by the prose around it. Each
number is checked against `experiments.runs`, computed from checkpoints/ and results/, at the
precision the README prints it: a single run's value, or `median [min-max]` over the seeds the
row's first cell names (`seeds 0-9`).
"""

import os
import re

import numpy as np

from continuous_control.provenance import ROOT
from experiments import runs

with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
    README = f.read()

MAX_WORDS = 1500
# A header cell, lowercased, names its measure when it contains the key; the first key that matches wins.
COLUMNS = [
    ("solved at", "solved_at"),
    ("first episode", "first_30"),
    ("worst arm", "worst_arm_1_100"),
    ("mean of episodes 1-100", "mean_1_100"),
    ("processor", "processor"),
]
NUMBER = r"\d+(?:\.\d+)?"


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def results_table() -> tuple[list[str], list[list[str]]]:
    """(the measure of each column, None for the run's name; the body rows) of the results table."""
    lines = README.splitlines()

    def is_header(line: str) -> bool:
        header = [c.lower() for c in cells(line)] if line.lstrip().startswith("|") else []
        return any("solved at" in c for c in header) and any("mean of episodes 1-100" in c for c in header)

    found = [k for k, line in enumerate(lines) if is_header(line)]
    assert len(found) == 1, "README.md needs one table whose header names 'solved at' and 'mean of episodes 1-100'"
    k = found[0]
    header = [c.lower() for c in cells(lines[k])]
    measures = [next((m for key, m in COLUMNS if key in c), None) for c in header]
    assert measures[0] is None and all(measures[1:]), f"unrecognised columns in {header}"
    assert set(lines[k + 1].replace("|", "").strip()) <= set("-: "), "the header row has no separator row"
    body = []
    for line in lines[k + 2 :]:
        if not line.lstrip().startswith("|"):
            break
        body.append(cells(line))
        assert len(body[-1]) == len(header), f"row {line!r} has {len(body[-1])} cells, the header {len(header)}"
    return measures, body


def agrees(printed: str, value: float) -> bool:
    """`printed` is `value` rounded to the decimals printed (a value halfway between two roundings,
    such as a median of 12.5 printed as 12 or 13, needs another decimal)."""
    decimals = len(printed.split(".")[1]) if "." in printed else 0
    return abs(float(printed) - float(value)) < 0.5 * 10**-decimals - 1e-9


def row_named(body, text: str) -> list[str]:
    found = [row for row in body if text in row[0]]
    assert len(found) == 1, f"the results table needs exactly one row naming {text!r}, has {len(found)}"
    return found[0]


MEASURES, BODY = results_table()
TABLE = runs.load()
FULL = TABLE[(TABLE.group == "agent") & (TABLE.variant == "full")]


def test_the_readme_is_at_most_1500_words():
    assert len(README.split()) <= MAX_WORDS, f"README.md has {len(README.split())} words, at most {MAX_WORDS}"


def test_the_table_has_the_two_rows():
    assert len(BODY) == 2, f"the results table has {len(BODY)} rows: the notebook's run and the seeds"
    row_named(BODY, "checkpoints/")
    row_named(BODY, "results/full/")


def saved_seed(seed: int, processor: str) -> dict:
    """The saved run of the full agent with this seed on this kind of processor (results/full/ or, for the other
    kind, results/processor_check/full/), which `make run` repeats episode for episode."""
    for group in ("full", os.path.join("processor_check", "full")):
        run = runs.measure(os.path.join(ROOT, "results", group, f"seed{seed}"))
        if run["processor"] == processor:
            return run
    raise AssertionError(f"no saved run of seed {seed} on {processor}")


def test_the_notebooks_run():
    """checkpoints/: each cell is the committed run's own value, as printed. After `make run` on the other kind of
    processor, checkpoints/ holds that kind's run (the saved run it repeats), and the row, the committed one's."""
    run = runs.measure(os.path.join(ROOT, "checkpoints"))
    row = row_named(BODY, "checkpoints/")
    for measure in ("solved_at", "first_30", "mean_1_100", "worst_arm_1_100"):
        assert run[measure] == saved_seed(run["seed"], run["processor"])[measure], measure
    if row[-1] != run["processor"]:
        run = saved_seed(run["seed"], row[-1])
    seed = re.search(r"seed (\d+)", row[0])
    assert seed and int(seed.group(1)) == run["seed"], f"{row[0]!r}: the run's seed is {run['seed']}"
    for measure, cell in zip(MEASURES[1:], row[1:]):
        if measure == "processor":
            assert cell == run["processor"], f"processor: {cell!r}, the run recorded {run['processor']!r}"
            continue
        assert re.fullmatch(NUMBER, cell), f"{measure}: {cell!r} is not one number"
        assert agrees(cell, run[measure]), f"{measure}: the README says {cell}, checkpoints/ gives {run[measure]}"


def test_the_ten_seeds():
    """results/full/: the seeds named, and median [min-max] of each measure over them."""
    row = row_named(BODY, "results/full/")
    seeds = re.search(r"seeds (\d+)-(\d+)", row[0])
    assert seeds, f"{row[0]!r} names no seeds a-b"
    named = list(range(int(seeds.group(1)), int(seeds.group(2)) + 1))
    assert sorted(FULL.seed) == named, f"results/full/ holds seeds {sorted(FULL.seed)}, the README names {named}"
    for measure, cell in zip(MEASURES[1:], row[1:]):
        if measure == "processor":
            recorded = ", ".join(sorted(set(FULL.processor)))
            assert cell == recorded, f"processor: {cell!r}, the runs recorded {recorded!r}"
            continue
        found = re.fullmatch(rf"({NUMBER}) \[({NUMBER})-({NUMBER})\]", cell)
        assert found, f"{measure}: {cell!r} is not 'median [min-max]'"
        values = FULL[measure].to_numpy(float)
        for printed, value, what in zip(
            found.groups(), (np.median(values), values.min(), values.max()), ("median", "min", "max")
        ):
            assert agrees(printed, value), f"{measure} {what}: the README says {printed}, results/full/ gives {value}"

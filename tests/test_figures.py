"""The figures pair what they compare, and tell the variants apart."""

import matplotlib

matplotlib.use("Agg")

from experiments import report, runs  # noqa: E402
from experiments.variants import COLORS, LABELS, VARIANTS  # noqa: E402


def test_every_variant_has_a_color_of_its_own():
    assert set(COLORS) == set(VARIANTS) and len(set(COLORS.values())) == len(COLORS)


def test_each_ablation_panel_pairs_the_full_agent_on_the_ablations_seeds():
    table = runs.load()
    fig = report.ablations_figure(table)
    panels = {ax.get_title(): [t.get_text() for t in ax.get_legend().get_texts()] for ax in fig.axes if ax.get_legend()}
    for variant in ("n3", "uniform"):
        seeds = (table[(table.group == "agent") & (table.variant == variant)]).seed.nunique()
        full, ours = panels[LABELS[variant]]
        assert full == f"{LABELS['full']} ({seeds} seeds)" and ours == f"{LABELS[variant]} ({seeds} seeds)"

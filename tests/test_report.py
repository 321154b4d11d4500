"""The report's builders (experiments/report.py) and the project's one table builder (experiments/tables.py).

Each builder is run on fake run folders (as experiments/run.py leaves them; `fake_run` of
test_claims.py) whose numbers are known, or on the committed results where a test says so.
"""
import dataclasses
import json
import os
import re
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import torch

from continuous_control.agent import Actor, Config, Critic, NoisyActor
from continuous_control.results import first_episode_at
from continuous_control.variants import LABELS, VARIANTS
from experiments import claims, report
from experiments.tables import markdown_table
from test_claims import fake_run, ramp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def rows_of(table: str) -> list:
    """The data rows of a Markdown table, each a list of cells."""
    lines = [line for line in table.splitlines() if line.startswith("|")][2:]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def results_of(tmp_path, levels: dict, seeds=(0, 1, 2), reach=30) -> dict:
    """{variant: runs}: each variant's seed k ramps to levels[variant][k] by episode `reach`."""
    return {v: [fake_run(tmp_path / v / f"seed{k}", k, ramp(x[k], reach=reach)) for k in seeds]
            for v, x in levels.items()}


# --- the table builder -----------------------------------------------------------------------

def test_markdown_table_escapes_what_would_break_it():
    table = markdown_table(["a", "b"], [["|TD error| + c", "x < y"], [1, "[link](http://x)"]])
    lines = table.splitlines()
    assert lines[:2] == ["| a | b |", "|---|---|"]
    assert rows_of(table) == [["&#124;TD error&#124; + c", "x &lt; y"], ["1", "[link](http://x)"]]
    assert markdown_table(["a"], [["<b>bold</b>"]], escape=False).endswith("| <b>bold</b> |")


def test_markdown_table_refuses_a_row_of_the_wrong_length():
    with pytest.raises(ValueError):
        markdown_table(["a", "b"], [[1, 2, 3]])


def test_summarize_uses_the_one_table_builder_and_no_report_module():
    """No second table builder, and no import cycle: summarize imports neither figures nor report."""
    import experiments.summarize as summarize
    assert summarize.markdown_table is markdown_table and not hasattr(summarize, "table")
    code = ("import sys, experiments.summarize; "
            "print(sorted(m for m in sys.modules if m in ('experiments.figures', 'experiments.report')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True, timeout=600)
    assert out.stdout.strip() == "[]"


# --- 1.1 hyperparameters ---------------------------------------------------------------------

def test_config_docs_gives_every_config_field_a_docstring():
    docs = report.config_docs()
    assert set(docs) == {f.name for f in dataclasses.fields(Config)}
    assert all(isinstance(doc, str) and len(doc) > 5 for doc in docs.values())
    assert "|TD error|" in docs["priority_offset"] and "kappa" in docs["ou_kappa"]


def test_config_docs_takes_only_the_docstring_right_under_a_field(tmp_path):
    source = tmp_path / "agent.py"
    source.write_text(textwrap.dedent('''
        class Other:
            x: int = 1
            """not Config's"""

        class Config:
            a: int = 1
            """The a."""
            b: int = 2
            c: float = 3.0
            """The c."""

            def method(self):
                """Not a field."""
    '''))
    assert report.config_docs(str(source)) == {"a": "The a.", "c": "The c."}


def test_hyperparameter_table_has_a_row_per_saved_key_with_its_docstring():
    cfg = dataclasses.asdict(Config())
    cfg["noise_theta"] = 0.15                                  # a key of an older config.json
    rows = rows_of(report.hyperparameter_table(cfg))
    assert [r[0] for r in rows] == [f"`{k}`" for k in cfg]
    assert all(len(r) == 3 for r in rows)                      # the | in a docstring did not split its row
    meaning = {r[0]: r[2] for r in rows}
    assert meaning["`gamma`"] == "Discount factor."
    assert "&#124;TD error&#124;" in meaning["`priority_offset`"]
    assert "not a field" in meaning["`noise_theta`"]


def test_beta_sentence_computes_beta_at_episode_100():
    cfg = {"beta_start": 0.4, "beta_steps": 110_000}
    assert report.beta_at(cfg, 0) == pytest.approx(0.4) and report.beta_at(cfg, 10**7) == 1.0
    assert "\\beta \\approx 0.95" in report.beta_sentence(cfg)      # 0.4 + 0.6 * 100100 / 110000 = 0.946
    assert "\\beta \\approx 1.00" in report.beta_sentence({"beta_start": 0.4, "beta_steps": 1000})


# --- 1.2 architectures -----------------------------------------------------------------------

def networks(noisy=True, hidden=(16, 8)):
    actor = NoisyActor(33, 4, hidden, 0.5) if noisy else Actor(33, 4, hidden)
    return {"actor": actor, "critic": Critic(33, 4, hidden)}


def test_architecture_tables_list_each_layer_with_its_parameters():
    nets = networks()
    text = report.architecture_tables(nets, {"noisy_sigma0": 0.5})
    assert f"**Actor** ({sum(p.numel() for p in nets['actor'].parameters()):,} learned parameters)" in text
    assert f"**Critic** ({sum(p.numel() for p in nets['critic'].parameters()):,} learned parameters)" in text
    actor, critic = text.split("**Critic**")
    assert [r[:4] for r in rows_of(actor)] == [
        ["`layers.0`", "NoisyLinear", "33 -&gt; 16", f"{2 * (33 * 16 + 16):,}"],
        ["`layers.1`", "NoisyLinear", "16 -&gt; 8", f"{2 * (16 * 8 + 8)}"],
        ["`layers.2`", "NoisyLinear", "8 -&gt; 4", f"{2 * (8 * 4 + 4)}"]]
    assert rows_of(actor)[0][4] == f"{0.5 / 33 ** 0.5:.4f} (initial {0.5 / 33 ** 0.5:.4f})"
    assert [r[2] for r in rows_of(critic)] == ["37 -&gt; 16", "16 -&gt; 8", "8 -&gt; 1"]
    assert {r[4] for r in rows_of(critic)} == {"-"}


def test_sigma_sentence_follows_the_learned_noise_scale():
    nets = networks()
    assert "100% (`layers.0`)" in report.sigma_sentence(nets, {"noisy_sigma0": 0.5})
    assert "kept or raised" in report.sigma_sentence(nets, {"noisy_sigma0": 0.5})
    with torch.no_grad():
        for layer in nets["actor"].layers:
            layer.weight_sigma.mul_(0.5)
    text = report.sigma_sentence(nets, {"noisy_sigma0": 0.5})
    assert "50% (`layers.0`), 50% (`layers.1`), 50% (`layers.2`)" in text and "turned its own exploration down" in text
    assert "no noisy layers" in report.sigma_sentence(networks(noisy=False), {"noisy_sigma0": 0.5, "exploration": "ou"})


# --- 2. the solving run ----------------------------------------------------------------------

def test_solving_run_text_of_a_run_not_solved(tmp_path):
    run = fake_run(tmp_path / "r", 3, [0.5, 1.5])
    text = report.solving_run_text(run)
    assert "Not solved in its 2 episodes" in text and "seed 3" in text
    assert "reached 30: none" in text and "worst arm 0.00, best arm 2.00 (20-arm mean 1.00)" in text


def test_solving_run_text_and_levels_of_a_solved_run(tmp_path):
    means = ramp(38, reach=20)                                  # 30 first at episode 16, 35 passed at 19
    run = fake_run(tmp_path / "r", 0, means, solved_at=100, wall_seconds_to_solve=300.0)
    text = report.solving_run_text(run)
    assert f"Solved at episode 100: episodes 1-100 average {means.mean():.2f}, after 5.0 minutes." in text
    assert f"reached 30: {first_episode_at(means)};" in text and first_episode_at(means) == 16
    levels = report.levels_text(run)
    assert "earliest the criterion allows" in levels
    assert "Every episode from episode 16 on scores above 30." in levels
    assert "Every episode from episode 19 on scores above 35." in levels


def test_from_episode_needs_every_later_episode_above():
    assert report.from_episode([10, 31, 29, 31, 36, 36], 30) == 4
    assert report.from_episode([31, 32], 30) == 1
    assert report.from_episode([31, 29], 30) is None


# --- 3. seeds --------------------------------------------------------------------------------

def test_seeds_table_and_text(tmp_path):
    runs = [fake_run(tmp_path / f"s{k}", k, ramp(x), solved_at=100, wall_seconds_to_solve=120.0)
            for k, x in enumerate([34, 36, 38])]
    rows = rows_of(report.seeds_table(runs))
    assert [r[0] for r in rows] == ["0", "1", "2"] and [r[1] for r in rows] == ["100"] * 3
    st = claims.run_stats(runs[2])
    assert rows[2][3] == f"{st['mean_1_100']:.1f} ({st['mean_1_100'] - 1:.1f}, {st['mean_1_100'] + 1:.1f})"
    assert rows[2][6] == "38.00 (38.00, 38.00)"
    text = report.seeds_text(runs)
    assert text.startswith("3 of 3 seeds solved, at episode 100 (100 is the earliest")
    assert f"first reached 30 at episode {first_episode_at(ramp(38))} to {first_episode_at(ramp(34))}" in text
    assert text.endswith("A run took 2.0 minutes alone (seeds 0, 1, 2).")


def test_minutes_are_stated_apart_for_runs_alone_and_runs_that_shared_the_machine(tmp_path):
    runs = [fake_run(tmp_path / f"s{k}", k, ramp(36), solved_at=100, wall_seconds_to_solve=60.0 * m, concurrent_runs=c)
            for k, (m, c) in enumerate([(6, 1), (7, 1), (9, 2)])]
    assert report.minutes_by_sharing(runs) == ("A run took 6.0 to 7.0 minutes alone (seeds 0, 1) and "
                                               "9.0 minutes 2 runs at a time (seed 2).")


# --- 5. ablations ----------------------------------------------------------------------------

def test_variants_table_lists_every_variant_and_what_has_run(tmp_path):
    results = {"full": [fake_run(tmp_path / "f", 0, ramp(36))], "one_step": [fake_run(tmp_path / "o", 0, ramp(33))]}
    rows = rows_of(report.variants_table(results))
    assert [r[0] for r in rows] == [LABELS[v] for v in VARIANTS]
    seeds = {r[0]: r[2] for r in rows}
    assert seeds[LABELS["full"]] == "0" and seeds[LABELS["one_step"]] == "0"
    assert seeds[LABELS["no_ramp"]] == "not run yet"
    assert {r[1] for r in rows if r[0] == LABELS["plain"]} == {"`n_step=1`, `alpha=0.0`, `exploration='ou'`"}


def test_ablation_table_compares_the_full_agent_on_the_ablations_seeds(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38, 39, 40]}, seeds=range(5))
    results |= results_of(tmp_path, {"one_step": [31, 32, 33]})
    rows = rows_of(report.ablation_table(results))
    assert [r[0] for r in rows] == [LABELS["full"], LABELS["one_step"]]
    assert rows[0][1] == "0, 1, 2" and rows[1][1] == "0, 1, 2"
    assert rows[0][4] == "36.0 to 38.0" and rows[1][4] == "31.0 to 33.0"       # episodes 91-100: flat at the level
    # A ramp to x by episode 30 averages 0.855 x over episodes 1-100: 30.8 and up for the full agent, under 30 here.
    assert rows[0][5] == "3 of 3" and rows[1][5] == "0 of 3"
    assert "no ablation results yet" in report.ablation_table({"full": results["full"]})


def test_comparison_lines_state_each_comparison(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "uniform": [31, 32, 33], "n10": [36.5, 37.5, 38.5]})
    text = report.comparison_lines(results)
    for variant, cs in claims.all_comparisons(results).items():
        assert f"* **{LABELS[variant]}** ({report.change(variant)}): {claims.summary_line(cs)}." in text
        assert all(f"    * {c.text}" in text for c in cs)
    head, lines = text.split("\n\n", 1)
    assert "clearly worse than the full agent on" in lines.split("\n")[0]
    # 2 variants x 6 measures on 3 seeds each, each interval widened for the 2 variants
    called = sum(c.verdict != "no clear difference" for cs in claims.all_comparisons(results).values() for c in cs)
    assert head.startswith(f"{called} of the 12 comparisons with enough seeds gave a verdict") and "widened for the 2 variants" in head


def test_gap_decomposition_splits_the_gap_at_one_step(tmp_path):
    flat = lambda level: np.full(100, float(level))
    results = {v: [fake_run(tmp_path / v / str(k), k, flat(x)) for k in range(3)]
               for v, x in {"full": 36, "one_step": 33, "plain": 32}.items()}
    text = report.gap_decomposition(results)
    assert text.startswith("Full agent 36.00, 1-step 33.00, plain DDPG 32.00.")
    assert "by -3.00 (full to 1-step)" in text and "by -1.00 (1-step to plain)" in text and "by -4.00 (full to plain)" in text
    assert report.gap_decomposition({"full": results["full"]}).startswith("(needs")


# --- 8. future work --------------------------------------------------------------------------

def test_future_work_follows_the_claims_rule(tmp_path):
    cfg = {"n_step": 5}
    worse = results_of(tmp_path / "a", {"full": [36, 37, 38], "no_noise": [31, 32, 33], "uniform": [31, 32, 33]})
    text = report.future_work(worse, cfg)
    item = next(line for line in text.splitlines() if line.startswith("* **Without exploration noise"))
    worse_on = [claims.METRICS[c.metric][0] for c in claims.all_comparisons(worse)["no_noise"] if claims.better(c) is False]
    assert "mean of episodes 1-100" in worse_on and f"clearly worse on {', '.join(worse_on)}.**" in item
    assert "Uniform replay is not clearly worse" not in text                   # it is clearly worse here
    same = results_of(tmp_path / "b", {"full": [36, 37, 38], "no_noise": [38, 36, 37], "uniform": [37, 38, 36]})
    text = report.future_work(same, cfg)
    assert "**Without any exploration noise the agent is not clearly worse on any measure.**" in text
    assert "**Uniform replay is not clearly worse than prioritized replay on any measure.**" in text
    assert "Better in every seed pair" not in text                             # mixed pairs: no candidate


def test_future_work_names_candidates_better_in_every_pair_but_inside_the_spread(tmp_path):
    results = results_of(tmp_path, {"full": [34, 36, 38], "per_arm_noise": [34.3, 36.8, 38.4]})   # +0.3, +0.8, +0.4
    text = report.future_work(results, {"n_step": 5})
    assert "**Better in every seed pair, but inside the seed-to-seed spread:** " in text
    assert f"{LABELS['per_arm_noise']} on " in text and "mean of episodes 1-100" in text
    assert f"{LABELS['per_arm_noise']} is clearly better" not in text


def test_future_work_states_the_schedules_and_choice_of_n(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "one_step": [31, 32, 33], "no_ramp": [38, 36, 37],
                                    "learn_every_step": [37, 38, 36]})
    text = report.future_work(results, {"n_step": 5})
    one_step = claims.summary_line(claims.all_comparisons(results)["one_step"])
    assert f"**The choice of $n$** against the full agent's $n = 5$: {LABELS['one_step']}: {one_step}." in text
    assert f"{LABELS['no_ramp']}: no clear difference" in text and f"{LABELS['learn_every_step']}: no clear" in text
    assert "ten seeds for each of the 3 variants" in text


# --- 6, 7: calibration and published results (the committed files) --------------------------

needs_calibration = pytest.mark.skipif(not os.path.isdir(report.CALIBRATION) or not os.listdir(report.CALIBRATION),
                                       reason="no results/calibration/")


@needs_calibration
def test_calibration_table_and_text_agree_with_the_saved_measures():
    chosen = report.calibration(report.CALIBRATION)
    assert chosen["joint_model"] == chosen["default"]
    actors = [k for k in chosen["results"] if k not in report.NOT_ACTORS]
    rows = rows_of(report.calibration_table())
    assert len(rows) == 2 + len(actors)
    assert rows[0][2] == f"{chosen['results']['random_normal']['mean']:.2f}"
    low = report.UNITY_CALIBRATION["published_actors_low"]
    inside = sum(chosen["results"][a]["mean"] >= low for a in actors)
    assert f"{inside} of {len(actors)} Unity-trained actors score" in report.calibration_text()


def test_published_and_replica_tables(tmp_path):
    rows = rows_of(report.published_table())
    assert [r[4] for r in rows] == [str(p["window_end"]) for p in report.PUBLISHED]
    runs = [fake_run(tmp_path / f"s{k}", k, ramp(36), solved_at=100, wall_seconds_to_solve=360.0) for k in range(2)]
    solving = fake_run(tmp_path / "nb", 0, [1.0, 2.0])
    rows = rows_of(report.replica_table(runs, solving))
    assert [r[2] for r in rows] == ["100", "100", "not solved"] and rows[0][3] == "6.0"
    assert rows[-1][0].startswith("the notebook's run")


# --- the report itself -----------------------------------------------------------------------

def test_every_report_cell_is_a_short_call():
    notebook = json.load(open(os.path.join(ROOT, "Report.ipynb")))
    code = ["".join(c["source"]) for c in notebook["cells"] if c["cell_type"] == "code"]
    assert max(len(source.splitlines()) for source in code) <= 25
    for source in code:                                     # no builder defined in the report
        assert not re.search(r"^\s*(def|class|for|while) ", source, re.M), source[:200]


def test_diagnostics_text_compares_sampled_and_stored_young_shares():
    import numpy as np
    from experiments import report
    episodes = np.arange(1, 41, dtype=float)
    run = {"config": {"fast_episodes": 20}, "diagnostics": {
        "episode": episodes, "young_share": np.where(episodes > 20, 0.30, 0.9), "young_share_stored": np.full(40, 0.05),
        "max_priority": np.full(40, 3.0), "td_abs": np.full(40, 0.02)}}
    text = report.diagnostics_text(run)
    assert "Over episodes 21-40, 30.0% of the sampled" in text and "against 5.0% of the buffer" in text
    assert "replayed 6.0 times as often" in text
    run["diagnostics"]["young_share"] = np.full(40, 0.05)
    assert "about as often as their share (1.0 times)" in report.diagnostics_text(run)
    assert report.diagnostics_text({"config": {}}) == ""


def test_priority_text_reports_both_rules_and_the_verdict(tmp_path):
    import numpy as np
    from experiments import report
    episodes = np.arange(1, 41, dtype=float)

    def with_diagnostics(run, young):
        run["config"] = {"fast_episodes": 20, "alpha": 0.5, "priority_offset": 0.0, **run.get("config", {})}
        run["diagnostics"] = {"episode": episodes, "young_share": np.full(40, young), "young_share_stored": np.full(40, 0.02),
                              "max_priority": np.full(40, 0.5), "td_abs": np.full(40, 0.02)}
        return run
    results = results_of(tmp_path, {"full": [35, 35.5, 36], "all_time_max_priority": [30, 31, 32]})
    results = {v: [with_diagnostics(r, 0.06 if v == "full" else 0.1) for r in runs] for v, runs in results.items()}
    text = report.priority_text(results)
    assert "replayed 5.0 times their share" in text and "replayed 3.0 times" in text
    # priority 0.5 against a mean |δ| of 0.02, at alpha 0.5: drawn (0.5 / 0.02) ** 0.5 = 5 times as often
    assert "priority at the end, 0.500, had it drawn 5.0 times as often" in text
    results["full"][0]["diagnostics"]["unreplayed_mass"] = np.full(40, 0.62)
    assert "never replayed held 62% of the sampling" in report.priority_text(results)
    results["full"][0]["diagnostics"]["td_abs"] = np.zeros(40)
    with pytest.raises(ValueError, match="mean"):
        report.priority_text(results)
    results["full"][0]["diagnostics"]["td_abs"] = np.full(40, 0.02)
    results["uniform"] = results["full"]                 # other variants are not this comparison's
    assert "Uniform" not in report.priority_text(results) and LABELS["uniform"] not in report.priority_text(results)
    assert text.index("largest priority ever") < text.index("full:")
    assert "worse" in text.lower()
    assert "needs results" in report.priority_text({"full": results["full"]})


def test_diagnostics_text_reports_the_never_replayed_backlog():
    import numpy as np
    from experiments import report
    episodes = np.arange(1, 41, dtype=float)
    run = {"config": {"fast_episodes": 20}, "diagnostics": {
        "episode": episodes, "young_share": np.full(40, 0.05), "young_share_stored": np.full(40, 0.05),
        "max_priority": np.full(40, 1.0), "td_abs": np.full(40, 0.02),
        "unreplayed_share": np.full(40, 0.2), "unreplayed_mass": np.linspace(0.1, 0.6, 40)}}
    text = report.diagnostics_text(run)
    assert "At episode 40, 20.0% of the stored transitions had never been replayed" in text
    assert "held 60.0% of the sampling probability" in text


def test_the_vintage_sentence_counts_the_agents_runs_and_not_the_peers():
    """Runs of today's Config say nothing; an agent's run saved without a field of today's is named;
    a peer's run (its configuration names an `algorithm`) is never counted as the agent's."""
    from experiments.summarize import vintage
    today = {"config": dataclasses.asdict(Config())}
    older = {"config": {k: v for k, v in today["config"].items() if k != "clipped_double_q"}}
    peer = {"config": {"algorithm": "TD3", "seed": 0}}
    assert vintage([today, peer]) == ""
    text = vintage([today, older, peer, peer])
    assert "1 of the agent's 2 runs here were made by earlier code" in text and "`clipped_double_q`" in text


def test_the_runs_name_the_commit_of_their_code():
    """Each set of runs names the commits that made it, counted; runs saved before summaries
    recorded a commit are counted as such, not given one."""
    from experiments.summarize import provenance
    runs = [{"summary": {"commit": "abc1234"}}] * 3 + [{"summary": {"commit": "def5678+changes"}}, {"summary": {}}]
    assert provenance(runs) == ("Code: commit `abc1234` (3 runs); commit `def5678+changes` (1 run); "
                                "1 run made before runs recorded their commit.")


def test_the_last_fast_episode_is_the_runs_fast_episodes():
    assert report.last_fast_episode({"config": {"fast_episodes": 12}}) == 12
    assert report.last_fast_episode({"config": {}}) == 20          # runs saved before the field: 20


def test_a_copy_of_the_notebooks_run_is_not_counted_as_repeating_it(tmp_path):
    """results/full/seed0 imported from checkpoints/ (its summary names a source) is the run itself;
    an independent run of the same configuration with the same scores repeats it; another doesn't."""
    from experiments.summarize import repeated_by
    means = ramp(36)
    run = fake_run(tmp_path / "checkpoints", 0, means)
    fake_run(tmp_path / "results" / "full" / "seed0", 0, means, source="Continuous_Control.ipynb")
    text = repeated_by(run, str(tmp_path))
    assert "`results/full/seed0/` is this run, copied as the seeds table's seed 0" in text and "the same as" not in text
    fake_run(tmp_path / "stale" / "seed0", 0, means + 1, source="Continuous_Control.ipynb")
    assert repeated_by(run, str(tmp_path / "stale")).startswith("No run in `results/`")   # an older import is not this run
    fake_run(tmp_path / "results" / "again" / "seed0", 0, means)
    fake_run(tmp_path / "results" / "other" / "seed0", 0, means + 0.5)
    text = repeated_by(run, str(tmp_path))
    assert "the same as `results/again/seed0/` (100 episodes)" in text and "other" not in text


def test_the_interval_table_and_figure_show_each_variants_paired_difference(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "uniform": [31, 32, 33.3], "n10": [36.5, 37.1, 38.6]})
    table = report.interval_table(results)
    family = {p.variant: p for p in claims.paired_family(report.paired(results), claims.PRIMARY)}
    u = family["uniform"]
    assert f"| {LABELS['uniform']} | 3 | {u.mean:+.2f} | [{u.interval[0]:+.2f}, {u.interval[1]:+.2f}] |" in table
    assert u.verdict == "worse" and table.count("\n") == 1 + len(family)
    fig = report.interval_figure(results)
    assert len(fig.axes[0].get_yticks()) == 2

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
from continuous_control.results import first_episode_at, processor_of
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


# --- 2. the solving run ----------------------------------------------------------------------

def test_solving_run_table_of_a_solved_run_and_of_one_not_solved(tmp_path):
    means = ramp(38, reach=20)                                  # 30 first at episode 16, 35 passed at 19
    run = fake_run(tmp_path / "r", 0, means, solved_at=100, wall_seconds_to_solve=300.0)
    rows = dict(r[:2] for r in rows_of(report.solving_run_table(run)))
    assert rows["solved at episode (episodes E-99 to E average 30 or more)"] == "100"
    assert rows["minutes to solve (or to the end)"] == "5.0" and first_episode_at(means) == 16
    assert rows["first episode whose 20-arm mean reached 30"] == "16"
    assert rows["the first episode from which every later one scores above 30 / above 35"] == "16 / 19"
    assert rows["mean of episodes 1-100"] == f"{means.mean():.2f}"
    rows = dict(r[:2] for r in rows_of(report.solving_run_table(fake_run(tmp_path / "n", 3, [0.5, 1.5]))))
    assert rows["solved at episode (episodes E-99 to E average 30 or more)"] == "not in 2 episodes"
    assert rows["first episode whose 20-arm mean reached 30"] == "never"
    assert rows["each arm's own mean over all episodes: worst arm, best arm"] == "0.00, 2.00"


def test_from_episode_needs_every_later_episode_above():
    assert report.from_episode([10, 31, 29, 31, 36, 36], 30) == 4
    assert report.from_episode([31, 32], 30) == 1
    assert report.from_episode([31, 29], 30) is None


# --- 3. seeds --------------------------------------------------------------------------------

def test_seeds_table_and_goals(tmp_path):
    runs = [fake_run(tmp_path / f"s{k}", k, ramp(x), solved_at=100, wall_seconds_to_solve=120.0, concurrent_runs=1 + k // 2)
            for k, x in enumerate([34, 36, 38])]
    rows = rows_of(report.seeds_table(runs))
    assert [r[0] for r in rows] == ["0", "1", "2"] and [r[1] for r in rows] == ["100"] * 3
    st = claims.run_stats(runs[2])
    assert rows[2][3] == f"{st['mean_1_100']:.1f} ({st['mean_1_100'] - 1:.1f}, {st['mean_1_100'] + 1:.1f})"
    assert [r[5] for r in rows] == ["2.0 (alone)", "2.0 (alone)", "2.0 (2 at a time)"]
    assert rows[2][6] == "38.00 (38.00, 38.00)"
    goals = rows_of(report.goals_table(runs))
    assert [g[1:] for g in goals] == [[found, "yes" if met else "no"] for _, found, met in claims.score_goals(runs)]


# --- 2.1, 2.2 replay and Q --------------------------------------------------------------------

def diagnosed(run, young=0.1, stored=0.02, unreplayed=0.2, mass=0.6, entry=0.5, td=0.02, q=4.1, alpha=0.5):
    """`run` with diagnostics of 100 episodes whose replay measures are known."""
    n = len(run["scores"]["mean"])
    run["config"] = {**run["config"], "fast_episodes": 20, "gamma": 0.99, "alpha": alpha}
    run["diagnostics"] = {"episode": np.arange(1.0, n + 1), "young_share": np.where(np.arange(n) < 20, 1.0, young),
                          "young_share_stored": np.full(n, stored), "unreplayed_share": np.full(n, unreplayed),
                          "unreplayed_mass": np.full(n, mass), "max_priority": np.full(n, entry),
                          "td_abs": np.full(n, td), "q": np.full(n, q)}
    return run


def test_replay_table_reads_the_backlog_after_the_fast_episodes(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "uniform": [35, 36, 37], "one_step": [30, 31, 32]})
    results["full"] = [diagnosed(r) for r in results["full"]]
    results["uniform"] = [diagnosed(r, young=0.02, unreplayed=0.5 + 0.01 * k, mass=0.5, alpha=0.0)
                          for k, r in enumerate(results["uniform"])]
    rows = rows_of(report.replay_table(results))
    assert [r[0] for r in rows] == [LABELS["full"], LABELS["uniform"]]       # only the replay variants
    assert rows[0][1:] == ["3", "5.0", "20", "60", "25.0"]       # 0.1 / 0.02; 20%; 60%; 0.5 / 0.02
    assert rows[1][2:] == ["1.0", "50 to 52", "50", "-"]          # uniform: no priority to enter at


def test_q_table_sets_the_critics_q_against_the_ceiling_and_the_return_earned(tmp_path):
    flat = lambda level: np.full(100, float(level))
    results = {"full": [diagnosed(fake_run(tmp_path / "f" / str(k), k, flat(38)), q=3.9 + 0.15 * k) for k in range(3)]}
    rows = rows_of(report.q_table(results))
    # 38 per episode of 1001 steps: 0.038 a step, / (1 - 0.99) = 3.80; the ceiling 0.04 / 0.01 = 4.00
    assert rows == [[LABELS["full"], "3", "3.90 to 4.20", "3.80", "2 of 3", "4.00"]]


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


def test_measures_table_gives_every_measure_its_interval_and_verdict(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "uniform": [31, 32, 33.3], "n10": [36.5, 37.1, 38.6]})
    rows = rows_of(report.measures_table(results))
    assert [r[0] for r in rows] == [LABELS["uniform"], LABELS["n10"]]
    for column, metric in enumerate(claims.METRICS, start=1):
        family = {p.variant: p for p in claims.paired_family(results, metric)}
        for row, variant in zip(rows, ("uniform", "n10")):
            p = family[variant]
            assert row[column] == f"{p.mean:+.2f} [{p.corrected[0]:+.2f}, {p.corrected[1]:+.2f}] {p.verdict}"
    assert rows[0][list(claims.METRICS).index("mean_1_100") + 1].endswith("worse")


def test_cost_table_reads_the_benchmark(tmp_path):
    path = tmp_path / "cost.json"
    path.write_text(json.dumps({"change": ["clipped_double_q=True"], "pairs": 5, "short_run": "benchmarks.short_run",
                                "machine": "m", "date": "d", "ratio_median": {"wall": 1.08, "cpu": 1.12},
                                "ratio_range": {"wall": [1.01, 1.2], "cpu": [1.05, 1.3]}}))
    assert rows_of(report.cost_table(str(path))) == [["wall", "1.08", "1.01 to 1.20"], ["cpu", "1.12", "1.05 to 1.30"]]
    assert "not measured yet" in report.cost_table(str(tmp_path / "none.json"))


def test_gap_decomposition_splits_the_gap_at_one_step(tmp_path):
    flat = lambda level: np.full(100, float(level))
    results = {v: [fake_run(tmp_path / v / str(k), k, flat(x)) for k in range(3)]
               for v, x in {"full": 36, "one_step": 33, "plain": 32}.items()}
    text = report.gap_decomposition(results)
    assert text.startswith("Seeds 0-2. Full agent 36.00, 1-step 33.00, plain DDPG 32.00.")
    assert "by -3.00 (full to 1-step)" in text and "by -1.00 (1-step to plain)" in text and "by -4.00 (full to plain)" in text
    assert report.gap_decomposition({"full": results["full"]}).startswith("(needs")
    results["plain"] = results["plain"][:2]                # seed 2 of plain DDPG not run: the means leave it out
    results["one_step"] = results["one_step"][:2] + [fake_run(tmp_path / "late" / "2", 2, flat(20))]
    assert report.gap_decomposition(results).startswith("Seeds 0, 1. Full agent 36.00, 1-step 33.00, plain DDPG 32.00.")


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


def test_the_vintage_sentence_counts_the_agents_runs_made_by_earlier_code_and_not_the_peers():
    """Runs of today's configuration for their variant and seed say nothing, an ablation's extra fields
    included; an agent's run saved without a field of today's, or with another value, is named; a peer's
    run (its configuration names an `algorithm`) is never counted as the agent's."""
    from continuous_control.ablations import todays_config
    from experiments.summarize import vintage
    today = {"dir": "results/full/seed3", "config": todays_config("full", 3)}
    ablation = {"dir": "results/no_noise/seed1", "config": todays_config("no_noise", 1)}
    assert set(ablation["config"]) > set(today["config"])          # the Ablation's own fields
    older = {"dir": "results/full/seed4", "config": {k: v for k, v in todays_config("full", 4).items() if k != "clipped_double_q"}}
    other = {"dir": "results/no_noise/seed2", "config": {**todays_config("no_noise", 2), "gamma": 0.9}}
    peer = {"dir": "results/peers/td3/seed0", "config": {"algorithm": "TD3", "seed": 0}}
    assert vintage([today, ablation, peer]) == ""
    text = vintage([today, ablation, older, other, peer, peer])
    assert "2 of the agent's 4 runs here were made by earlier code" in text
    assert "`clipped_double_q`, `gamma`)" in text


def test_the_runs_name_the_commit_of_their_code():
    """Each set of runs names the commits that made it, counted; runs saved before summaries
    recorded a commit are counted as such, not given one."""
    from experiments.summarize import provenance
    runs = [{"summary": {"commit": "abc1234"}}] * 3 + [{"summary": {"commit": "def5678+changes"}}, {"summary": {}}]
    assert provenance(runs) == ("Code: commit `abc1234` (3 runs); commit `def5678+changes` (1 run); "
                                "1 run made before runs recorded their commit.")


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
    assert u.verdict == "worse" and len(rows_of(table)) == len(family)
    fig = report.interval_figure(results)
    assert len(fig.axes[0].get_yticks()) == 2


# --- the prose written by hand ----------------------------------------------------------------

def test_the_facts_the_hand_written_prose_states_hold_on_the_saved_results():
    """Report.ipynb's prose, and the lesson's at the end of its section 4, state these in words; each is
    checked here on results/ as committed, so that new results that contradict the prose fail a test."""
    from continuous_control.figures import q_reference
    from continuous_control.results import load_results
    from experiments.published import PUBLISHED
    results = load_results(need=("full", "uniform", "one_step", "plain", "n3", "n10"))
    measures = {v: [report.replay_measures(r) for r in results[v] if "unreplayed_mass" in r["diagnostics"]]
                for v in ("full", "uniform")}
    assert measures["full"] and measures["uniform"]
    # 2.1: prioritized replay shrinks the backlog that uniform replay leaves, yet the transitions never
    # replayed hold most of the sampling probability, as each entered at many times the TD errors.
    assert min(m["unreplayed"] for m in measures["uniform"]) > max(m["unreplayed"] for m in measures["full"])
    assert min(m["mass"] for m in measures["full"]) > 50 and min(m["entry"] for m in measures["full"]) > 5
    assert min(m["young"] for m in measures["full"]) > 2          # new transitions drawn first
    # 2.1, and the lesson at the end of its section 4, against uniform replay: at the mean priority a new
    # transition is drawn as often as any, the backlog is about uniform's, and those runs score as uniform's
    # (zero near the middle of the plain interval); the full agent scored above uniform replay in most of its
    # ten seeds, but its interval holds zero, plain and widened for the table's comparisons.
    priority = load_results(need=("mean_priority",))["mean_priority"]
    assert all(0.9 < m["young"] < 1.1 for m in map(report.replay_measures, priority))
    assert min(report.replay_measures(r)["unreplayed"] for r in priority) > max(m["unreplayed"] for m in measures["full"])
    against = {p.variant: p for p in claims.paired_family({**results, "mean_priority": priority}, claims.PRIMARY,
                                                          ("full", "all_time_max_priority", "mean_priority"), "uniform")}
    assert against["full"].verdict == against["mean_priority"].verdict == "no clear difference"
    assert against["all_time_max_priority"].verdict == "better" and len(against["all_time_max_priority"].seeds) == 10
    kind = lambda v: {r["summary"]["seed"]: processor_of(r["summary"]) for r in results[v]}
    alike = [k for k, made in kind("all_time_max_priority").items() if kind("uniform")[k] == made]
    atm, uniform = ({r["summary"]["seed"]: claims.run_stats(r)["mean_1_100"] for r in results[v]}
                    for v in ("all_time_max_priority", "uniform"))
    assert len(alike) < 10 and np.mean([atm[k] - uniform[k] for k in alike]) > 0    # "on the seeds made on one processor"
    assert claims.paired_family(results, claims.PRIMARY, ("all_time_max_priority",))[0].verdict == "no clear difference"
    # 8: learning every step throughout shows no clear difference from the full agent (section 5.1's family).
    every = {p.variant: p for p in claims.paired_family(report.paired(load_results()), claims.PRIMARY)}["learn_every_step"]
    assert len(every.seeds) == 10 and every.verdict == "no clear difference"
    (lo, hi), mean = against["mean_priority"].interval, against["mean_priority"].mean
    assert len(against["mean_priority"].seeds) == 10 and lo < 0 < hi and abs(mean) < (hi - lo) / 4
    full = against["full"]
    assert len(full.seeds) == 10 and 2 * np.sum(full.diffs > 0) > len(full.seeds)
    assert full.interval[0] < 0 < full.interval[1] and full.corrected[0] < 0 < full.corrected[1]
    # 6: most Unity-trained actors score as on Unity; the one lowest here was trained on the one-arm build.
    scores, inside, _ = report.calibration_split()
    assert 2 * len(inside) > len(scores)
    assert "1 arm" in next(p["build"] for p in PUBLISHED if p["actor"] == min(scores, key=scores.get))
    # 2.2: the critic's Q is above the Monte-Carlo return's upper bound and above the ceiling; the gap is
    # largest on the arms that earn least.
    over = json.load(open(os.path.join(ROOT, "results", "overestimation", "checkpoints.json")))
    assert over["q"] > over["mc_return_upper"] and over["q"] > over["ceiling"]
    arms = over["by_arm"]
    assert arms["difference"][int(np.argmin(arms["mc_return"]))] > arms["difference"][int(np.argmax(arms["mc_return"]))]
    assert np.std(arms["q"]) < np.std(arms["mc_return"])
    twin_critic = json.load(open(os.path.join(ROOT, "results", "overestimation", "runs-clipped_double_q-seed0.json")))
    assert twin_critic["twin_critic"] and twin_critic["q_min"] < twin_critic["mc_return"]
    # 3.1: the weakest arm-episodes are backward orbits, the slow ones more than the fast; mirrored forward
    # they score as forward goals do; the control, mirrored backward, costs the forward goals score, the worst most.
    weak = json.load(open(os.path.join(ROOT, "results", "weak_arm.json")))["summary"]
    trained, forward, backward = weak["as_trained"], weak["mirrored_to_positive"], weak["mirrored_to_negative"]
    assert trained["all"]["worst"] < trained["all"]["mean"] - 3        # a few arm-episodes far below the rest
    assert trained["positive"]["worst"] > trained["negative"]["worst"] and trained["positive"]["mean"] > trained["negative"]["mean"]
    assert trained["negative"]["mean_slow"] < trained["negative"]["mean_fast"]
    assert forward["negative"]["mean"] > trained["positive"]["mean"] - 0.1
    assert backward["positive"]["mean"] < trained["positive"]["mean"]
    assert backward["positive"]["worst"] < trained["positive"]["worst"] - 1
    # 2.2: with 1-step targets and in plain DDPG, Q at episode 100 sits below the return earned; with n >= 3
    # it sits at or above the ceiling.
    q100 = lambda v: [(r["diagnostics"]["q"][99], q_reference(r["scores"]["mean"][:100], 0.99))
                      for r in load_results()[v]]
    for variant in ("one_step", "plain"):
        assert all(q < ref["earned"][99] for q, ref in q100(variant)), variant
    for variant in ("full", "n3", "n10"):
        assert all(q > 0.99 * ref["ceiling"] > ref["earned"][99] for q, ref in q100(variant)), variant
    # 3.1, across seeds: the weaker direction differs between seeds, and mirroring into either direction
    # costs some seed score on its worst arm.
    seeds = json.load(open(os.path.join(ROOT, "results", "weak_arm_seeds.json")))["seeds"].values()
    assert any(r["as_trained"]["negative"] < r["as_trained"]["positive"] - 0.2 for r in seeds)
    assert any(r["as_trained"]["positive"] < r["as_trained"]["negative"] - 0.2 for r in seeds)
    for into in ("mirrored_to_positive", "mirrored_to_negative"):
        assert any(r[into]["worst_arm"] < r["as_trained"]["worst_arm"] - 0.2 for r in seeds), into
    # 3.1: the mirror variant (symmetric by construction) has a noise-free worst arm below 37 in some seed,
    # which no full-agent seed has.
    mirror = load_results(need=("mirror",))["mirror"]
    assert any(claims.run_stats(r)["eval_worst_arm"] < 37 for r in mirror)
    assert all(claims.run_stats(r)["eval_worst_arm"] >= 37 for r in results["full"])
    # 5.1: the processor check finds no clear difference on any measure, on at least ten seeds.
    check = rows_of(report.processor_check(results))
    assert check and all(int(r[1]) >= 10 and r[5] == "no clear difference" for r in check)
    # 5.2: clipped double-Q, on ten seeds, is not clearly better on the primary measure (so the default keeps
    # one critic), and its Q at episode 100 stays below the ceiling in every seed.
    twin = load_results(need=("clipped_double_q",))["clipped_double_q"]
    assert len(twin) == 10 and rows_of(report.decision_table(results))[0][2] == "no"
    assert all(q < ref["ceiling"] for q, ref in q100("clipped_double_q"))
    # 8: every full run is solved at episode 100, and its mean reached 30 far earlier.
    assert {r["summary"]["solved_at"] for r in results["full"]} == {100}
    assert max(first_episode_at(r["scores"]["mean"]) for r in results["full"]) <= 25


def test_the_interval_table_takes_another_baseline(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "uniform": [31, 32, 33.3], "mean_priority": [33, 33.5, 34]})
    table = report.interval_table(results, variants=("full", "mean_priority"), baseline="uniform")
    assert table.startswith(f"Baseline: {LABELS['uniform']}.")
    rows = rows_of(table)
    assert [r[0] for r in rows] == [LABELS["full"], LABELS["mean_priority"]]
    family = claims.paired_family(results, claims.PRIMARY, ("full", "mean_priority"), "uniform")
    assert [r[2] for r in rows] == [f"{p.mean:+.2f}" for p in family] and family[0].mean > 3 > family[1].mean > 0


def test_the_decision_table_applies_the_rule_to_the_interval_and_the_cost(tmp_path):
    results = results_of(tmp_path, {"full": [36, 37, 38], "clipped_double_q": [38, 39, 40.2], "uniform": [36, 37, 38]})
    cost = tmp_path / "cost.json"
    cost.write_text(json.dumps({"pairs": 5, "ratio_median": {"wall": 1.12, "cpu": 1.2}}))
    rows = rows_of(report.decision_table(results, cost=str(cost)))
    p = {p.variant: p for p in claims.paired_family(results, claims.PRIMARY)}["clipped_double_q"]
    assert p.verdict == "better" and rows[0][1].startswith(f"{p.mean:+.2f}, corrected interval [{p.corrected[0]:+.2f}")
    assert [r[2] for r in rows] == ["yes", "yes"] and rows[1][1] == "wall x1.12, CPU x1.20 (medians of 5 pairs)"
    cost.write_text(json.dumps({"pairs": 5, "ratio_median": {"wall": 1.16, "cpu": 1.1}}))
    assert rows_of(report.decision_table(results, cost=str(cost)))[1][2] == "no"
    same = results_of(tmp_path / "same", {"full": [36, 37, 38], "clipped_double_q": [36.5, 36.5, 38.5]})
    assert rows_of(report.decision_table(same, cost=str(cost)))[0][2] == "no"
    assert rows_of(report.decision_table({"full": same["full"]}, cost=str(tmp_path / "none")))[0][1:] == ["not run yet", "no"]


def test_the_processor_check_pairs_the_full_agent_made_again_seed_by_seed(tmp_path):
    """results/processor_check/full/ minus results/full/, seed by seed: nil where another processor
    repeats the scores, "lower" where it is about one point lower in every seed."""
    chip = lambda name: f"x86_64 ({name}), 2 cores, torch threads 1"
    full = [fake_run(tmp_path / "full" / f"seed{k}", k, ramp(36 + k), machine=chip("Chip(R) A Processor")) for k in range(4)]
    for k in range(5):                                   # seed 4 has no partner and is left out
        fake_run(tmp_path / "same" / "full" / f"seed{k}", k, ramp(36 + k), machine=chip("Chip B"))
    text = report.processor_check({"full": full}, root=str(tmp_path / "same"))
    assert "The full agent on Chip B minus the same code and seed on Chip A, seeds 0-3" in text
    rows = rows_of(text)
    assert [r[0] for r in rows] == [claims.METRICS[m][0] for m in claims.METRICS]
    assert all(r[1] == "4" and r[2] in ("+0.00", "-0.00") and r[5] == "no clear difference" for r in rows)
    for k, shift in enumerate([1.0, 1.2, 0.9, 1.1]):
        fake_run(tmp_path / "lower" / "full" / f"seed{k}", k, ramp(36 + k - shift), machine=chip("Chip B"))
    primary = rows_of(report.processor_check({"full": full}, root=str(tmp_path / "lower")))[1]
    assert primary[0] == claims.METRICS[claims.PRIMARY][0] and primary[4] == "0 / 4" and primary[5] == "lower"
    # the mean of episodes 1-100 of a ramp to L by episode 30 is (L/30 * 465 + 70 L) / 100
    assert float(primary[2]) == pytest.approx(-1.05 * (465 / 30 + 70) / 100, abs=0.01)
    assert report.processor_check({"full": full}, root=str(tmp_path / "none")).startswith("(no runs in")


def test_minutes_name_the_processor_they_were_made_on(tmp_path):
    chip = lambda name: f"x86_64 ({name}), 2 cores, torch threads 1"
    runs = [fake_run(tmp_path / str(k), k, ramp(36), machine=chip(name), concurrent_runs=n)
            for k, (name, n) in enumerate([("Intel(R) Xeon(R) Processor", 2), ("AMD EPYC", 1), ("AMD EPYC", 2)])]
    assert claims.sharing(runs[:1]) == "2 at a time, Intel Xeon"
    assert claims.sharing(runs) == "alone and 2 at a time, AMD EPYC and Intel Xeon"
    assert claims.sharing([fake_run(tmp_path / "unnamed", 0, ramp(36))]) == "alone"
    unnamed = fake_run(tmp_path / "unrecorded", 3, ramp(36), concurrent_runs=2)       # an older run's summary
    assert claims.sharing([runs[2], unnamed]) == "2 at a time, AMD EPYC and one not recorded"

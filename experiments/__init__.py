"""The report's experiments: variants and ablations, training runs, the baselines (Stable-Baselines3 peers, a
published learner), the table of runs, its statistics, the report's builders and doc/'s figures and tables."""

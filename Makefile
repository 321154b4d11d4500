# `make run` is the main job, `make test` runs every test. Each first builds .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test benchmark experiments figures report demo clean

$(STAMP): requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps unityagents==0.4.0
	touch $(STAMP)

# Train on the built-in Reacher: execute the notebook in place, no cell time-out.
run: $(STAMP)
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.timeout=-1 Continuous_Control.ipynb

# Unit and environment tests and the training notebook in its short SMOKE configuration (outputs
# not compared); then the report, whose every output must match the committed one (strict).
test: $(STAMP)
	SMOKE=1 $(PY) -m pytest tests Continuous_Control.ipynb --nbval-lax --nbval-current-env
	$(PY) -m pytest Report.ipynb --nbval --nbval-current-env --nbval-sanitize-with tests/report_sanitize.cfg

# Environment speed, then the notebook's training configuration for 3 seeds (results/full).
benchmark: $(STAMP)
	$(PY) benchmarks/env_speed.py
	$(PY) experiments/run.py --variant full --seeds 0 1 2

# The report's experiments: the full agent until solved and the four ablations for exactly 100
# episodes, 3 seeds each, two runs at a time (about 2 hours here). Resumable: rerun to continue.
experiments: $(STAMP)
	$(PY) experiments/run.py --variant full --seeds 0 1 2
	$(PY) experiments/run.py --variant one_step uniform action_noise plain --seeds 0 1 2 --episodes 100 --no-stop

# doc/ figures from checkpoints/ and results/, then Report.ipynb re-executed from them.
figures: $(STAMP)
	$(PY) experiments/figures.py
report: figures
	$(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace Report.ipynb

demo: $(STAMP)
	$(PY) -m reacher.demo

clean:
	rm -rf $(VENV)

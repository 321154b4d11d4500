# `make run` is the main job, `make test` runs every test. Each first builds .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTHON ?= python3
# The kernel over IPC, not TCP: no "running over TCP without encryption" warning, nothing on a port.
EXECUTE := $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --KernelManager.transport=ipc
JUPYTERLAB := jupyterlab==4.6.6 jupytext==1.19.6

.PHONY: run test benchmark calibrate learner experiments figures report lab demo clean python-version

# The pins in requirements.txt are for CPython 3.10 to 3.12 (torch 2.13, numpy 1.26, unityagents 0.4.0).
python-version:
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 10) <= v <= (3, 12) else \
		"This project needs Python 3.10 to 3.12 (tested on 3.11); $(PYTHON) is %d.%d. Run make PYTHON=python3.11 ..." % v)'

$(STAMP): requirements.txt | python-version
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps unityagents==0.4.0
	touch $(STAMP)

# Train on the built-in Reacher: execute the notebook in place, no cell time-out; then redraw
# doc/, the README's result tables and Report.ipynb from the new run, so that the project stays
# consistent (and `make test`, which compares the report strictly, still passes).
run: $(STAMP)
	$(EXECUTE) --ExecutePreprocessor.timeout=-1 Continuous_Control.ipynb
	$(MAKE) report

# Unit and environment tests and the training notebook in its short SMOKE configuration (outputs
# not compared); then the report, whose every output must match the committed one (strict).
test: $(STAMP)
	SMOKE=1 $(PY) -m pytest tests Continuous_Control.ipynb --nbval-lax --nbval-current-env
	$(PY) -m pytest Report.ipynb --nbval --nbval-current-env --nbval-sanitize-with tests/report_sanitize.cfg

# Environment speed and where a training step's time goes (results/benchmarks/).
benchmark: $(STAMP)
	$(PY) benchmarks/env_speed.py
	$(PY) benchmarks/train_speed.py --label after

# The replica against the Unity build: random play, the scripted controller and published
# Unity-trained actors (read from CALIBRATION_DIR, default ../shared/calibration) for every joint
# model; writes results/calibration/ and doc/calibration.md. About a minute.
calibrate: $(STAMP)
	$(PY) benchmarks/calibration.py

# A published course learner re-expressed, 3 seeds x 80 episodes on the replica next to its Unity
# log (doc/published_learner.png). Slow: one update of batch 1280 per step; hours per seed on 2 cores.
learner: $(STAMP)
	$(PY) benchmarks/published_learner.py --seeds 0 1 2 --episodes 80
	$(PY) benchmarks/published_learner.py --report

# The report's experiments (experiments/run.py --all): the full agent until solved for seeds 0-4,
# and each of the 8 ablations for exactly 100 episodes on seeds 0-2, two runs at a time (about
# 2 hours on 2 cores). Resumable: rerun to continue; a run whose results exist is skipped.
experiments: $(STAMP)
	$(PY) experiments/run.py --all --jobs 2

# doc/ figures and the README's result tables from checkpoints/ and results/, then Report.ipynb
# re-executed from them.
figures: $(STAMP)
	$(PY) experiments/figures.py
report: figures
	$(EXECUTE) Report.ipynb

# JupyterLab (pinned) in .venv, so that the notebooks run with the project's packages; jupytext's
# extension keeps each notebook's text twin in scripts/ in step as you save.
lab: $(STAMP)
	$(PY) -m pip install --quiet $(JUPYTERLAB)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root) Continuous_Control.ipynb Report.ipynb

demo: $(STAMP)
	$(PY) -m reacher.demo

clean:
	rm -rf $(VENV)

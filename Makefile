# `make run` is the main job, `make test` runs every test. Each first builds .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PYTHON ?= python3
# The kernel over IPC, not TCP: no "running over TCP without encryption" warning, nothing on a port.
EXECUTE := $(VENV)/bin/jupyter nbconvert --to notebook --execute --inplace --KernelManager.transport=ipc
JUPYTERLAB := jupyterlab==4.6.6 jupytext==1.19.6
# make run RESUME=1: continue an interrupted run from checkpoints/resume instead of starting afresh.
RESUME ?= 0

.PHONY: run test export benchmark calibrate learner experiments figures report screenshot lab demo clean python-version

# The pins in requirements.txt are for CPython 3.10 to 3.12 (torch 2.13, numpy 1.26, unityagents 0.4.0).
python-version:
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 10) <= v <= (3, 12) else \
		"This project needs Python 3.10 to 3.12 (tested on 3.11); $(PYTHON) is %d.%d. Run make PYTHON=python3.11 ..." % v)'

# The exact, tested set (requirements.txt), the unityagents client without its own pins, then this
# project itself, editable: `continuous_control`, `reacher`, `experiments` and `benchmarks` import
# from anywhere, and an edit is live at once.
$(STAMP): requirements.txt pyproject.toml | python-version
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps unityagents==0.4.0
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# Train on the built-in Reacher: execute the notebook in place, no cell time-out (a fresh run;
# RESUME=1 continues an interrupted one); then redraw doc/, the README's result tables and
# Report.ipynb from the new run, so that the project stays consistent (and `make test`, which
# compares the report strictly, still passes).
run: $(STAMP)
	RESUME=$(RESUME) $(EXECUTE) --ExecutePreprocessor.timeout=-1 Continuous_Control.ipynb
	$(MAKE) report

# Unit and environment tests and the training notebook in its short SMOKE configuration (the
# outputs of cells tagged nbval-check-output compared); then the report, whose every output must
# match the committed one (strict).
test: $(STAMP)
	SMOKE=1 $(PY) -m pytest tests Continuous_Control.ipynb --nbval-lax --nbval-current-env
	$(PY) -m pytest Report.ipynb --nbval --nbval-current-env --nbval-sanitize-with tests/report_sanitize.cfg

# After editing the notebook: its text twin in scripts/ and the exported agent (continuous_control/agent.py).
export: $(STAMP)
	$(VENV)/bin/jupytext --sync Continuous_Control.ipynb Report.ipynb
	$(PY) -m continuous_control.export

# Environment speed and where a training step's time goes (results/benchmarks/).
benchmark: $(STAMP)
	$(PY) -m benchmarks.env_speed
	$(PY) -m benchmarks.train_speed --label after

# The replica against the Unity build: random play, the scripted controller and published
# Unity-trained actors (read from CALIBRATION_DIR, default ../shared/calibration) for every joint
# model; writes results/calibration/ and doc/calibration.md. About a minute.
calibrate: $(STAMP)
	$(PY) -m benchmarks.calibration

# A published course learner re-expressed, 3 seeds x 80 episodes on the replica next to its Unity
# log (doc/published_learner.png). Slow: one update of batch 1280 per step; hours per seed on 2 cores.
learner: $(STAMP)
	$(PY) -m benchmarks.published_learner --seeds 0 1 2 --episodes 80
	$(PY) -m benchmarks.published_learner --report

# The report's experiments (experiments/run.py --all): the full agent until solved for seeds 0-4,
# and each ablation of continuous_control/variants.py for exactly 100 episodes on seeds 0-2, two
# runs at a time. Resumable: rerun to continue; a run whose results exist is skipped.
experiments: $(STAMP)
	$(PY) -m experiments.run --all --jobs 2

# doc/ figures and the README's result tables from checkpoints/ and results/, then Report.ipynb
# re-executed from them.
figures: $(STAMP)
	$(PY) -m experiments.figures
report: figures
	$(EXECUTE) Report.ipynb

# doc/jupyterlab.png: the committed Continuous_Control.ipynb as JupyterLab shows it, taken with
# Debian's headless chromium (apt-get install chromium; CHROMIUM=... to use another).
CHROMIUM ?= $(shell command -v chromium || echo /usr/bin/chromium)
screenshot: $(STAMP)
	$(PY) -m pip install --quiet $(JUPYTERLAB) playwright==1.65.2
	$(PY) -m experiments.screenshot --chromium $(CHROMIUM) --out doc/jupyterlab.png

# JupyterLab (pinned) in .venv, so that the notebooks run with the project's packages; jupytext's
# extension keeps each notebook's text twin in scripts/ in step as you save.
lab: $(STAMP)
	$(PY) -m pip install --quiet $(JUPYTERLAB)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root) Continuous_Control.ipynb Report.ipynb

demo: $(STAMP)
	$(PY) -m reacher.demo

clean:
	rm -rf $(VENV)

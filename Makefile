# `make run` is the main job, `make test` runs every test. Each first builds .venv; then each
# target runs the task of its name in tools/tasks.py (`python -m tools.tasks --list`), which also
# runs without make, on any system.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
HOOK := $(VENV)/.client-hook
PYTHON ?= python3
JUPYTERLAB := jupyterlab==4.6.6 jupytext==1.19.6
# make run RESUME=1: continue an interrupted run from checkpoints/resume instead of starting afresh.
RESUME ?= 0
TASKS := run test export student figures report diagnose benchmark calibrate experiments learner peers wheels

.PHONY: $(TASKS) lab clean python-version

python-version:
	@$(PYTHON) -c 'import sys; v = sys.version_info[:2]; sys.exit(0 if (3, 11) <= v <= (3, 14) else \
		"This project needs Python 3.11 to 3.14; $(PYTHON) is %d.%d. Run make PYTHON=python3.13 ..." % v)'

# The exact, tested set (requirements.txt), the unityagents client without its own pins (they do not
# install on current Python), then this project itself, editable: `continuous_control`, `reacher`,
# `experiments`, `benchmarks` and `tools` import from anywhere, and an edit is live at once.
$(STAMP): requirements.txt pyproject.toml | python-version
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps unityagents==0.4.0
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

# The course's own code (`from unityagents import UnityEnvironment`, nothing of this project imported)
# runs unchanged on numpy 2 and never waits forever; the built-in executable serves with this .venv's
# python (reacher/client_hook.py says how).
$(HOOK): reacher/client_hook.py $(STAMP)
	$(PY) -m reacher.client_hook --install
	touch $(HOOK)

# run: train in Continuous_Control.ipynb (a fresh run, or RESUME=1): the notebook and checkpoints/.
# test: ruff, the units, the notebook at SMOKE size (cells tagged nbval-check-output compared) and
#      the report executed; no network needed. report: maintainers remake doc/ and Report.ipynb.
$(TASKS): $(HOOK)
	RESUME=$(RESUME) $(PY) -m tools.tasks $@

# JupyterLab (pinned) in .venv, so that the notebooks run with the project's packages; jupytext's
# extension keeps each notebook's text twin in twins/ in step as you save.
lab: $(HOOK)
	$(PY) -m pip install --quiet $(JUPYTERLAB)
	$(VENV)/bin/jupyter lab --ip=127.0.0.1 $(if $(filter 0,$(shell id -u)),--allow-root) Continuous_Control.ipynb Report.ipynb

clean:
	rm -rf $(VENV)

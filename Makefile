# `make run` is the main job, `make test` runs every test. Each first builds .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test benchmark demo seeds clean

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

# Unit and environment tests, then the notebook in its short SMOKE configuration.
test: $(STAMP)
	SMOKE=1 $(PY) -m pytest tests Continuous_Control.ipynb --nbval-lax --nbval-current-env

# Environment speed, then the notebook's training configuration for 3 seeds (results/full).
benchmark: $(STAMP)
	$(PY) benchmarks/env_speed.py
	$(PY) experiments/run.py --variant full --seeds 0 1 2

demo: $(STAMP)
	$(PY) -m reacher.demo

clean:
	rm -rf $(VENV)

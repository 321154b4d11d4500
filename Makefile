# `make test` runs every test; `make run` runs the main job. Each first builds .venv.
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: test run demo benchmark clean

$(STAMP): requirements.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps unityagents==0.4.0
	touch $(STAMP)

test: $(STAMP)
	$(PY) -m pytest

run: demo

demo: $(STAMP)
	$(PY) -m reacher.demo

benchmark: $(STAMP)
	$(PY) benchmarks/env_speed.py

clean:
	rm -rf $(VENV)

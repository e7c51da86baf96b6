# `make lab`: set up and open the notebooks. `make test`: set up and run every check.
PYTHON ?= python3
# Where `make lab` opens: your copies of the shipped notebooks and your own, outside git
# (.gitignore), so Run All, autosave and new notebooks never touch notebooks/ or `make test`.
WORKSPACE := lab
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# Jupyter refuses to run as root unless told; containers and CI machines often are root
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab workspace test lint typecheck pytest chromium audio-devices clean

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(INSTALLED)

# offline by default: no "get notified about Jupyter news?" toast over the views
lab: $(INSTALLED) workspace
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(WORKSPACE) \
	  --LabApp.news_url=None $(ALLOW_ROOT)

# A shipped notebook (and the agent and scenario files notebook 05 uses) is copied in only when
# missing: yours are never overwritten (delete your copy to get the shipped one back).
workspace:
	@mkdir -p $(WORKSPACE)
	@for file in notebooks/*.ipynb notebooks/*.py notebooks/*.yaml; do \
	  [ -e "$(WORKSPACE)/$${file##*/}" ] || cp "$$file" $(WORKSPACE)/; \
	done
	@echo "JupyterLab opens $(WORKSPACE)/: your copies of notebooks/ and your own notebooks (git ignores them)"

test: lint typecheck pytest

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

pytest: $(INSTALLED) chromium audio-devices
	$(BIN)/pytest -q $(PYTEST_ARGS)

# The browser tests drive Debian's chromium (Playwright never downloads a browser here).
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	  else \
	    echo "the browser tests need chromium: sudo apt-get install chromium" >&2; exit 1; \
	  fi; }

# The device tests play and record through a real PortAudio device: JACK's dummy backend.
audio-devices:
	@command -v jackd >/dev/null && ldconfig -p | grep -q libportaudio || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq jackd2 libportaudio2; \
	  else \
	    echo "the device tests need JACK and PortAudio: sudo apt-get install jackd2 libportaudio2" >&2; exit 1; \
	  fi; }

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

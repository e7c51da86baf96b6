# `make lab`: set up and open the notebooks. `make test`: set up and run every check.
PYTHON ?= python3
# Where `make lab` opens: your copies of the shipped notebooks and your own, outside git
# (.gitignore), so Run All, autosave and new notebooks never touch notebooks/ or `make test`.
WORKSPACE := lab
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
# VideoSDK's agents (notebook 07, the VideoSDK tests) in an environment of their own: the
# extra downgrades protobuf, av and google-api-core, which livekit's side uses
VS_VENV := .venv-videosdk
VS_BIN := $(VS_VENV)/bin
VS_INSTALLED := $(VS_VENV)/.installed
VS_KERNEL := notebook-agents-videosdk
VS_TESTS := tests/test_videosdk_*.py tests/browser/test_videosdk_*.py
# The trace viewers the browser tests open exports in (speedscope), from npm at the versions
# its package-lock.json pins, into its node_modules/ (git ignores it)
VIEWERS := tests/browser/viewers
VIEWERS_INSTALLED := $(VIEWERS)/node_modules/.installed
# Jupyter refuses to run as root unless told; containers and CI machines often are root
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab workspace test lint typecheck pytest pytest-videosdk chromium audio-devices viewers clean

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(INSTALLED)

# its kernel is offered in the main environment's JupyterLab (notebook 07 asks for it) and
# in its own (the browser tests run JupyterLab from there)
$(VS_INSTALLED): pyproject.toml $(INSTALLED)
	test -x $(VS_BIN)/python || $(PYTHON) -m venv $(VS_VENV)
	$(VS_BIN)/python -m pip install --quiet --upgrade pip
	$(VS_BIN)/python -m pip install --quiet -e '.[dev,videosdk]'
	$(VS_BIN)/python -m ipykernel install --sys-prefix --name $(VS_KERNEL) \
	  --display-name "Python (notebook-agents + VideoSDK)" >/dev/null
	$(BIN)/jupyter kernelspec install --prefix $(VENV) \
	  $(VS_VENV)/share/jupyter/kernels/$(VS_KERNEL) 2>/dev/null
	@echo "$(VS_VENV): VideoSDK's agents (notebook 07) apart from $(VENV), whose protobuf, av and"
	@echo "  google-api-core its pins would downgrade; JupyterLab offers its kernel as"
	@echo "  'Python (notebook-agents + VideoSDK)'"
	touch $(VS_INSTALLED)

# offline by default: no "get notified about Jupyter news?" toast over the views
lab: $(INSTALLED) $(VS_INSTALLED) workspace
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

# The two suites at once, each in its environment (the VideoSDK one is set up meanwhile): the
# main suite mostly waits on real-time audio, browsers and kernels, and CI stays under 30 min
test: lint typecheck chromium audio-devices viewers
	$(MAKE) --no-print-directory -j2 --output-sync=line pytest pytest-videosdk

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(INSTALLED)
	$(BIN)/mypy

pytest: $(INSTALLED) chromium audio-devices viewers
	$(BIN)/pytest -q $(PYTEST_ARGS)

pytest-videosdk: $(INSTALLED) $(VS_INSTALLED) chromium
	$(VS_BIN)/pytest -q $(VS_TESTS) $(PYTEST_ARGS)

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

viewers: $(VIEWERS_INSTALLED)

$(VIEWERS_INSTALLED): $(VIEWERS)/package-lock.json
	@command -v npm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm; \
	  else \
	    echo "the trace viewer tests need npm: sudo apt-get install npm" >&2; exit 1; \
	  fi; }
	npm ci --prefix $(VIEWERS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) $(VS_VENV) $(VIEWERS)/node_modules build dist .pytest_cache .mypy_cache .ruff_cache

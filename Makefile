# The manual's two commands: `make` (build the manual into site/) and `make test` (run the tests).
# Every target does its own set-up: a virtual environment with the pinned dependencies.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
BROWSER_STAMP := $(VENV)/.browser

.PHONY: all site check test lint serve bench compare add-run publish verify diff clean examples

all: site

$(STAMP): pyproject.toml requirements.lock
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip==25.3"
	$(PY) -m pip install --quiet -c requirements.lock -e ".[test]"
	touch $(STAMP)

# The browser test drives Debian's Chromium: Playwright cannot download its own browser here.
$(BROWSER_STAMP): $(STAMP)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi; }
	touch $(BROWSER_STAMP)

site: $(STAMP)
	$(PY) -m build_tools build

check: $(STAMP)
	$(PY) -m build_tools check

serve: $(STAMP)
	$(PY) -m build_tools serve

test: $(STAMP) $(BROWSER_STAMP)
	$(PY) -m ruff check build_tools figures tests
	$(PY) -m pytest

compare: $(STAMP)
	$(PY) -m build_tools compare "$$RUN"

# SRC and ID reach the command as environment variables, never as shell text.
add-run: $(STAMP)
	@test -n "$$SRC" || { echo "usage: make add-run SRC=path [ID=run-id]" >&2; exit 2; }
	$(PY) -m build_tools add-run "$$SRC" --id "$$ID"

# SCALE=RUNSxSTEPS (make bench SCALE=1000x1000) reaches the benchmark as an environment variable, never as shell text.
bench: $(STAMP)
	$(PY) -m build_tools bench

examples: $(STAMP)
	$(PY) -m build_tools.examples runs

publish: $(STAMP)
	$(PY) -m build_tools publish $(EDITION) $(if $(BRANCH),--branch $(BRANCH)) $(if $(REMOTE),--remote $(REMOTE)) $(if $(PUSH),--push) $(if $(REPLACE),--replace)

verify: $(STAMP)
	$(PY) -m build_tools verify $(EDITION) $(if $(BRANCH),--branch $(BRANCH))

diff: $(STAMP)
	$(PY) -m build_tools diff $(FROM) $(TO) $(if $(BRANCH),--branch $(BRANCH))

clean:
	rm -rf site build .pytest_cache

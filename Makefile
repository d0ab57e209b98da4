# Two commands on a fresh machine: `make test` and `make demo` (each sets up .venv when needed).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install package test test-slow test-unit test-integration test-system test-browser browser-deps lint docs docs-serve demo bench gpu-report clean-venv

$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,lint,docs,export,package,teach]'
	touch $(STAMP)

# Only the environment: .venv with the package and its extras, nothing trained or tested.
install: $(STAMP)

# The test suite without its slow tests, on every core (pytest-xdist: one worker per core, each test single-threaded).
# make test-slow runs the slow ones (every variant learning long reversal, the documented commands, the
# remaining ONNX kinds); CI runs both. Each tier can also run alone (unit: seconds, integration: tiny runs,
# system: toy tasks learned), slow tests included.
XDIST := -n auto
test: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow"

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) -m slow

test-unit test-integration test-system: test-%: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) tests/$*

# Lint, format check, types and the import layers, as configured in pyproject.toml; CI (.ci/run) and
# the pre-commit hooks run the same, and each must report nothing. The package and every Python file
# beside it are held to the same rules: the benchmarks (scripts/), the docs build (docs_build/), CI's
# own (.ci/) and the tests. `ruff format nmt scripts docs_build .ci tests` fixes the format, `ruff check
# --fix` what can be fixed mechanically. mypy takes its files from pyproject.toml (the same, tests aside).
PYTHON_DIRS := nmt scripts docs_build .ci tests examples
lint: $(STAMP)
	$(BIN)/ruff check $(PYTHON_DIRS)
	$(BIN)/ruff format --check $(PYTHON_DIRS)
	$(BIN)/mypy
	$(BIN)/lint-imports

# The documentation site from docs/ into site/. --strict turns every warning into a failure: a broken link
# or anchor, or a page missing from the navigation in mkdocs.yml (CI runs this). docs-serve previews it.
# NO_MKDOCS_2_WARNING silences Material's banner about MkDocs 2, which does not change the build.
docs: $(STAMP)
	$(BIN)/python docs_build/config_reference.py --check
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

docs-serve: $(STAMP)
	$(BIN)/mkdocs serve

# What the browser test needs, each installed only when missing: Debian's chromium and chromedriver
# (apt, as root or with sudo) and selenium in the venv (the `browser` extra); nothing else is downloaded.
browser-deps: $(STAMP)
	@command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
	  $$( [ "$$(id -u)" = 0 ] || echo sudo ) sh -c 'apt-get update -q && \
	    DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver'
	@$(BIN)/python -c 'import selenium' 2>/dev/null || \
	  $(BIN)/python -m pip install --quiet -c constraints.txt -e '.[test,browser]'

# The page of nmt serve in headless Chromium. `make test` skips it where Chromium is missing,
# except under CI=true (.ci/run), where that is a failure.
test-browser: browser-deps
	$(BIN)/python -m pytest -q tests/browser

# Prepare the embedded synthetic corpus, train, translate its test split and print a BLEU report.
# Training stops after a fixed number of updates, so the scores do not depend on the machine; the time does.
demo: $(STAMP)
	@start=$$(date +%s) && set -x && \
	$(BIN)/nmt data prepare synthetic --config configs/demo.yaml && \
	$(BIN)/nmt train --config configs/demo.yaml --overwrite && \
	$(BIN)/nmt eval --checkpoint runs/demo/checkpoints/best.pt --split test --out eval/demo && \
	{ set +x; } 2>/dev/null && \
	echo "make demo: wall time $$(( ($$(date +%s) - start) / 60 )) min $$(( ($$(date +%s) - start) % 60 )) s"

bench: $(STAMP)
	$(BIN)/python scripts/bench_train.py --quick
	$(BIN)/python scripts/bench_decode.py --checkpoint runs/demo/checkpoints/best.pt --quick

# Every GPU figure of docs/results.md in one sitting (about 9 minutes on one GPU; MIRROR holds the raw
# Multi30k files): JSON lines on stdout and in runs/gpu_report/, the tables in runs/gpu_report/report.md.
MIRROR ?= ../shared/data/multi30k
gpu-report: $(STAMP)
	$(BIN)/python scripts/gpu_report.py --mirror $(MIRROR)

# The distribution as a user gets it: wheel and sdist into dist/, the wheel installed into a fresh
# environment (build/pkgtest) with the same torch pin and the default dependencies only, then, from
# outside the repository (nothing read from the working tree), .ci/package_smoke.py trains a tiny
# model, translates and scores it from Python and the CLI, and finds the export extra's engines
# refused in one line (.ci/run runs this).
PKGTEST := build/pkgtest
package: $(STAMP)
	rm -rf dist $(PKGTEST)
	$(BIN)/python -m build --outdir dist . >/dev/null
	$(PYTHON) -m venv $(PKGTEST)
	$(PKGTEST)/bin/python -m pip install --quiet -c constraints.txt dist/*.whl
	cd /tmp && $(CURDIR)/$(PKGTEST)/bin/nmt --version && \
	  $(CURDIR)/$(PKGTEST)/bin/python -c "import nmt, nmt.cli, nmt.labs.base as lab; \
	    assert (lab.PACKAGED_CONFIGS / 'demo.yaml').is_file(), 'the labs configs are missing'; \
	    print('import nmt from', nmt.__file__)" && \
	  $(CURDIR)/$(PKGTEST)/bin/python $(CURDIR)/.ci/package_smoke.py
	@ls dist
	# As Colab installs it: pip from the repository's git URL (here the checkout's committed HEAD), with a
	# current pip (pip 23.2 refused the `name @ git+file://` form; 26.3 installs it).
	rm -rf $(PKGTEST)
	$(PYTHON) -m venv $(PKGTEST)
	$(PKGTEST)/bin/python -m pip install --quiet --upgrade pip
	$(PKGTEST)/bin/python -m pip install --quiet -c constraints.txt "nmt-attention @ git+file://$(CURDIR)"
	cd /tmp && $(CURDIR)/$(PKGTEST)/bin/nmt --version && $(CURDIR)/$(PKGTEST)/bin/python $(CURDIR)/.ci/package_smoke.py

clean-venv:
	rm -rf $(VENV)

# Set-up and everyday commands. Every target installs what it needs first;
# a second call finds the stamp file up to date and skips the install.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.examflow-installed
SLURM_STAMP := $(VENV)/.examflow-slurm-installed
# The CPU build of torch must be in place before anything can ask pip for a
# (multi-GB, CUDA) torch on its own.
TORCH ?= torch==2.13.0
# Files `make install` leaves to be compiled when imported: tests, and the model code of the transformers
# models examflow never loads (their configurations, which transformers reads at import, are compiled).
NOT_COMPILED := /tests?/|/transformers/models/(?!(auto|t5|mt5|bert)/)[^/]+/(modeling|modular|image_processing|video_processing|convert)_
export PATH := $(abspath $(BIN)):$(PATH)
# These Snakemake runs are local: the SLURM plug-in, once installed, asks scontrol at every start, which
# retries for 9 s where a slurm.conf names a controller that is down (docs/cluster.md).
LOCAL := SLURM_CONF=/dev/null

.PHONY: install install-slurm demo test test-fast test-slurm lint clean clean-cache

install: $(STAMP)

$(BIN)/python:
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --no-compile $(TORCH)
	$(BIN)/python -m pip install --quiet --no-compile -e '.[test]'
	# The installed modules' bytecode, on every core: pip compiles on one, a minute and a half more on CI's
	# two. A few third-party files are templates, not Python: their errors are ignored, as pip ignores them.
	# Not the packages' own tests, nor the models transformers holds but examflow does not load (a fifth
	# of the files, 63 s → 45 s on CI's two cores): a module without bytecode still imports, compiled then.
	$(BIN)/python -m compileall -qq -j 0 -x '$(NOT_COMPILED)' $(VENV)/lib >/dev/null || true
	$(BIN)/python -m compileall -q src  # every job imports examflow: compile it once, not in each
	touch $@

# With no --configfile the workflow reads config/config.yaml: the demo, into results/demo/.
demo: install
	$(LOCAL) $(BIN)/snakemake --cores all
	$(LOCAL) $(BIN)/snakemake --report results/demo/report.html
	@echo
	@echo "examflow demo finished."
	@echo "  The report (open it in a browser): $(CURDIR)/results/demo/report.html"
	@echo "  What happened, in words:           results/demo/summary.md"
	@echo "  Leaderboards and correlations:     results/demo/eval/cosine/, NRP: results/demo/nrp/"

# Tests run in TEST_WORKERS processes (pytest-xdist; 0: in this one). Two keep CI's two cores busy:
# a Snakemake test spends much of its time waiting for its jobs to start.
TEST_WORKERS ?= 2

# The slowest tests are listed at the end: CI has 30 minutes on 2 cores.
test: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not slurm" --durations=25

# The inner loop: no Snakemake run, no large inputs, no SLURM.
test-fast: install
	$(BIN)/python -m pytest -n $(TEST_WORKERS) -m "not workflow and not slow and not slurm"

# The demo on a real one-node SLURM cluster (as root: installs and starts slurmctld, slurmd, munged).
test-slurm: install-slurm
	$(BIN)/python -m pytest -m slurm -p no:cacheprovider

# The SLURM executor plugin, apart: .ci/run installs it before the tests start (pip must not rewrite the
# package while another test session imports it).
install-slurm: $(SLURM_STAMP)

$(SLURM_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[slurm]'
	touch $@

lint: install
	$(LOCAL) $(BIN)/snakemake --lint
	$(LOCAL) $(BIN)/snakemake --lint --configfile .test/config_nrp_only/config.yaml  # rules defined without EXAM
	$(BIN)/snakefmt --check workflow
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

# Everything under results/ but the grade and LLM cache, which costs model calls to rebuild.
clean:
	find results -mindepth 1 -maxdepth 1 ! -name cache -exec rm -rf {} + 2>/dev/null || true
	rm -rf .snakemake

clean-cache:
	rm -rf results/cache

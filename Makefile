# Set-up and everyday commands. Every target installs what it needs first;
# a second call finds the stamp file up to date and skips the install.
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.examflow-installed
# The CPU build of torch must be in place before anything can ask pip for a
# (multi-GB, CUDA) torch on its own.
TORCH ?= torch==2.13.0
export PATH := $(abspath $(BIN)):$(PATH)

.PHONY: install demo test lint clean

install: $(STAMP)

$(BIN)/python:
	python3 -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

demo: install
	$(BIN)/snakemake --cores all
	@echo
	@echo "examflow demo finished. Leaderboards and their correlation with the official one:"
	@echo "  results/eval/cosine/leaderboard.tsv, results/eval/cosine/correlation.tsv"
	@echo "All outputs are under $(CURDIR)/results/"

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/snakemake --lint
	$(BIN)/snakefmt --check Snakefile workflow/rules
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

clean:
	rm -rf results .snakemake

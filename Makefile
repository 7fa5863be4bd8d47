# pace-cert — every target creates/uses the project venv in .venv
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-slow lint schema bench-quick bench-full bench-real bench-real-all bench-frontier clean

$(STAMP): pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# setuptools says "Editable installation" for the cli/ -> pace_cert.cli mapping: information only
	PYTHONWARNINGS="ignore:Editable installation" $(BIN)/python -m pip install -q -e ".[dev,boosters,ray]"
	touch $(STAMP)

## demo: install, train a random forest on a bundled dataset, compress, verify
demo: $(STAMP)
	$(BIN)/pace-cert demo --out demo-out

## test: install and run the default test suite (slow tests excluded)
test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 --dist worksteal tests

## test-slow: the long-running tests only
test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m slow tests

lint: $(STAMP)
	$(BIN)/ruff check pace_cert cli tests benchmarks examples
	$(BIN)/ruff format --check pace_cert cli tests benchmarks examples

## schema: regenerate schemas/certificate.schema.json and schemas/frontier.schema.json
schema: $(STAMP)
	$(BIN)/python -m pace_cert.cert.certificate schemas/certificate.schema.json
	$(BIN)/python -m pace_cert.frontier.record schemas/frontier.schema.json

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.harness quick

bench-full: $(STAMP)
	$(BIN)/python -m benchmarks.harness full

## bench-real: the realistic-model suite (raw features), eta = delta = 0.1, 300 s a model,
## two runs at once with one thread each (about 45 min on 2 cores)
bench-real: $(STAMP)
	$(BIN)/python -m benchmarks.realistic --regions eta-delta --time-limit 300 --jobs 2 --threads 1 --fresh

## bench-real-all: the same in all three regions (global, eta = delta = 0.1, delta alone)
bench-real-all: $(STAMP)
	$(BIN)/python -m benchmarks.realistic --name real-all --time-limit 300 --jobs 2 --threads 1 --fresh

## bench-frontier: the default frontier ladder on every realistic-suite model, 600 s a
## model (the whole ladder), each rung verified (about 3 h on 2 cores)
bench-frontier: $(STAMP)
	$(BIN)/python -m benchmarks.frontier --time-limit 600

clean:
	rm -rf demo-out .pytest_cache

# The two commands of the README: `sudo make run` and `sudo make test`.
# Both set up what is missing first (scripts/setup.sh is idempotent).
VENV := .venv
BIN := $(VENV)/bin
OUT ?= results
TARGET ?= builtin
PYTEST_ARGS ?=

.PHONY: setup run test bench clean

setup:
	@bash scripts/setup.sh

run: setup
	$(BIN)/aifabric topo show topologies/quickstart.yaml
	@mkdir -p $(OUT)
	$(BIN)/aifabric topo draw topologies/quickstart.yaml -o $(OUT)/quickstart-topology.png

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python benchmarks/p4_executor.py

clean:
	-$(BIN)/aifabric clean

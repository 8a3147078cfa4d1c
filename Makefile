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

# The main job: describe and draw the quickstart fabric, then bring it up
# on TARGET (builtin or bmv2), program it and check every GPU pair.
run: setup
	$(BIN)/aifabric topo show topologies/quickstart.yaml
	@mkdir -p $(OUT)
	$(BIN)/aifabric topo draw topologies/quickstart.yaml -o $(OUT)/quickstart-topology.png
	$(BIN)/aifabric up topologies/quickstart.yaml --target $(TARGET) --check

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python benchmarks/p4_executor.py
	$(BIN)/python benchmarks/switch_pps.py --target $(TARGET) --seconds 5
	$(BIN)/python benchmarks/fabric_up.py

clean:
	-$(BIN)/aifabric clean

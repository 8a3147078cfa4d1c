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

# The main job: describe and draw the quickstart fabric, then run the
# quickstart scenario on TARGET (builtin or bmv2): bring the fabric up,
# program it, drive RoCEv2 flows, print the summary, write results.
run: setup
	$(BIN)/aifabric topo show topologies/quickstart.yaml
	@mkdir -p $(OUT)
	$(BIN)/aifabric topo draw topologies/quickstart.yaml -o $(OUT)/quickstart-topology.png
	$(BIN)/aifabric run scenarios/quickstart.yaml --target $(TARGET) --out $(OUT)/quickstart

test: setup
	$(BIN)/python -m pytest $(PYTEST_ARGS)

bench: setup
	$(BIN)/python benchmarks/p4_executor.py
	$(BIN)/python benchmarks/switch_pps.py --target $(TARGET) --seconds 5
	$(BIN)/python benchmarks/fabric_up.py
	$(BIN)/python benchmarks/sim_speed.py
	$(BIN)/python benchmarks/agent_pps.py

clean:
	-$(BIN)/aifabric clean

# Two commands for a fresh machine; both create .venv and install the pinned dependencies.
PYTHON ?= python3

.PHONY: run test setup

run:    ## set up, then analyze the bundled example on this machine and print the report
	$(PYTHON) scripts/dev.py run

test:   ## set up, then ruff, mypy and the test suite
	$(PYTHON) scripts/dev.py test

setup:
	$(PYTHON) scripts/dev.py setup

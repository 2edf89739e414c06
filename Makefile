# `make demo` and `make test` set up .venv on first use (nothing else needs to be installed).
# `make demo` installs the tool alone (.venv/.installed); `make test` adds the test extra (.venv/.installed-test:
# the hdf5-filters, mpi and plots extras, pytest, xarray, dask, netCDF4, torch, ... for the suites), which is four
# times the size (README, "Quick start").
VENV ?= .venv
PY := $(VENV)/bin/python

# --no-compile: Python writes the .pyc of the modules a run imports, not of every installed file (pip's
# byte-compiling of all of them is 50 MB and about half the install time: README, "Quick start").
# editable_mode=compat: the checkout is a path in a .pth file, as an installed copy's packages are found; the
# default mode's import hook costs every interpreter start about 12 ms (pathlib, re, importlib.util), which the
# start-up figures of docs/tracing-overhead.md would otherwise count and no installed copy pays
EDITABLE := --config-settings editable_mode=compat
$(VENV)/.installed: setup.cfg pyproject.toml
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q --no-compile $(EDITABLE) -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q $(EDITABLE) -e '.[test]'
	touch $@

.PHONY: demo test
demo: $(VENV)/.installed
	$(VENV)/bin/ioadvisor demo

# h5py's and zarr's own suites must give the same outcomes with tracing on every test; then ours (pytest closes the run)
test: $(VENV)/.installed-test
	$(PY) tests/h5py_suite/compare.py
	$(PY) tests/zarr_suite/compare.py
	$(PY) -m pytest

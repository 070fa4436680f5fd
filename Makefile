# fuser: the two commands are `make demo` and `make test`; both set up .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
WHEELS ?= .whl

.PHONY: demo test lint typecheck pytest lit wheel-check wheelhouse clean

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	touch $@

demo: $(STAMP)
	$(BIN)/fuser-opt examples/layer_norm.mlir
	$(BIN)/python examples/layer_norm.py
	$(BIN)/fuser-run examples/layer_norm.mlir --shapes 4096x1024,1024,1024

test: lint typecheck pytest lit wheel-check

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# pyright, as [tool.pyright] in pyproject.toml sets it; .ci/typecheck-paths first lays out the
# package `fuser` as links (its subpackages are other top-level folders), for pyright to import.
typecheck: $(STAMP)
	$(BIN)/python .ci/typecheck-paths
	$(BIN)/pyright

pytest: $(STAMP)
	$(BIN)/pytest -q

lit: $(STAMP)
	PATH=$(CURDIR)/$(BIN):$$PATH $(BIN)/lit -q lit_tests

# The built wheel in a fresh venv, run from outside the source tree (see .ci/wheel-check).
wheel-check: $(STAMP)
	.ci/wheel-check $(PYTHON)

# Every dependency as a wheel for an offline GPU node (Python 3.12, x86-64), plus fuser itself.
# WHEEL_REQS narrows it, e.g. WHEEL_REQS="xdsl==0.74.0 cuda-toolkit[nvrtc,cudart,crt]==13.5.0" for a
# node that has the other CUDA packages already.
WHEEL_REQS ?= .
wheelhouse:
	$(PYTHON) -m pip download -q --only-binary=:all: --python-version 3.12 \
	  --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
	  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d $(WHEELS) $(WHEEL_REQS)
	if [ "$(WHEEL_REQS)" = "." ]; then $(PYTHON) -m pip wheel -q --no-deps -w $(WHEELS) .; fi

clean:
	rm -rf $(VENV) build .typecheck *.egg-info lit_tests/**/Output

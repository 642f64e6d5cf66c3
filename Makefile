# Quick start on a fresh Debian machine:  make demo   |   make test
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: demo test test-gl test-dawn test-adapters demo-dawn conformance soak adapter install bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# Make sure a WebGPU adapter exists (installs lavapipe on Debian when none is found).
adapter: $(STAMP)
	@$(PY) tools/ensure_adapter.py

demo: adapter
	$(PY) -m gputensor

# The whole suite runs as two pytest processes over the two halves of tests/test_*.py: every
# process keeps the kernels it compiled (on lavapipe about 1.4 MB each, thousands in the suite),
# so one process for everything peaks near 9 GB. The two run side by side (tools/parallel_runs.py:
# one process keeps about one core busy; PARALLEL_JOBS=1 runs them one after the other), each
# one's output printed whole when both have ended. PYTEST_ARGS: one run with those arguments.
TEST_FILES := $(sort $(wildcard tests/test_*.py))
TEST_HALF := $(shell echo $$(( $(words $(TEST_FILES)) / 2 )))
TEST_FIRST := $(wordlist 1,$(TEST_HALF),$(TEST_FILES))
TEST_SECOND := $(wordlist $(shell echo $$(( $(TEST_HALF) + 1 ))),$(words $(TEST_FILES)),$(TEST_FILES))
test: adapter
ifeq ($(strip $(PYTEST_ARGS)),)
	$(PY) tools/parallel_runs.py "$(PY) -m pytest -q $(TEST_FIRST)" "$(PY) -m pytest -q $(TEST_SECOND)"
else
	$(PY) -m pytest -q $(PYTEST_ARGS)
endif

# The official Array API test suite (../shared/array-api-tests, or ARRAY_API_TESTS_DIR) with the
# xfails of array-api-tests-xfails.txt: CONFORMANCE_EXAMPLES hypothesis examples per test in CI,
# the suite's 20 with FULL=1; no hypothesis deadline (first calls compile their kernels, and a
# shared CPU adapter is slow: timing is no part of conformance); CONFORMANCE_ARGS: more pytest
# arguments.
CONFORMANCE_EXAMPLES ?= $(if $(FULL),20,10)
CONFORMANCE_ARGS ?=
conformance: adapter
	$(PY) tools/conformance.py --max-examples $(CONFORMANCE_EXAMPLES) -- --disable-deadline $(CONFORMANCE_ARGS)

# The other two configurations: llvmpipe through OpenGL (no shader-f64, shader-int64, subgroups;
# 16 storage buffers) and Dawn (wgpudawn, Tint) on the lavapipe of Mesa 25 (no shader-f64,
# shader-int64), set up in .dawn by tools/dawn_lavapipe.sh. By default a bounded run:
# ADAPTER_TESTS (every kernel compiled on the implementation, then the op families whose
# tests are fast; linalg and fft are reached by the kernel tour) with the ci-short hypothesis
# profile (CI's); FULL=1: the whole suite (two processes, as make test); PYTEST_ARGS: one run
# with those arguments.
ADAPTER_TESTS ?= tests/test_kernel_sources.py tests/test_implementation.py tests/test_bindings.py \
	tests/test_devices.py tests/test_dtypes.py tests/test_creation.py tests/test_elementwise.py \
	tests/test_statistical.py tests/test_sorting.py tests/test_searching.py tests/test_sets.py \
	tests/test_indexing.py tests/test_manipulation.py tests/test_nn.py tests/test_fusion.py \
	tests/test_user_kernels.py tests/test_threads.py tests/test_faults.py tests/test_int64_emulation.py
# CI's bounded Dawn run: the kernel tour (every kernel source compiled by Tint and run) over one
# dtype of each storage kind (DAWN_TOUR_DTYPES: Tint and Mesa 25's lavapipe take about 20 s per
# tour case, against 2-7 s on naga, so the tour of every dtype alone took over 30 minutes of CI),
# the implementation's and bindings' tests and the round trip's. The op families' values are
# checked on wgpu-native (make test) and OpenGL (make test-gl); FULL=1 runs the whole suite here.
DAWN_TESTS ?= tests/test_kernel_sources.py tests/test_implementation.py tests/test_bindings.py \
	tests/test_devices.py tests/test_dtypes.py tests/test_roundtrip.py
DAWN_TOUR_LIST := float32,float16,int64,uint8,complex64
DAWN_TOUR_DTYPES ?= $(if $(FULL),,$(DAWN_TOUR_LIST))
define adapter_suite
	$(if $(strip $(PYTEST_ARGS)),$(1) $(PY) -m pytest -q $(PYTEST_ARGS),$(if $(FULL),\
	$(1) $(PY) tools/parallel_runs.py "$(PY) -m pytest -q $(TEST_FIRST)" "$(PY) -m pytest -q $(TEST_SECOND)",\
	$(1) HYPOTHESIS_PROFILE=ci-short $(PY) -m pytest -q $(or $(2),$(ADAPTER_TESTS))))
endef

test-gl: $(STAMP)
	@$(PY) tools/ensure_adapter.py --gl
	$(call adapter_suite,GPUTENSOR_ADAPTER=gl)

.dawn/env.sh: tools/dawn_lavapipe.sh | $(STAMP)
	PYTHON=$(PY) tools/dawn_lavapipe.sh .dawn

test-dawn: .dawn/env.sh
	. .dawn/env.sh && $(call adapter_suite,GPUTENSOR_TOUR_DTYPES=$(DAWN_TOUR_DTYPES),$(DAWN_TESTS))

# The OpenGL and Dawn runs side by side (CI's last step), each one's output printed whole.
test-adapters: .dawn/env.sh
	$(PY) tools/parallel_runs.py "$(MAKE) --no-print-directory test-gl" "$(MAKE) --no-print-directory test-dawn"

# The demo on Dawn.
demo-dawn: .dawn/env.sh
	. .dawn/env.sh && $(PY) -m gputensor

# The soak test for longer: threads x seconds of checked mixed operations (make soak SOAK_SECONDS=1800).
SOAK_SECONDS ?= 300
soak: adapter
	SOAK_SECONDS=$(SOAK_SECONDS) $(PY) -m pytest -q -s -p no:cacheprovider tests/test_soak.py

bench: adapter
	$(PY) -m benchmarks

clean:
	rm -rf $(VENV) .dawn .logs build *.egg-info

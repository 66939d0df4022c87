# freshet — the README's commands. CMake does the building; this file only
# names the steps so that one command sets up and runs, and one tests.
#
#   make run      set up, build (release) and run freshet on the live Wikimedia stream
#   make demo     the same pipeline against the built-in synthetic feed (offline)
#   make test     set up (incl. test tools), build with ASan+UBSan, run every test
#   make bench    build release and run the benchmarks in bench/
#   make bench-peers  the issue-7 comparison with DuckDB and Polars, live freshness, soak, plots
#   make install  PREFIX=/usr/local (default) or DESTDIR=... for packaging
PREFIX ?= /usr/local
DATA ?= ./freshet-data
JOBS ?= $(shell nproc)

.PHONY: setup setup-test build release test test-unit chaos-long demo run bench bench-peers install clean

setup:
	bash scripts/setup.sh

setup-test:
	bash scripts/setup.sh --test

build: setup
	cmake --preset dev >/dev/null
	cmake --build build/dev -j $(JOBS)

release: setup
	cmake --preset release >/dev/null
	cmake --build build/release -j $(JOBS)

test: setup-test
	cmake --preset asan-ubsan >/dev/null
	cmake --build build/asan-ubsan -j $(JOBS)
	ctest --preset asan-ubsan

test-unit: setup-test
	cmake --preset asan-ubsan >/dev/null
	cmake --build build/asan-ubsan -j $(JOBS)
	ctest --preset asan-ubsan -L unit

# The long chaos run: 220 SIGKILLs of the processor over 60,000 events.
chaos-long: release setup-test
	FR_BINARY=$(CURDIR)/build/release/freshet FR_SOURCE_DIR=$(CURDIR) \
	  bash tests/integration/process_chaos.sh 11 220 60000

demo: release
	./build/release/freshet --data $(DATA) demo

run: release
	./build/release/freshet --data $(DATA) up

bench: release
	bash bench/run.sh

bench-peers: release
	bash bench/peers.sh

install: release
	cmake --install build/release --prefix $(PREFIX)

clean:
	rm -rf build

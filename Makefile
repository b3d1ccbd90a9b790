# SPDX-License-Identifier: MIT
# Convenience front-end to CMake presets. `make run` and `make test` install what they need
# (apt-get as root) and build from nothing; plain `make` builds the CLI at build/execbox.
.PHONY: all deps build asan release run test test-dev test-asan test-image test-vm test-vm-quick test-vm-rest install bench format lint clean soak

all: build

deps:
	@scripts/install-deps.sh

build: deps
	@cmake --preset dev >/dev/null
	@cmake --build --preset dev

asan: deps
	@cmake --preset asan >/dev/null
	@cmake --build --preset asan

release: deps
	@cmake --preset release >/dev/null
	@cmake --build --preset release

run: build
	./build/execbox run examples/churn.py

test-dev: build
	ctest --preset dev -j2 -LE 'image|vm'

# The VM lane (docs/vm-lane.md): execbox inside qemu on Debian's 6.1 and 6.12 kernels with pure
# cgroup v2, every layout (root, service, scope, container, under systemd). test-vm-quick is the
# subset `make test` runs (about 12 min); test-vm all of it.
test-vm-quick: build
	@tests/vm/setup.sh >/dev/null || true
	ctest --preset dev -L vm-quick

test-vm: build
	@tests/vm/setup.sh >/dev/null || true
	ctest --preset dev -L vm

# What test-vm runs beyond test-vm-quick: CI runs it after `make test`, so that the whole lane
# runs there without booting the quick subset twice.
test-vm-rest: build
	@tests/vm/setup.sh >/dev/null || true
	ctest --preset dev -L vm -LE vm-quick

test-asan: asan
	ctest --preset asan -j2 -LE image

# The container image (deploy/Containerfile) built with podman and checked inside: once, from
# source, whatever the preset (a first build on a machine takes minutes, later ones reuse
# podman's layer cache).
test-image: build
	ctest --preset dev -L image --output-on-failure

test: lint test-dev test-vm-quick test-asan test-image

lint: deps
	@scripts/lint.sh

install: build
	cmake --install build

bench: release
	bench/run.sh

# Reliability figures (root): kill -9 of run, serve and mcp --pool 2, and what is left after.
soak: build
	tests/soak/kill9.py --rounds 5 --execbox build/execbox

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf build build-asan build-release

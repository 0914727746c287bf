# FOLL_PIN completion series for Debian's linux-source-6.1 (and 6.12): the map.
#
#   make qemu-test            build the patched kernel, run the suite in QEMU
#   make qemu-test SERIES=none   the same on Debian's unpatched tree (A/B)
#   make qemu-test BASE=6.12  the same on linux-source-6.12 (series-6.12)
#   make qemu-test TESTS="gup_test dio_fork" EXTRA=dir DEBUG=1
#   make shell                boot the same kernel to an interactive shell
#   make check                the project's tests (see scripts/check.sh)
#   make check-bisect         build every step of the series
#   make bench                fio IOPS, stock vs patched (ROUNDS=3)
#   make profile              kernel instructions per I/O by function, both
#   make clean / distclean
#
# Knobs are passed to the scripts through the environment.
SHELL := /bin/bash
export BASE SERIES TESTS EXTRA DEBUG O2 LINUX_SRC TIMEOUT ACCEL

S := scripts

.PHONY: all deps prepare kernel initramfs qemu-test shell check \
	check-bisect bench profile clean distclean help

all: qemu-test

help:
	@sed -n '2,16s/^# \{0,1\}//p' Makefile

deps:
	@$(S)/install-deps.sh

prepare: deps
	@$(S)/prepare-tree.sh

kernel: prepare
	@$(S)/build-kernel.sh

initramfs: kernel
	@$(S)/build-initramfs.sh

qemu-test: deps
	@$(S)/qemu-test.sh

shell: initramfs
	@MODE=shell RESULTS=build/results/shell $(S)/run-qemu.sh

check: deps
	@$(S)/check.sh

check-bisect: deps
	@$(S)/check-bisect.sh

bench: deps
	@EXTRA_PKGS=fio $(S)/install-deps.sh
	@$(S)/bench.sh

profile: deps
	@EXTRA_PKGS=fio $(S)/install-deps.sh
	@$(S)/profile.sh

clean:
	rm -rf build/obj-* build/tree-*/obj* build/results \
		build/6.12/tree-*/obj* build/6.12/results

distclean:
	rm -rf build

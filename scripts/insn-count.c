// SPDX-License-Identifier: GPL-2.0
/*
 * insn-count: a QEMU TCG plugin for make profile. It counts the guest
 * instructions executed in the kernel's text, per translation block, and
 * at exit writes "address count" lines (address of the block's first
 * instruction, ascending) to the file named by its out= argument.
 * scripts/profile.sh folds them into functions with the vmlinux symbols.
 *
 * Every other instruction (user space, modules) goes into one sum,
 * written the same way to the file named out=FILE.other.
 *
 * Only the instructions between the last two executions of mark=ADDRESS
 * (a kernel function's entry) are written: the guest calls it just before
 * and just after the work to be measured, so the boot is left out.
 *
 * A translation block ends at every branch and call, so all of its
 * instructions belong to the function its first one is in. The counters
 * are plain adds; make profile runs with -icount, which keeps one vCPU
 * thread, so none is lost.
 *
 * It declares the calls it uses of QEMU's plugin API (version 1, as in
 * Debian 12's QEMU 7.2) itself, so that building it needs no QEMU source:
 * qemu-plugin.h is in no Debian binary package.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef uint64_t qemu_plugin_id_t;
struct qemu_plugin_tb;
struct qemu_info_t;

void qemu_plugin_register_vcpu_tb_trans_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, struct qemu_plugin_tb *tb));
void qemu_plugin_register_vcpu_tb_exec_inline(struct qemu_plugin_tb *tb,
		int op, void *ptr, uint64_t imm);
void qemu_plugin_register_vcpu_tb_exec_cb(struct qemu_plugin_tb *tb,
		void (*cb)(unsigned int vcpu, void *data), int flags,
		void *data);
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, void *data), void *data);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))
#define INLINE_ADD_U64 0
#define CB_NO_REGS 0

EXPORT int qemu_plugin_version = 1;

/* The harness's x86_64 kernels are not relocatable: text starts here. */
#define TEXT_START 0xffffffff81000000ULL
#define TEXT_SPAN (64ULL << 20)

/* counts[] per text byte (sparse); touched[] lists the bytes in use. */
#define MAX_TOUCHED (TEXT_SPAN / 4)
static uint64_t *counts, *at_prev, *at_last;
static uint64_t other, other_prev, other_last;
static uint32_t *touched;
static uint8_t *seen;
static size_t n_touched;
static uint64_t mark;
static unsigned int marks_seen;
static const char *out_path;

/* At the mark: the window so far ends, a new one starts. */
static void at_mark(unsigned int vcpu, void *data)
{
	uint64_t *t = at_prev;

	(void)vcpu;
	(void)data;
	at_prev = at_last;
	at_last = t;
	for (size_t k = 0; k < n_touched; k++)
		at_last[touched[k]] = counts[touched[k]];
	other_prev = other_last;
	other_last = other;
	marks_seen++;
}

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);
	uint64_t i = va - TEXT_START;

	(void)id;
	if (va < TEXT_START || i >= TEXT_SPAN) {
		qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64,
				&other, qemu_plugin_tb_n_insns(tb));
		return;
	}
	/* A block is translated again after a flush: list it once. */
	if (!(seen[i / 8] & (1 << (i % 8))) && n_touched < MAX_TOUCHED) {
		seen[i / 8] |= 1 << (i % 8);
		touched[n_touched++] = i;
	}
	if (va == mark)
		qemu_plugin_register_vcpu_tb_exec_cb(tb, at_mark, CB_NO_REGS,
						     NULL);
	qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64,
			&counts[i], qemu_plugin_tb_n_insns(tb));
}

static void finished(qemu_plugin_id_t id, void *data)
{
	FILE *f = fopen(out_path, "w");
	char other_path[4096];
	uint64_t i, n;

	(void)id;
	(void)data;
	if (!f) {
		perror(out_path);
		return;
	}
	/* profile.sh fails the run on any "insn-count:" line. */
	if (marks_seen < 2)
		fprintf(stderr, "insn-count: the mark ran %u times, not twice\n",
			marks_seen);
	if (n_touched == MAX_TOUCHED)
		fprintf(stderr, "insn-count: more blocks than %llu, counts incomplete\n",
			(unsigned long long)MAX_TOUCHED);
	for (i = 0; i < TEXT_SPAN; i++) {
		n = at_last[i] - at_prev[i];
		if (n)
			fprintf(f, "%016llx %llu\n",
				(unsigned long long)(TEXT_START + i),
				(unsigned long long)n);
	}
	if (fclose(f))
		perror(out_path);
	snprintf(other_path, sizeof(other_path), "%s.other", out_path);
	f = fopen(other_path, "w");
	if (!f) {
		perror(other_path);
		return;
	}
	fprintf(f, "%llu\n", (unsigned long long)(other_last - other_prev));
	if (fclose(f))
		perror(other_path);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
			       const struct qemu_info_t *info, int argc,
			       char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
		else if (!strncmp(argv[i], "mark=", 5))
			mark = strtoull(argv[i] + 5, NULL, 16);
	}
	if (!out_path || !mark) {
		fprintf(stderr, "insn-count: needs out=FILE and mark=ADDRESS\n");
		return -1;
	}
	counts = calloc(TEXT_SPAN, sizeof(*counts));
	at_prev = calloc(TEXT_SPAN, sizeof(*at_prev));
	at_last = calloc(TEXT_SPAN, sizeof(*at_last));
	touched = calloc(MAX_TOUCHED, sizeof(*touched));
	seen = calloc(TEXT_SPAN / 8, 1);
	if (!counts || !at_prev || !at_last || !touched || !seen)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, finished, NULL);
	return 0;
}

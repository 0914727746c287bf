// SPDX-License-Identifier: GPL-2.0
/*
 * insn-count: a QEMU TCG plugin for make profile. It counts the guest
 * instructions executed in the kernel's text, per translation block,
 * and at exit writes "address count" lines (address of the block's first
 * instruction, ascending) to the file named by its out= argument.
 * scripts/profile.sh folds them into functions with the vmlinux symbols.
 *
 * A translation block ends at every branch and call, so all of its
 * instructions belong to the function its first one is in. The counters
 * are plain adds: with two vCPUs under MTTCG a few increments may be lost,
 * make profile runs with -icount, which keeps one vCPU thread.
 *
 * It declares the four calls it uses of QEMU's plugin API (version 1, as
 * in Debian 12's QEMU 7.2) itself, so that building it needs no QEMU
 * source: qemu-plugin.h is not in any Debian binary package.
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
void qemu_plugin_register_atexit_cb(qemu_plugin_id_t id,
		void (*cb)(qemu_plugin_id_t id, void *data), void *data);
size_t qemu_plugin_tb_n_insns(const struct qemu_plugin_tb *tb);
uint64_t qemu_plugin_tb_vaddr(const struct qemu_plugin_tb *tb);

#define EXPORT __attribute__((visibility("default")))
#define INLINE_ADD_U64 0

EXPORT int qemu_plugin_version = 1;

/* x86_64 kernel text starts here without KASLR (the harness boots nokaslr). */
#define TEXT_START 0xffffffff81000000ULL
#define TEXT_SPAN (64ULL << 20)

static uint64_t *counts;
static const char *out_path;

static void translated(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	uint64_t va = qemu_plugin_tb_vaddr(tb);

	if (va < TEXT_START || va - TEXT_START >= TEXT_SPAN)
		return;
	qemu_plugin_register_vcpu_tb_exec_inline(tb, INLINE_ADD_U64,
			&counts[va - TEXT_START], qemu_plugin_tb_n_insns(tb));
}

static void finished(qemu_plugin_id_t id, void *data)
{
	FILE *f = fopen(out_path, "w");
	uint64_t i;

	if (!f) {
		perror(out_path);
		return;
	}
	for (i = 0; i < TEXT_SPAN; i++)
		if (counts[i])
			fprintf(f, "%016" PRIx64 " %" PRIu64 "\n",
				TEXT_START + i, counts[i]);
	if (fclose(f))
		perror(out_path);
}

EXPORT int qemu_plugin_install(qemu_plugin_id_t id,
			       const struct qemu_info_t *info, int argc,
			       char **argv)
{
	for (int i = 0; i < argc; i++)
		if (!strncmp(argv[i], "out=", 4))
			out_path = argv[i] + 4;
	if (!out_path) {
		fprintf(stderr, "insn-count: no out=FILE argument\n");
		return -1;
	}
	/* One counter per text byte: sparse, only touched pages are backed. */
	counts = calloc(TEXT_SPAN, sizeof(*counts));
	if (!counts)
		return -1;
	qemu_plugin_register_vcpu_tb_trans_cb(id, translated);
	qemu_plugin_register_atexit_cb(id, finished, NULL);
	return 0;
}

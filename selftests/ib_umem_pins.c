// SPDX-License-Identifier: GPL-2.0
/*
 * ib_umem_pins: memory registration of an RDMA device pins the user pages
 * (ib_umem_get(): pin_user_pages_fast() with FOLL_LONGTERM, Case 2 of
 * pin_user_pages.rst) and deregistration releases every pin
 * (ib_umem_release()). Debian's 6.1 already does this; the test guards it.
 *
 * The device is soft-RoCE: "rdma link add rxe0 type rxe netdev lo"
 * (iproute2's rdma, copied into the guest). The verbs are issued through
 * the uverbs write() ABI of include/uapi/rdma/ib_user_verbs.h (no
 * rdma-core in the guest): GET_CONTEXT, ALLOC_PD, REG_MR, DEREG_MR. A
 * registration needs no queue pair or GID, so loopback is enough.
 */
#include <rdma/ib_user_verbs.h>
#include "dio_common.h"
#include "kselftest.h"

#define UVERBS		"/dev/infiniband/uverbs0"
#define NPAGES		16
#define ACCESS_LOCAL_WRITE	1	/* IB_ACCESS_LOCAL_WRITE */

static long page_size;

/* One uverbs command: header, @cmd (@len bytes), response of @rlen bytes. */
static int uverbs(int fd, __u32 command, void *cmd, size_t len, size_t rlen)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		unsigned char body[64];
	} msg;
	size_t total = sizeof(msg.hdr) + len;

	msg.hdr.command = command;
	msg.hdr.in_words = total / 4;
	msg.hdr.out_words = rlen / 4;
	memcpy(msg.body, cmd, len);
	return write(fd, &msg, total) == (ssize_t)total ? 0 : -errno;
}

static int reg_mr(int fd, __u32 pd, void *addr, size_t len, __u32 access,
		  __u32 *mr)
{
	struct ib_uverbs_reg_mr_resp resp = { 0 };
	struct ib_uverbs_reg_mr cmd = { 0 };
	int ret;

	cmd.response = (unsigned long)&resp;
	cmd.start = (unsigned long)addr;
	cmd.length = len;
	cmd.hca_va = (unsigned long)addr;
	cmd.pd_handle = pd;
	cmd.access_flags = access;
	ret = uverbs(fd, IB_USER_VERBS_CMD_REG_MR, &cmd, sizeof(cmd),
		     sizeof(resp));
	*mr = resp.mr_handle;
	return ret;
}

static int dereg_mr(int fd, __u32 mr)
{
	struct ib_uverbs_dereg_mr cmd = { .mr_handle = mr };

	return uverbs(fd, IB_USER_VERBS_CMD_DEREG_MR, &cmd, sizeof(cmd), 0);
}

/* Open the rxe device and give the fd a context and a protection domain. */
static int setup(__u32 *pd)
{
	struct ib_uverbs_get_context_resp cresp = { 0 };
	struct ib_uverbs_alloc_pd_resp presp = { 0 };
	struct ib_uverbs_get_context ctx = { 0 };
	struct ib_uverbs_alloc_pd apd = { 0 };
	int fd, ret;

	if (access(UVERBS, F_OK) &&
	    system("rdma link add rxe0 type rxe netdev lo"))
		ksft_exit_fail_msg("rdma link add rxe0 type rxe netdev lo failed (CONFIG_RDMA_RXE, iproute2's rdma)\n");
	fd = open(UVERBS, O_RDWR);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", UVERBS, strerror(errno));
	ctx.response = (unsigned long)&cresp;
	ret = uverbs(fd, IB_USER_VERBS_CMD_GET_CONTEXT, &ctx, sizeof(ctx),
		     sizeof(cresp));
	if (ret)
		ksft_exit_fail_msg("GET_CONTEXT: %s\n", strerror(-ret));
	apd.response = (unsigned long)&presp;
	ret = uverbs(fd, IB_USER_VERBS_CMD_ALLOC_PD, &apd, sizeof(apd),
		     sizeof(presp));
	if (ret)
		ksft_exit_fail_msg("ALLOC_PD: %s\n", strerror(-ret));
	*pd = presp.pd_handle;
	return fd;
}

/* Register @npages at @off bytes into a fresh buffer; check the pins. */
static void test_reg(int fd, __u32 pd, long off, const char *name)
{
	long len = NPAGES * page_size, spanned;
	unsigned char *buf = map_pages(NPAGES + 1, PROT_READ | PROT_WRITE);
	struct pins r, d;
	int ret, dret = -1;
	__u32 mr;

	if (!buf)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(buf, 1, (NPAGES + 1) * page_size);
	spanned = (off + len + page_size - 1) / page_size;
	r = pins_now();
	ret = reg_mr(fd, pd, buf + off, len, ACCESS_LOCAL_WRITE, &mr);
	r = pins_since(r);
	d = pins_now();
	if (!ret)
		dret = dereg_mr(fd, mr);
	d = pins_since(d);
	ksft_print_msg("%s: REG_MR %d, pins acquired %ld released %ld; DEREG_MR %d, pins acquired %ld released %ld; pages spanned %ld\n",
		       name, ret, r.acq, r.rel, dret, d.acq, d.rel, spanned);
	ksft_test_result(!ret && !dret && r.acq == spanned && r.rel == 0 &&
			 d.acq == 0 && d.rel == spanned, "%s\n", name);
	munmap(buf, (NPAGES + 1) * page_size);
}

/* A registration that must fail: an errno, and no pin left behind. */
static void test_bad(int fd, __u32 pd, void *addr, long len, const char *name)
{
	struct pins p = pins_now();
	int ret;
	__u32 mr;

	ret = reg_mr(fd, pd, addr, len, ACCESS_LOCAL_WRITE, &mr);
	if (!ret)
		dereg_mr(fd, mr);
	p = pins_since(p);
	ksft_print_msg("%s: REG_MR %d (%s), pins acquired %ld released %ld\n",
		       name, ret, ret ? strerror(-ret) : "registered", p.acq,
		       p.rel);
	ksft_test_result(ret && p.acq == p.rel, "%s\n", name);
}

int main(void)
{
	unsigned char *ro, *hole;
	__u32 pd;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(5);
	fd = setup(&pd);
	test_reg(fd, pd, 0, "ib_umem_pins_reg_mr_pins_dereg_releases");
	test_reg(fd, pd, 100, "ib_umem_pins_unaligned_reg_mr_pins_spanned");
	ro = map_pages(NPAGES, PROT_READ);
	hole = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (!ro || !hole)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	test_bad(fd, pd, ro, NPAGES * page_size,
		 "ib_umem_pins_readonly_write_access_refused");
	munmap(hole + NPAGES / 2 * page_size, NPAGES / 2 * page_size);
	memset(hole, 1, NPAGES / 2 * page_size);
	test_bad(fd, pd, hole, NPAGES * page_size,
		 "ib_umem_pins_unmapped_tail_refused_released");
	test_bad(fd, pd, hole, 0, "ib_umem_pins_zero_length_refused");
	munmap(ro, NPAGES * page_size);
	munmap(hole, NPAGES / 2 * page_size);
	close(fd);
	ksft_finished();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * pin_conformance: the FOLL_PIN properties that Debian's 6.1 already has,
 * checked through every user-visible pinning interface, so that the series
 * cannot break them unnoticed:
 *
 * - process_vm_readv()/process_vm_writev() pin the remote pages with
 *   pin_user_pages_remote() (mm/process_vm_access.c): data correct, one pin
 *   per remote page spanned, all released;
 * - io_uring fixed buffers pin each page at IORING_REGISTER_BUFFERS and
 *   unpin it at IORING_UNREGISTER_BUFFERS;
 * - fork() copies a page that page_maybe_dma_pinned() reports for the
 *   child, so an IORING_OP_READ_FIXED after fork lands in the parent;
 * - the gup_test driver's pin_user_pages(), pin_user_pages_fast() and
 *   FOLL_LONGTERM pins are counted and released;
 * - a pin adds GUP_PIN_COUNTING_BIAS (1024) to a small page's refcount
 *   where a get adds 1, and is counted exactly in compound_pincount on a
 *   THP (as printed by dump_page());
 * - bad input (zero length, unmapped or partly unmapped memory, read-only
 *   memory for a write pin) gets an errno or pins nothing, and every pin
 *   taken is released; an unaligned address pins exactly the pages spanned.
 *
 * Pin counts come from nr_foll_pin_acquired/released in /proc/vmstat. The
 * shared zero page is never pinned (try_grab_folio()), so every buffer is
 * written before it is pinned.
 */
#include <sched.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "gup_common.h"
#include "kselftest.h"

#define NPAGES		64
#define THP_SIZE	(2UL << 20)
#define READ_LEN	2048

static long page_size;

/* An address range that nothing is mapped at. */
static void *hole(void)
{
	void *p = map_pages(1, PROT_READ | PROT_WRITE);

	if (p)
		munmap(p, page_size);
	return p;
}

static unsigned char pattern(long i, int seed)
{
	return (i ^ (i >> 8) ^ (i >> 16)) * 31 + seed;
}

static void fill(unsigned char *buf, long len, long from, int seed)
{
	long i;

	for (i = 0; i < len; i++)
		buf[i] = pattern(from + i, seed);
}

static int check(const unsigned char *buf, long len, long from, int seed)
{
	long i;

	for (i = 0; i < len; i++)
		if (buf[i] != pattern(from + i, seed))
			return 0;
	return 1;
}

/*
 * process_vm_readv()/writev(): a forked child owns the remote memory.
 * buf:  NPAGES + 1 pages the child fills with pattern seed 1;
 * part: NPAGES pages the child fills, then unmaps the last one of;
 * ro:   one read-only page.
 */
struct remote {
	pid_t pid;
	int cmd, ack;
	unsigned char *buf, *part, *ro;
};

static void remote_child(struct remote *r, int cmd, int ack)
{
	char c = 'r';

	fill(r->buf, (NPAGES + 1) * page_size, 0, 1);
	fill(r->part, NPAGES * page_size, 0, 3);
	munmap(r->part + (NPAGES - 1) * page_size, page_size);
	if (write(ack, &c, 1) != 1)
		_exit(1);
	/* 'c': has process_vm_writev() written pattern seed 2? */
	while (read(cmd, &c, 1) == 1) {
		c = check(r->buf, NPAGES * page_size, 0, 2) ? '1' : '0';
		if (write(ack, &c, 1) != 1)
			_exit(1);
	}
	_exit(0);
}

static int remote_start(struct remote *r)
{
	int cmd[2], ack[2];
	char c;

	r->buf = map_pages(NPAGES + 1, PROT_READ | PROT_WRITE);
	r->part = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	r->ro = map_pages(1, PROT_READ);
	if (!r->buf || !r->part || !r->ro || pipe(cmd) || pipe(ack))
		return -1;
	r->pid = fork();
	if (r->pid < 0)
		return -1;
	if (r->pid == 0) {
		close(cmd[1]);
		close(ack[0]);
		remote_child(r, cmd[0], ack[1]);
	}
	close(cmd[0]);
	close(ack[1]);
	r->cmd = cmd[1];
	r->ack = ack[0];
	return read(r->ack, &c, 1) == 1 && c == 'r' ? 0 : -1;
}

static int remote_check_written(struct remote *r)
{
	char c = 'c';

	if (write(r->cmd, &c, 1) != 1 || read(r->ack, &c, 1) != 1)
		return 0;
	return c == '1';
}

static void remote_stop(struct remote *r)
{
	close(r->cmd);
	close(r->ack);
	waitpid(r->pid, NULL, 0);
}

static ssize_t pvm(struct remote *r, int to_remote, void *local, size_t llen,
		   void *raddr, size_t rlen, struct pins *d)
{
	struct iovec liov = { local, llen }, riov = { raddr, rlen };
	struct pins p0 = pins_now();
	ssize_t n;
	int err;

	if (to_remote)
		n = process_vm_writev(r->pid, &liov, 1, &riov, 1, 0);
	else
		n = process_vm_readv(r->pid, &liov, 1, &riov, 1, 0);
	err = errno;
	*d = pins_since(p0);
	errno = err;
	return n;
}

static void test_process_vm(void)
{
	long len = NPAGES * page_size;
	unsigned char *local;
	struct remote r;
	struct pins d;
	ssize_t n;
	int ok;

	local = map_pages(NPAGES + 1, PROT_READ | PROT_WRITE);
	if (!local || remote_start(&r)) {
		ksft_exit_fail_msg("process_vm setup: %s\n", strerror(errno));
		return;
	}

	/* One pin per remote page; the local side is copied, not pinned. */
	memset(local, 0, len);
	n = pvm(&r, 0, local, len, r.buf, len, &d);
	ksft_print_msg("process_vm_readv %d pages: %zd bytes, pins acquired %ld released %ld\n",
		       NPAGES, n, d.acq, d.rel);
	ksft_test_result(n == len && check(local, len, 0, 1) &&
			 d.acq == NPAGES && d.rel == NPAGES,
			 "pin_conformance_process_vm_readv\n");

	/* 100 bytes into the first page: NPAGES + 1 pages are spanned. */
	memset(local, 0, len);
	n = pvm(&r, 0, local, len, r.buf + 100, len, &d);
	ksft_print_msg("process_vm_readv unaligned: %zd bytes, pins acquired %ld released %ld\n",
		       n, d.acq, d.rel);
	ksft_test_result(n == len && check(local, len, 100, 1) &&
			 d.acq == NPAGES + 1 && d.rel == NPAGES + 1,
			 "pin_conformance_process_vm_readv_unaligned_pins_spanned_pages\n");

	fill(local, len, 0, 2);
	n = pvm(&r, 1, local, len, r.buf, len, &d);
	ok = remote_check_written(&r);
	ksft_print_msg("process_vm_writev %d pages: %zd bytes, child sees data %d, pins acquired %ld released %ld\n",
		       NPAGES, n, ok, d.acq, d.rel);
	ksft_test_result(n == len && ok && d.acq == NPAGES && d.rel == NPAGES,
			 "pin_conformance_process_vm_writev\n");

	n = pvm(&r, 0, local, len, r.buf, 0, &d);
	ksft_test_result(n == 0 && d.acq == 0 && d.rel == 0,
			 "pin_conformance_process_vm_readv_zero_len_pins_nothing\n");

	/* The last page of part is unmapped in the child only. */
	n = pvm(&r, 0, local, page_size, r.part + len - page_size, page_size, &d);
	ksft_print_msg("process_vm_readv unmapped: %zd (%s), pins acquired %ld released %ld\n",
		       n, n < 0 ? strerror(errno) : "no error", d.acq, d.rel);
	ksft_test_result(n == -1 && errno == EFAULT && d.acq == 0 && d.rel == 0,
			 "pin_conformance_process_vm_readv_unmapped_efault\n");

	/* Pinning stops at the hole: a short read, what was pinned released. */
	memset(local, 0, len);
	n = pvm(&r, 0, local, len, r.part, len, &d);
	ksft_print_msg("process_vm_readv over an unmapped tail: %zd bytes, pins acquired %ld released %ld\n",
		       n, d.acq, d.rel);
	ksft_test_result(n == len - page_size &&
			 check(local, len - page_size, 0, 3) &&
			 d.acq == NPAGES - 1 && d.rel == NPAGES - 1,
			 "pin_conformance_process_vm_readv_unmapped_tail_short_released\n");

	n = pvm(&r, 1, local, page_size, r.ro, page_size, &d);
	ksft_print_msg("process_vm_writev to read-only memory: %zd (%s), pins acquired %ld released %ld\n",
		       n, n < 0 ? strerror(errno) : "no error", d.acq, d.rel);
	ksft_test_result(n == -1 && errno == EFAULT && d.acq == 0 && d.rel == 0,
			 "pin_conformance_process_vm_writev_readonly_efault\n");

	remote_stop(&r);
	munmap(local, (NPAGES + 1) * page_size);
}

static int uring_register(struct uring *r, void *addr, size_t len)
{
	struct iovec iov = { addr, len };

	return syscall(__NR_io_uring_register, r->fd, IORING_REGISTER_BUFFERS,
		       &iov, 1);
}

static int uring_unregister(struct uring *r)
{
	return syscall(__NR_io_uring_register, r->fd,
		       IORING_UNREGISTER_BUFFERS, NULL, 0);
}

/* IORING_OP_READ_FIXED from @fd into fixed buffer 0 at @buf. */
static long uring_read_fixed(struct uring *r, int fd, void *buf, size_t len,
			     off_t off)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_READ_FIXED;
	sqe->fd = fd;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	sqe->off = off;
	sqe->buf_index = 0;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) != 1)
		return -errno;
	return uring_wait(r);
}

/* Register [@addr, @addr + @len) as fixed buffer 0; pin deltas in @d. */
static int uring_register_counted(struct uring *r, void *addr, size_t len,
				  struct pins *d)
{
	struct pins p0 = pins_now();
	int ret, err;

	ret = uring_register(r, addr, len);
	err = errno;
	*d = pins_since(p0);
	errno = err;
	return ret;
}

static void test_io_uring_register(struct uring *r, const char *name,
				   unsigned char *buf, long len, long pages)
{
	struct pins d, u;
	int ret, uret;

	ret = uring_register_counted(r, buf, len, &d);
	ksft_print_msg("%s: register %ld bytes: %d (%s), pins acquired %ld released %ld\n",
		       name, len, ret, ret ? strerror(errno) : "ok", d.acq, d.rel);
	ksft_test_result(ret == 0 && d.acq == pages && d.rel == 0,
			 "%s_register_pins\n", name);

	{
		struct pins p0 = pins_now();

		uret = ret ? -1 : uring_unregister(r);
		u = pins_since(p0);
	}
	ksft_print_msg("%s: unregister: %d, pins acquired %ld released %ld\n",
		       name, uret, u.acq, u.rel);
	ksft_test_result(uret == 0 && u.acq == 0 && u.rel == pages,
			 "%s_unregister_releases\n", name);
}

static void test_io_uring_bad(struct uring *r, const char *name, void *addr,
			      size_t len, long pinned)
{
	struct pins d;
	int ret;

	ret = uring_register_counted(r, addr, len, &d);
	ksft_print_msg("%s: %d (%s), pins acquired %ld released %ld\n", name,
		       ret, ret ? strerror(errno) : "no error", d.acq, d.rel);
	if (!ret)
		uring_unregister(r);
	ksft_test_result(ret == -1 && errno == EFAULT && d.acq == pinned &&
			 d.rel == pinned, "%s\n", name);
}

static void test_io_uring(void)
{
	unsigned char *buf, *part, *ro;
	struct uring r;

	buf = map_pages(NPAGES + 1, PROT_READ | PROT_WRITE);
	part = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	ro = map_pages(1, PROT_READ);
	if (!buf || !part || !ro || uring_setup(&r))
		ksft_exit_fail_msg("io_uring setup: %s\n", strerror(errno));
	memset(buf, 1, (NPAGES + 1) * page_size);
	memset(part, 1, NPAGES * page_size);
	munmap(part + (NPAGES - 1) * page_size, page_size);

	test_io_uring_register(&r, "pin_conformance_io_uring_fixed_buffer",
			       buf, NPAGES * page_size, NPAGES);
	/* 100 bytes into the first page: NPAGES + 1 pages are spanned. */
	test_io_uring_register(&r, "pin_conformance_io_uring_fixed_buffer_unaligned",
			       buf + 100, NPAGES * page_size, NPAGES + 1);

	test_io_uring_bad(&r, "pin_conformance_io_uring_register_zero_len_efault",
			  buf, 0, 0);
	test_io_uring_bad(&r, "pin_conformance_io_uring_register_unmapped_efault",
			  hole(), page_size, 0);
	/* pin_user_pages() pins NPAGES - 1, io_pin_pages() unpins them. */
	test_io_uring_bad(&r, "pin_conformance_io_uring_register_unmapped_tail_efault_released",
			  part, NPAGES * page_size, NPAGES - 1);
	test_io_uring_bad(&r, "pin_conformance_io_uring_register_readonly_efault",
			  ro, page_size, 0);

	uring_destroy(&r);
	munmap(buf, (NPAGES + 1) * page_size);
	munmap(part, (NPAGES - 1) * page_size);
	munmap(ro, page_size);
}

/*
 * A fixed buffer's page is pinned, so fork() gives the child a copy and
 * the parent keeps the pinned page: the parent's write after fork does not
 * fault it away, and READ_FIXED lands in the memory the parent sees.
 */
static void test_fork_read_fixed(void)
{
	int cmd[2], ack[2], mfd, parent_ok, child_ok = 0;
	unsigned char *buf, *src;
	struct uring r;
	struct pins d;
	pid_t pid;
	long res;
	char c;

	buf = map_pages(1, PROT_READ | PROT_WRITE);
	src = map_pages(1, PROT_READ | PROT_WRITE);
	mfd = memfd_create("pin_conformance", 0);
	if (!buf || !src || mfd < 0 || uring_setup(&r) || pipe(cmd) || pipe(ack))
		ksft_exit_fail_msg("fork test setup: %s\n", strerror(errno));
	fill(src, page_size, 0, 4);
	if (pwrite(mfd, src, page_size, 0) != page_size)
		ksft_exit_fail_msg("memfd write: %s\n", strerror(errno));
	memset(buf, 0xaa, page_size);
	if (uring_register_counted(&r, buf, page_size, &d) || d.acq != 1) {
		ksft_print_msg("register: %s, pins acquired %ld\n",
			       strerror(errno), d.acq);
		ksft_test_result_fail("pin_conformance_fork_read_fixed_lands_in_parent\n");
		ksft_test_result_fail("pin_conformance_fork_child_keeps_its_copy\n");
		goto out;
	}

	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (pid == 0) {
		long i;

		close(cmd[1]);
		close(ack[0]);
		/* Keep the page mapped until the parent's read is done. */
		if (read(cmd[0], &c, 1) != 1)
			_exit(1);
		c = '1';
		for (i = 0; i < page_size; i++)
			if (buf[i] != 0xaa)
				c = '0';
		if (write(ack[1], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);

	/* Another byte of the same page: would be a COW fault if shared. */
	buf[page_size - 1] = 1;
	res = uring_read_fixed(&r, mfd, buf, READ_LEN, 0);
	parent_ok = res == READ_LEN && !memcmp(buf, src, READ_LEN) &&
		    buf[page_size - 1] == 1;
	c = 'c';
	if (write(cmd[1], &c, 1) == 1 && read(ack[0], &c, 1) == 1)
		child_ok = c == '1';
	close(cmd[1]);
	close(ack[0]);
	waitpid(pid, NULL, 0);
	ksft_print_msg("READ_FIXED after fork: %ld, parent has data %d, child copy intact %d\n",
		       res, parent_ok, child_ok);
	ksft_test_result(parent_ok, "pin_conformance_fork_read_fixed_lands_in_parent\n");
	ksft_test_result(child_ok, "pin_conformance_fork_child_keeps_its_copy\n");
	uring_unregister(&r);
out:
	uring_destroy(&r);
	close(mfd);
	munmap(buf, page_size);
	munmap(src, page_size);
}

static void test_gup_pin(int gfd, unsigned long cmd, const char *name)
{
	long len = NPAGES * page_size;
	unsigned char *buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);

	memset(buf, 1, len);
	gup_pin_result(gfd, cmd, buf, NPAGES, name);
	munmap(buf, len);
}

/* The driver reports no errno: it pins nothing and returns size 0. */
static void test_gup_bad(int gfd, const char *name, void *addr, long len)
{
	struct pins d;
	long done;
	int ret;

	ret = gup_call(gfd, PIN_BASIC_TEST, addr, len, FOLL_WRITE, &done, &d);
	ksft_print_msg("%s: %d, %ld bytes, pins acquired %ld released %ld\n",
		       name, ret, done, d.acq, d.rel);
	ksft_test_result(ret == 0 && done == 0 && d.acq == 0 && d.rel == 0,
			 "%s\n", name);
}

static void test_gup(int gfd)
{
	unsigned char *ro = map_pages(1, PROT_READ);

	test_gup_pin(gfd, PIN_BASIC_TEST, "pin_conformance_gup_test_pin_user_pages");
	test_gup_pin(gfd, PIN_FAST_BENCHMARK,
		     "pin_conformance_gup_test_pin_user_pages_fast");
	test_gup_pin(gfd, PIN_LONGTERM_BENCHMARK,
		     "pin_conformance_gup_test_pin_longterm");
	test_gup_bad(gfd, "pin_conformance_gup_test_zero_len_pins_nothing",
		     ro, 0);
	test_gup_bad(gfd, "pin_conformance_gup_test_unmapped_pins_nothing",
		     hole(), page_size);
	test_gup_bad(gfd, "pin_conformance_gup_test_readonly_write_pin_refused",
		     ro, page_size);
	munmap(ro, page_size);
}

/*
 * Flush this CPU's LRU batches, whose folio_batch entries hold a page
 * reference: mlock_fixup() calls lru_add_drain(). The test runs on one CPU
 * so that the batches it fills are the ones drained.
 */
static void drain_lru(void *scratch)
{
	mlock(scratch, page_size);
	munlock(scratch, page_size);
}

/* get, pin, get dumps with the same refcount baseline; retried. */
static int dump_get_pin_get(int gfd, void *addr, long npages, void *scratch,
			    struct dump *get, struct dump *pin,
			    struct dump *get2)
{
	int i;

	/* The first GUP may activate the page (a batch reference). */
	if (dump_first_page(gfd, addr, npages, 0, get))
		return -1;
	for (i = 0; i < 5; i++) {
		drain_lru(scratch);
		if (dump_first_page(gfd, addr, npages, 0, get))
			return -1;
		drain_lru(scratch);
		if (dump_first_page(gfd, addr, npages, 1, pin))
			return -1;
		drain_lru(scratch);
		if (dump_first_page(gfd, addr, npages, 0, get2))
			return -1;
		if (get->refcount == get2->refcount)
			break;
	}
	return 0;
}

static void test_pin_bias(int gfd, unsigned char *scratch)
{
	unsigned char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	struct dump get, pin, get2;
	int ret;

	memset(buf, 1, page_size);
	ret = dump_get_pin_get(gfd, buf, 1, scratch, &get, &pin, &get2);
	ksft_print_msg("4 KiB page refcount: got %d, pinned %d, got again %d; order %d\n",
		       get.refcount, pin.refcount, get2.refcount, pin.order);
	ksft_test_result(!ret && get.refcount == get2.refcount &&
			 pin.refcount - get.refcount == GUP_PIN_COUNTING_BIAS - 1 &&
			 pin.order < 0,
			 "pin_conformance_pin_counting_bias_4k\n");
	munmap(buf, page_size);
}

static void test_thp_pincount(int gfd, unsigned char *scratch)
{
	long npages = THP_SIZE / page_size;
	struct dump get, pin, get2;
	unsigned char *map, *thp;
	int ret;

	if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK)) {
		ksft_test_result_skip("pin_conformance_thp_exact_pincount: no THP support\n");
		return;
	}
	map = map_pages(2 * npages, PROT_READ | PROT_WRITE);
	if (!map)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	thp = (unsigned char *)(((unsigned long)map + THP_SIZE - 1) &
				~(THP_SIZE - 1));
	madvise(thp, THP_SIZE, MADV_HUGEPAGE);
	memset(thp, 1, THP_SIZE);
	ret = dump_get_pin_get(gfd, thp, npages, scratch, &get, &pin, &get2);
	ksft_print_msg("THP: order %d; refcount got %d, pinned %d, got again %d; compound_pincount %d, %d, %d\n",
		       get.order, get.refcount, pin.refcount, get2.refcount,
		       get.pincount, pin.pincount, get2.pincount);
	if (!ret && get.order != 9) {
		ksft_test_result_skip("pin_conformance_thp_exact_pincount: no THP at %p (order %d)\n",
				      thp, get.order);
	} else {
		/* A pin of each of the npages adds 1 to refcount, 1 to pincount. */
		ksft_test_result(!ret && pin.pincount == npages &&
				 get.pincount == 0 && get2.pincount == 0 &&
				 get.refcount == get2.refcount &&
				 pin.refcount == get.refcount,
				 "pin_conformance_thp_exact_pincount\n");
	}
	munmap(map, 2 * THP_SIZE);
}

int main(void)
{
	unsigned char *scratch;
	cpu_set_t cpus;
	int gfd;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(25);
	/* One CPU: see drain_lru(). */
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	sched_setaffinity(0, sizeof(cpus), &cpus);

	test_process_vm();
	test_io_uring();
	test_fork_read_fixed();

	gfd = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (gfd < 0)
		ksft_exit_fail_msg("/sys/kernel/debug/gup_test: %s (CONFIG_GUP_TEST)\n",
				   strerror(errno));
	test_gup(gfd);
	scratch = map_pages(1, PROT_READ | PROT_WRITE);
	memset(scratch, 1, page_size);
	test_pin_bias(gfd, scratch);
	test_thp_pincount(gfd, scratch);
	close(gfd);
	ksft_finished();
}

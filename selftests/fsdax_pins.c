// SPDX-License-Identifier: GPL-2.0
/*
 * fsdax_pins: pins of fsdax (ZONE_DEVICE, MEMORY_DEVICE_FS_DAX) pages.
 *
 * The harness boots the guest with memmap=SIZE!START, which gives a legacy
 * pmem region (CONFIG_X86_PMEM_LEGACY); drivers/nvdimm/e820.c flags it
 * ND_REGION_PAGEMAP, so /dev/pmem0 has struct pages and ext4 can map its
 * blocks into user space with -o dax=always. On such a mapping:
 *
 * - pin_user_pages() and pin_user_pages_fast() (through gup_test) pin the
 *   pages, counted in nr_foll_pin_acquired/released, and release them;
 * - an idle fsdax page has refcount 1 (ZONE_DEVICE pages are 1-based, see
 *   dax_layout_busy_page()): a get shows 2, a pin 1 + 1024;
 * - FOLL_LONGTERM is refused (gup_test -L, io_uring fixed buffers): the
 *   filesystem could never move or truncate the blocks;
 * - a write pin of a read-only mapping is refused and pins nothing;
 * - an O_DIRECT write from and a read into a DAX mapping pin its pages
 *   (this series: the block layer takes pins; Debian's 6.1 takes plain
 *   references, so the count is 0 there) and the data is right;
 * - after every pin is gone the file can be truncated and the filesystem
 *   unmounted: dax_layout_busy_page() would wait forever for a leaked one.
 */
#include <sys/wait.h>
#include "gup_common.h"
#include "kselftest.h"

#define PMEM		"/dev/pmem0"
#define MNT		"/mnt/dax"
#define FILE_PATH	MNT "/f"
#define NPAGES		16
#ifndef STATX_ATTR_DAX
#define STATX_ATTR_DAX	0x00200000
#endif

static long page_size;

static unsigned char pattern(long i)
{
	return (unsigned char)(i * 13 + 7);
}

/* A shared mapping of the whole test file with @prot, or NULL. */
static unsigned char *map_file(int fd, int prot)
{
	void *p = mmap(NULL, NPAGES * page_size, prot, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* mkfs and mount the pmem disk with -o dax=always; create the test file. */
static int setup(void)
{
	unsigned char *buf;
	struct statx stx;
	long i, len = NPAGES * page_size;
	int fd;

	if (access(PMEM, F_OK))
		ksft_exit_fail_msg("no %s: the guest needs memmap=SIZE!START and CONFIG_X86_PMEM_LEGACY, CONFIG_BLK_DEV_PMEM, CONFIG_FS_DAX\n",
				   PMEM);
	if (system("/usr/sbin/mke2fs -q -F -t ext4 -b 4096 " PMEM))
		ksft_exit_fail_msg("mke2fs on %s failed\n", PMEM);
	mkdir(MNT, 0755);
	if (mount(PMEM, MNT, "ext4", 0, "dax=always"))
		ksft_exit_fail_msg("mount -o dax=always %s: %s\n", PMEM,
				   strerror(errno));
	fd = open(FILE_PATH, O_RDWR | O_CREAT | O_TRUNC, 0644);
	buf = malloc(len);
	if (fd < 0 || !buf)
		ksft_exit_fail_msg("%s: %s\n", FILE_PATH, strerror(errno));
	for (i = 0; i < len; i++)
		buf[i] = pattern(i);
	if (pwrite(fd, buf, len, 0) != len || fsync(fd))
		ksft_exit_fail_msg("write %s: %s\n", FILE_PATH, strerror(errno));
	free(buf);
	if (statx(AT_FDCWD, FILE_PATH, 0, STATX_BASIC_STATS, &stx))
		ksft_exit_fail_msg("statx %s: %s\n", FILE_PATH, strerror(errno));
	ksft_test_result(stx.stx_attributes_mask & stx.stx_attributes &
			 STATX_ATTR_DAX, "fsdax_pins_file_is_dax\n");
	return fd;
}

static void test_short_term(int gfd, int fd, unsigned long cmd,
			    const char *name)
{
	unsigned char *map = map_file(fd, PROT_READ | PROT_WRITE);

	if (!map)
		ksft_exit_fail_msg("mmap %s: %s\n", FILE_PATH, strerror(errno));
	map[0] = pattern(0);	/* fault the mapping in: a real DAX page */
	gup_pin_result(gfd, cmd, map, NPAGES, name);
	munmap(map, NPAGES * page_size);
}

static void test_refcount(int gfd, int fd)
{
	unsigned char *map = map_file(fd, PROT_READ | PROT_WRITE);
	struct dump get, pin, get2;
	int ret;

	if (!map)
		ksft_exit_fail_msg("mmap %s: %s\n", FILE_PATH, strerror(errno));
	map[0] = pattern(0);
	ret = dump_first_page(gfd, map, 1, 0, &get) ||
	      dump_first_page(gfd, map, 1, 1, &pin) ||
	      dump_first_page(gfd, map, 1, 0, &get2);
	ksft_print_msg("fsdax page refcount: got %d, pinned %d, got again %d\n",
		       get.refcount, pin.refcount, get2.refcount);
	ksft_test_result(!ret && get.refcount == 2 && get2.refcount == 2 &&
			 pin.refcount == 1 + GUP_PIN_COUNTING_BIAS,
			 "fsdax_pins_devmap_refcount_one_based\n");
	munmap(map, page_size * NPAGES);
}

static void test_longterm(int gfd, int fd)
{
	long len = NPAGES * page_size, done;
	unsigned char *map = map_file(fd, PROT_READ | PROT_WRITE);
	struct pins d, p0;
	struct iovec iov;
	struct uring r;
	int ret, reg;

	if (!map)
		ksft_exit_fail_msg("mmap %s: %s\n", FILE_PATH, strerror(errno));
	map[0] = pattern(0);
	/* gup_test returns 0 and a size of 0 when pin_user_pages() fails. */
	ret = gup_call(gfd, PIN_LONGTERM_BENCHMARK, map, len, FOLL_WRITE,
		       &done, &d);
	ksft_print_msg("gup_test -L: %d, %ld bytes, pins acquired %ld released %ld\n",
		       ret, done, d.acq, d.rel);
	if (uring_setup(&r))
		ksft_exit_fail_msg("io_uring_setup: %s\n", strerror(errno));
	iov.iov_base = map;
	iov.iov_len = len;
	p0 = pins_now();
	reg = syscall(__NR_io_uring_register, r.fd, IORING_REGISTER_BUFFERS,
		      &iov, 1) ? -errno : 0;
	p0 = pins_since(p0);
	uring_destroy(&r);
	ksft_print_msg("io_uring fixed buffer on DAX: %d (%s), pins acquired %ld released %ld\n",
		       reg, strerror(-reg), p0.acq, p0.rel);
	ksft_test_result(ret == 0 && done == 0 && d.acq == 0 && d.rel == 0 &&
			 reg == -EOPNOTSUPP && p0.acq == p0.rel,
			 "fsdax_pins_longterm_refused\n");
	munmap(map, len);
}

static void test_readonly(int gfd, int fd)
{
	long len = NPAGES * page_size, done;
	unsigned char *map = map_file(fd, PROT_READ);
	struct pins d;
	int ret;

	if (!map)
		ksft_exit_fail_msg("mmap %s: %s\n", FILE_PATH, strerror(errno));
	ret = gup_call(gfd, PIN_BASIC_TEST, map, len, FOLL_WRITE, &done, &d);
	ksft_print_msg("write pin of a read-only DAX mapping: %d, %ld bytes, pins acquired %ld released %ld\n",
		       ret, done, d.acq, d.rel);
	ksft_test_result(ret == 0 && done == 0 && d.acq == 0 && d.rel == 0,
			 "fsdax_pins_readonly_write_pin_refused\n");
	munmap(map, len);
}

/* O_DIRECT write from, then read into, the DAX mapping, via the raw disk. */
static void test_dio(int fd)
{
	long i, len = NPAGES * page_size, bad = 0;
	unsigned char *map = map_file(fd, PROT_READ | PROT_WRITE);
	struct pins w, r;
	ssize_t nw, nr;
	char dev[32];
	int bfd;

	if (!map)
		ksft_exit_fail_msg("mmap %s: %s\n", FILE_PATH, strerror(errno));
	if (find_disk("dio-raw", dev, sizeof(dev)))
		ksft_exit_fail_msg("no disk with serial dio-raw\n");
	bfd = open(dev, O_RDWR | O_DIRECT);
	if (bfd < 0)
		ksft_exit_fail_msg("open %s: %s\n", dev, strerror(errno));
	w = pins_now();
	nw = pwrite(bfd, map, len, 0);
	w = pins_since(w);
	memset(map, 0, len);
	r = pins_now();
	nr = pread(bfd, map, len, 0);
	r = pins_since(r);
	for (i = 0; i < len; i++)
		bad += map[i] != pattern(i);
	ksft_print_msg("O_DIRECT write from DAX: %zd, pins %ld/%ld; read into DAX: %zd, pins %ld/%ld; %ld bytes wrong\n",
		       nw, w.acq, w.rel, nr, r.acq, r.rel, bad);
	ksft_test_result(nw == len && nr == len && !bad &&
			 w.acq == NPAGES && w.rel == NPAGES &&
			 r.acq == NPAGES && r.rel == NPAGES,
			 "fsdax_pins_dio_counted\n");
	close(bfd);
	munmap(map, len);
}

/* With every pin released, truncate must not wait and umount must work. */
static void test_truncate_umount(int fd)
{
	int status = -1, um;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		alarm(60);
		_exit(ftruncate(fd, 0) ? 1 : 0);
	}
	waitpid(pid, &status, 0);
	close(fd);
	um = umount(MNT) ? errno : 0;
	ksft_print_msg("truncate: %s; umount: %s\n",
		       WIFSIGNALED(status) ? "no end in 60 s" :
		       WEXITSTATUS(status) ? "failed" : "done",
		       strerror(um));
	ksft_test_result(WIFEXITED(status) && WEXITSTATUS(status) == 0 && !um,
			 "fsdax_pins_truncate_umount_after_unpin\n");
}

int main(void)
{
	struct pins p0;
	int gfd, fd;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(8);
	gfd = open("/sys/kernel/debug/gup_test", O_RDWR);
	if (gfd < 0)
		ksft_exit_fail_msg("/sys/kernel/debug/gup_test: %s (CONFIG_GUP_TEST)\n",
				   strerror(errno));
	p0 = pins_now();
	fd = setup();
	test_short_term(gfd, fd, PIN_BASIC_TEST,
			"fsdax_pins_pin_user_pages_counted");
	test_short_term(gfd, fd, PIN_FAST_BENCHMARK,
			"fsdax_pins_pin_user_pages_fast_counted");
	test_refcount(gfd, fd);
	test_longterm(gfd, fd);
	test_readonly(gfd, fd);
	test_dio(fd);
	test_truncate_umount(fd);
	close(gfd);
	p0 = pins_since(p0);
	ksft_print_msg("whole test: pins acquired %ld released %ld\n",
		       p0.acq, p0.rel);
	ksft_finished();
}

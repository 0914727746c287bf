// SPDX-License-Identifier: GPL-2.0
/*
 * pin_faults: direct I/O while errors are injected, on the device and in
 * the kernel; no pin may outlive its I/O.
 *
 * Device errors, on every kernel: the harness's disk "dio-fault" is QEMU's
 * blkdebug driver over a raw image (scripts/blkdebug.conf), which fails
 * every read that touches sector BAD_READ_SECTOR and every write that
 * touches BAD_WRITE_SECTOR with EIO. Reads and writes of IO_LEN bytes at
 * random 4 KiB-aligned offsets around those sectors, synchronous, Linux
 * AIO and io_uring in turn, must fail with EIO exactly when they cover the
 * bad sector, and otherwise move the right data.
 *
 * Kernel faults, on a kernel with CONFIG_FAULT_INJECTION (DEBUG=1 builds
 * one): failslab, fail_page_alloc, fail_make_request and fail_usercopy in
 * turn, each at FAULT_PERCENT percent and limited to this task (task-filter,
 * with /proc/self/make-it-fail set only while an I/O is submitted), while
 * the test reads from and writes to the fault disk (away from its bad
 * sectors), reads files on ext4 (iomap), ext2 (fs/direct-io.c) and the NFS
 * loopback mount, and reads the SCSI disk by SG_IO. Every I/O must return
 * its data (all of it, or a correct prefix) or an errno, except NFS reads
 * that return 0 under failslab (a stock NFS bug, counted apart: judge());
 * a row that injected no fault tested nothing and fails.
 *
 * Every row also checks that as many pins were released as acquired.
 */
#include <stdint.h>
#include <time.h>
#include "dio_common.h"
#include "kselftest.h"

#define IO_LEN			(16 << 10)
/* scripts/blkdebug.conf: keep these two in step with it. */
#define BAD_READ_SECTOR		8192
#define BAD_WRITE_SECTOR	16384
/* Device rows: offsets within WINDOW bytes either side of a bad sector. */
#define WINDOW			(64 << 10)
#define DEV_IOS			300
/* Kernel-fault rows: the fault disk's read and write areas, far from both
 * bad sectors, and a prefilled area of SPAN bytes in every other target.
 */
#define FAULT_READ_BASE		(1L << 20)
#define FAULT_WRITE_BASE	(2L << 20)
#define SPAN			(256 << 10)
#define FAULT_PERCENT		"10"
#define FAULT_TIMES		100000
#define EXT4_MNT		"/mnt/pin_faults_ext4"
#define EXT2_MNT		"/mnt/pin_faults_ext2"
#define DBG			"/sys/kernel/debug"

enum mode { M_SYNC, M_AIO, M_URING, NMODE };
static const char *const mode_name[] = { "sync", "aio", "io_uring" };

static aio_context_t aio;
static struct uring ring;
static unsigned char *buf, *want;
static int mif_fd = -1;		/* /proc/self/make-it-fail */
static unsigned long long rnd = 0x9e3779b97f4a7c15ULL;

static unsigned long next_rand(void)
{
	rnd = rnd * 6364136223846793005ULL + 1442695040888963407ULL;
	return rnd >> 33;
}

/* The bytes a disk or file holds at @off when written with salt @s. */
static void fill(unsigned char *p, off_t off, unsigned int s, size_t len)
{
	uint64_t *w = (uint64_t *)p;
	size_t i;

	for (i = 0; i < len / 8; i++)
		w[i] = ((uint64_t)(s + 1) << 48) ^ (uint64_t)(off + i * 8);
}

/* Fault injection on or off for this task, retried: the write itself may
 * meet fail_usercopy.
 */
static void faults(int on)
{
	int tries = 0;

	if (mif_fd < 0)
		return;
	while (pwrite(mif_fd, on ? "1" : "0", 1, 0) != 1)
		if (++tries > 1000)
			ksft_exit_fail_msg("make-it-fail: %s\n", strerror(errno));
}

/*
 * One I/O of @len bytes at @off; bytes moved or -errno. Faults, if armed,
 * are on while the I/O is submitted (where the pages are pinned) and off
 * while the test waits for its completion.
 */
static long do_io(enum mode m, int fd, int write, size_t len, off_t off,
		  int inject)
{
	long r;

	if (inject)
		faults(1);
	switch (m) {
	case M_SYNC:
		r = write ? pwrite(fd, buf, len, off) : pread(fd, buf, len, off);
		if (r < 0)
			r = -errno;
		faults(0);
		return r;
	case M_AIO:
		r = aio_submit_rw(aio, fd, write, buf, len, off);
		if (r != 1)
			r = -errno;
		faults(0);
		return r == 1 ? aio_wait(aio) : r;
	default:
		r = uring_submit_rw(&ring, fd, write, buf, len, off);
		faults(0);
		/* The SQE is in the ring: it must be submitted before the
		 * next one, so a failed submission is retried without faults.
		 */
		while (r != 1) {
			if (r < 0 && errno != EAGAIN && errno != ENOMEM &&
			    errno != EINTR && errno != EBUSY)
				ksft_exit_fail_msg("io_uring_enter: %s\n", strerror(errno));
			r = syscall(__NR_io_uring_enter, ring.fd, 1, 0, 0, NULL, 0);
		}
		return uring_wait(&ring);
	}
}

/* Write @len bytes of salt @s at @off with no fault armed, and sync. */
static int prefill(int fd, off_t off, size_t len, unsigned int s)
{
	size_t done;

	for (done = 0; done < len; done += IO_LEN) {
		fill(buf, off + done, s, IO_LEN);
		if (pwrite(fd, buf, IO_LEN, off + done) != IO_LEN)
			return -1;
	}
	return fsync(fd);
}

struct tally {
	long ios, ok, err, eio, wrong, nfs_zero;
};

static void tally_print(const char *row, const struct tally *t, struct pins d)
{
	ksft_print_msg("%s: %ld I/Os, %ld with data, %ld with an errno (%ld EIO), %ld wrong, pins +%ld -%ld\n",
		       row, t->ios, t->ok, t->err, t->eio, t->wrong, d.acq, d.rel);
}

/*
 * Device-error row: reads (or writes) around the bad sector; each must
 * fail with EIO exactly when it covers it.
 */
static void device_row(int fd, int write)
{
	const char *row = write ? "pin_faults_device_write" : "pin_faults_device_read";
	off_t bad = (off_t)(write ? BAD_WRITE_SECTOR : BAD_READ_SECTOR) * 512;
	struct tally t = { 0 };
	struct pins p0, d;
	long unexpected = 0;
	int i;

	if (fd < 0) {
		ksft_test_result_skip("%s: no disk with serial dio-fault\n", row);
		return;
	}
	p0 = pins_now();
	for (i = 0; i < DEV_IOS; i++) {
		enum mode m = i % NMODE;
		off_t off = bad - WINDOW + (off_t)(next_rand() % (2 * WINDOW / 4096)) * 4096;
		int covers = off <= bad && bad < off + IO_LEN;
		unsigned int s = 100 + i;
		long r;

		if (write)
			fill(buf, off, s, IO_LEN);
		else
			memset(buf, 0, IO_LEN);
		r = do_io(m, fd, write, IO_LEN, off, 0);
		t.ios++;
		if (r < 0) {
			t.err++;
			t.eio += r == -EIO;
		} else {
			t.ok++;
		}
		if (covers ? r != -EIO : r != IO_LEN) {
			if (unexpected++ < 5)
				ksft_print_msg("%s: %s at %lld: %ld, want %s\n", row,
					       mode_name[m], (long long)off, r,
					       covers ? "-EIO" : "all bytes");
			continue;
		}
		if (covers)
			continue;
		if (write) {
			/* Read back what the write stored, without faults. */
			if (pread(fd, buf, IO_LEN, off) != IO_LEN) {
				t.wrong += IO_LEN;
				continue;
			}
		}
		fill(want, off, write ? s : 0, IO_LEN);
		if (memcmp(buf, want, IO_LEN))
			t.wrong++;
	}
	d = pins_since(p0);
	tally_print(row, &t, d);
	ksft_test_result(!unexpected && !t.wrong && t.eio && t.ok && d.acq == d.rel,
			 "%s\n", row);
}

struct target {
	const char *name;
	int fd;
	off_t rbase;		/* prefilled with salt 0, SPAN bytes */
	off_t wbase;		/* -1: reads only */
	int sg;			/* read by SG_IO */
	int nio;		/* I/Os per mode */
	char blk[32];		/* /sys/block name, for fail_make_request */
};

static long sg_read(int fd, size_t len, off_t off, int inject)
{
	unsigned char cdb[10], sense[32];
	struct sg_io_hdr hdr;
	int r;

	sg_read10(&hdr, cdb, sense, sizeof(sense), buf, len, off);
	if (inject)
		faults(1);
	r = ioctl(fd, SG_IO, &hdr);
	if (r < 0)
		r = -errno;
	faults(0);
	if (r < 0)
		return r;
	if (hdr.status || hdr.host_status || hdr.driver_status)
		return -EIO;
	return len - hdr.resid;
}

/* One fault attribute in debugfs: write @val to DBG/@dir/@knob. */
static int attr_set(const char *dir, const char *knob, const char *val)
{
	char path[128];
	int fd, ok;

	snprintf(path, sizeof(path), DBG "/%s/%s", dir, knob);
	fd = open(path, O_WRONLY);
	if (fd < 0)
		return -1;
	ok = write(fd, val, strlen(val)) == (ssize_t)strlen(val);
	close(fd);
	return ok ? 0 : -1;
}

static long attr_get(const char *dir, const char *knob)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path), DBG "/%s/%s", dir, knob);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static void blk_make_it_fail(struct target **tg, int n, const char *val)
{
	char path[64];
	int i, fd;

	for (i = 0; i < n; i++) {
		if (tg[i]->fd < 0 || !tg[i]->blk[0])
			continue;
		snprintf(path, sizeof(path), "/sys/block/%s/make-it-fail", tg[i]->blk);
		fd = open(path, O_WRONLY);
		if (fd >= 0) {
			if (write(fd, val, 1) != 1)
				ksft_print_msg("%s: %s\n", path, strerror(errno));
			close(fd);
		}
	}
}

/* Check one result against the salt-@s data at @off; update @t. */
static void judge(struct tally *t, const char *row, const char *what, long r,
		  off_t off, unsigned int s, int nfs_zero_known)
{
	t->ios++;
	if (r < 0) {
		t->err++;
		t->eio += r == -EIO;
		return;
	}
	/*
	 * Debian's 6.1 NFS, stock and patched alike: when the read's pgio
	 * header cannot be allocated, nfs_read_sync_pgio_error() drops the
	 * requests without setting dreq->error, and the read returns 0.
	 * Counted and reported, not a pin fault (docs/measurements.md).
	 */
	if (r == 0 && nfs_zero_known) {
		t->nfs_zero++;
		return;
	}
	fill(want, off, s, IO_LEN);
	if (r == 0 || r > IO_LEN || memcmp(buf, want, r)) {
		if (t->wrong++ < 5)
			ksft_print_msg("%s: %s at %lld: %ld bytes, %s\n", row, what,
				       (long long)off, r, r > 0 ? "wrong data" : "no data");
		return;
	}
	t->ok++;
}

static void fault_row(const char *fault, struct target **tg, int n)
{
	char row[64], what[64], times[16];
	struct tally t = { 0 };
	struct pins p0, d;
	long left, injected;
	int i, j, m;

	snprintf(row, sizeof(row), "pin_faults_%s", fault);
	if (mif_fd < 0 || attr_get(fault, "probability") < 0) {
		ksft_test_result_skip("%s: no %s/%s (CONFIG_FAULT_INJECTION, DEBUG=1)\n",
				      row, DBG, fault);
		return;
	}
	snprintf(times, sizeof(times), "%d", FAULT_TIMES);
	if (attr_set(fault, "task-filter", "Y") || attr_set(fault, "interval", "1") ||
	    attr_set(fault, "space", "0") || attr_set(fault, "verbose", "0") ||
	    attr_set(fault, "times", times)) {
		ksft_test_result_fail("%s: cannot set %s/%s: %s\n", row, DBG, fault,
				      strerror(errno));
		return;
	}
	/* By default these two fail only allocations that cannot sleep. */
	attr_set(fault, "ignore-gfp-wait", "N");
	attr_set(fault, "ignore-gfp-highmem", "N");
	attr_set(fault, "min-order", "0");
	if (!strcmp(fault, "fail_make_request"))
		blk_make_it_fail(tg, n, "1");

	p0 = pins_now();
	attr_set(fault, "probability", FAULT_PERCENT);
	for (i = 0; i < n; i++) {
		struct target *x = tg[i];

		if (x->fd < 0)
			continue;
		for (m = 0; m < (x->sg ? 1 : NMODE); m++) {
			for (j = 0; j < x->nio; j++) {
				off_t off = (off_t)(next_rand() % (SPAN / 4096 - IO_LEN / 4096)) * 4096;
				int write = x->wbase >= 0 && (j & 1);
				long r;

				snprintf(what, sizeof(what), "%s %s %s", x->name,
					 x->sg ? "SG_IO" : mode_name[m],
					 write ? "write" : "read");
				memset(buf, 0, IO_LEN);
				if (x->sg) {
					r = sg_read(x->fd, IO_LEN, x->rbase + off, 1);
				} else if (write) {
					fill(buf, x->wbase + off, 7, IO_LEN);
					r = do_io(m, x->fd, 1, IO_LEN, x->wbase + off, 1);
					if (r > 0) {
						/* Read back what it stored. */
						memset(buf, 0, IO_LEN);
						if (pread(x->fd, buf, r, x->wbase + off) != r)
							r = 0;
					}
				} else {
					r = do_io(m, x->fd, 0, IO_LEN, x->rbase + off, 1);
				}
				judge(&t, row, what, r, write ? x->wbase + off : x->rbase + off,
				      write ? 7 : 0,
				      !strcmp(x->name, "nfs") && !strcmp(fault, "failslab"));
			}
		}
	}
	attr_set(fault, "probability", "0");
	if (!strcmp(fault, "fail_make_request"))
		blk_make_it_fail(tg, n, "0");
	left = attr_get(fault, "times");
	injected = left >= 0 ? FAULT_TIMES - left : 0;
	d = pins_since(p0);
	tally_print(row, &t, d);
	ksft_print_msg("%s: %ld faults injected\n", row, injected);
	if (t.nfs_zero)
		ksft_print_msg("%s: %ld NFS reads returned 0 (known Debian 6.1 NFS bug, not a pin fault)\n",
			       row, t.nfs_zero);
	ksft_test_result(!t.wrong && injected > 0 && d.acq == d.rel, "%s\n", row);
}

static int open_file(struct target *t, const char *serial, const char *fs,
		     const char *mnt, const char *path)
{
	t->fd = -1;
	if (serial && mount_disk(serial, fs, mnt))
		return -1;
	t->fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (t->fd < 0 || prefill(t->fd, 0, SPAN, 0)) {
		ksft_print_msg("%s: %s\n", t->name, strerror(errno));
		if (t->fd >= 0)
			close(t->fd);
		t->fd = -1;
		return -1;
	}
	return 0;
}

int main(void)
{
	struct target fdisk = { .name = "fault_disk", .fd = -1,
				.rbase = FAULT_READ_BASE,
				.wbase = FAULT_WRITE_BASE, .nio = 100 };
	struct target ext4 = { .name = "ext4", .fd = -1, .wbase = -1, .nio = 20 };
	struct target ext2 = { .name = "ext2", .fd = -1, .wbase = -1, .nio = 20 };
	struct target nfs = { .name = "nfs", .fd = -1, .wbase = -1, .nio = 20 };
	struct target sg = { .name = "sg_io", .fd = -1, .wbase = -1, .sg = 1,
			     .nio = 40 };
	struct target *tg[] = { &fdisk, &ext4, &ext2, &nfs, &sg };
	static const char *const kfaults[] = {
		"failslab", "fail_page_alloc", "fail_make_request", "fail_usercopy"
	};
	int n = sizeof(tg) / sizeof(tg[0]);
	char dev[32];
	struct pins p0, d;
	unsigned int i;
	int fd = -1;

	pins_test_start(2 + 4 + 1);
	buf = aligned_alloc(4096, IO_LEN);
	want = malloc(IO_LEN);
	if (!buf || !want || aio_setup(&aio) || uring_setup(&ring))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	/* Touched now, so no I/O faults the buffer in under injection. */
	memset(buf, 0, IO_LEN);
	mlock(buf, IO_LEN);
	mif_fd = open("/proc/self/make-it-fail", O_WRONLY);
	ksft_print_msg("seed %#llx, %s%% of injectable calls fail while an I/O is submitted\n",
		       rnd, FAULT_PERCENT);

	p0 = pins_now();
	if (!find_disk("dio-fault", dev, sizeof(dev))) {
		fd = open(dev, O_RDWR | O_DIRECT);
		/* The read window around the bad sector (writes there do not
		 * fail) and the kernel-fault rows' read area.
		 */
		if (fd >= 0 &&
		    (prefill(fd, (off_t)BAD_READ_SECTOR * 512 - WINDOW,
			     2 * WINDOW + IO_LEN, 0) ||
		     prefill(fd, FAULT_READ_BASE, SPAN, 0)))
			ksft_print_msg("%s: prefill: %s\n", dev, strerror(errno));
		fdisk.fd = fd;
		snprintf(fdisk.blk, sizeof(fdisk.blk), "%s", dev + 5);
	}
	device_row(fd, 0);
	device_row(fd, 1);

	if (!find_disk("dio-ext4", dev, sizeof(dev)))
		snprintf(ext4.blk, sizeof(ext4.blk), "%s", dev + 5);
	if (!find_disk("dio-ext2", dev, sizeof(dev)))
		snprintf(ext2.blk, sizeof(ext2.blk), "%s", dev + 5);
	open_file(&ext4, "dio-ext4", "ext4", EXT4_MNT, EXT4_MNT "/faults.dat");
	open_file(&ext2, "dio-ext2", "ext2", EXT2_MNT, EXT2_MNT "/faults.dat");
	if (!system("nfs-loopback"))
		open_file(&nfs, NULL, NULL, NULL, NFS_MNT "/faults.dat");
	if (!find_scsi_disk(dev, sizeof(dev))) {
		sg.fd = open(dev, O_RDWR | O_DIRECT);
		if (sg.fd >= 0 && prefill(sg.fd, 0, SPAN, 0)) {
			close(sg.fd);
			sg.fd = -1;
		}
	}
	for (i = 0; i < sizeof(kfaults) / sizeof(kfaults[0]); i++)
		fault_row(kfaults[i], tg, n);

	for (i = 0; i < (unsigned int)n; i++)
		if (tg[i]->fd >= 0)
			close(tg[i]->fd);
	umount(EXT4_MNT);
	umount(EXT2_MNT);
	d = pins_since(p0);
	ksft_test_result(d.acq == d.rel, "pin_faults_balance (pins +%ld -%ld)\n",
			 d.acq, d.rel);
	aio_destroy(aio);
	uring_destroy(&ring);
	ksft_finished();
}

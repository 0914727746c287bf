// SPDX-License-Identifier: GPL-2.0
/*
 * dio_pins: direct I/O holds user pages with FOLL_PIN, counts them in
 * /proc/vmstat, releases every pin at completion, and bad input gets an
 * errno without leaking a pin.
 *
 * Runs on the harness's "dio-raw" virtio disk, for SG_IO on the first
 * SCSI disk (virtio-scsi), and for NFS on a file of the guest's own
 * NFSv4 export mounted over loopback (initramfs/nfs-loopback), and for
 * fs/direct-io.c on a file of the "dio-vfat" disk where the kernel has
 * vfat (the 6.12 guest: there ext2 has moved to iomap).
 */
#include <sys/uio.h>
#include "dio_common.h"
#include "kselftest.h"

#define NPAGES	16

static long page_size;

/* Both deltas since @p0, and whether every pin taken was released. */
static int balanced(struct pins p0, long *acq, long *rel)
{
	struct pins p1 = pins_now();

	*acq = p1.acq - p0.acq;
	*rel = p1.rel - p0.rel;
	return *acq == *rel;
}

static void test_read_counted(int fd)
{
	char *buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	struct pins p0;
	long acq, rel;
	ssize_t n;

	memset(buf, 1, NPAGES * page_size);
	p0 = pins_now();
	n = pread(fd, buf, NPAGES * page_size, 0);
	balanced(p0, &acq, &rel);
	ksft_print_msg("read %zd bytes: pins acquired %ld released %ld\n",
		       n, acq, rel);
	ksft_test_result(n == NPAGES * page_size && acq == NPAGES && rel == NPAGES,
			 "dio_pins_read_counted\n");
	munmap(buf, NPAGES * page_size);
}

/* A direct write from never-touched memory pins nothing, writes zeroes. */
static void test_write_zero_page(int fd, const char *name)
{
	/* Never touched: the write's source pages map the shared zero page. */
	char *buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *check = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	struct pins p0;
	long acq, rel;
	ssize_t n, m;
	int zero = 1, i;

	p0 = pins_now();
	n = pwrite(fd, buf, NPAGES * page_size, 0);
	balanced(p0, &acq, &rel);
	memset(check, 0xff, NPAGES * page_size);
	m = pread(fd, check, NPAGES * page_size, 0);
	for (i = 0; i < NPAGES * page_size; i++)
		if (check[i]) {
			zero = 0;
			break;
		}
	ksft_print_msg("%s: write %zd bytes: pins acquired %ld released %ld\n",
		       name, n, acq, rel);
	ksft_test_result(n == NPAGES * page_size && m == n && zero &&
			 acq == 0 && rel == 0, "%s\n", name);
	munmap(buf, NPAGES * page_size);
	munmap(check, NPAGES * page_size);
}

static void test_misaligned(int fd)
{
	char *buf = map_pages(2, PROT_READ | PROT_WRITE);
	struct pins p0 = pins_now();
	ssize_t a, b;
	int ea, eb;
	long acq, rel;

	a = pread(fd, buf + 1, page_size, 0);
	ea = errno;
	b = pread(fd, buf, page_size, 100);
	eb = errno;
	ksft_test_result(a == -1 && ea == EINVAL && b == -1 && eb == EINVAL &&
			 balanced(p0, &acq, &rel),
			 "dio_pins_misaligned_einval\n");
	munmap(buf, 2 * page_size);
}

static void test_unmapped_tail(int fd)
{
	char *buf = map_pages(2, PROT_READ | PROT_WRITE);
	struct pins p0;
	long acq, rel;
	ssize_t n;

	munmap(buf + page_size, page_size);
	p0 = pins_now();
	n = pread(fd, buf, 2 * page_size, 0);
	ksft_print_msg("read over an unmapped tail: %zd (%s)\n", n,
		       n < 0 ? strerror(errno) : "short");
	ksft_test_result((n == page_size || (n == -1 && errno == EFAULT)) &&
			 balanced(p0, &acq, &rel),
			 "dio_pins_unmapped_tail_short_no_leak\n");
	munmap(buf, page_size);
}

static void test_too_many_iovecs(int fd)
{
	int cnt = 1025;	/* UIO_MAXIOV + 1 */
	struct iovec *iov = calloc(cnt, sizeof(*iov));
	char *buf = map_pages(1, PROT_READ | PROT_WRITE);
	ssize_t n;
	int i;

	for (i = 0; i < cnt; i++) {
		iov[i].iov_base = buf;
		iov[i].iov_len = 512;
	}
	n = preadv(fd, iov, cnt, 0);
	ksft_test_result(n == -1 && errno == EINVAL, "dio_pins_uio_maxiov_einval\n");
	free(iov);
	munmap(buf, page_size);
}

static void test_readonly_target(int fd)
{
	char *buf = map_pages(1, PROT_READ);
	struct pins p0 = pins_now();
	long acq, rel;
	ssize_t n;

	n = pread(fd, buf, page_size, 0);
	ksft_test_result(n == -1 && errno == EFAULT && balanced(p0, &acq, &rel),
			 "dio_pins_readonly_target_efault\n");
	munmap(buf, page_size);
}

static void test_sg_io_counted(void)
{
	unsigned char cdb[10], sense[32];
	char dev[32], *buf;
	struct sg_io_hdr hdr;
	struct pins p0;
	long acq, rel;
	int fd, ret;

	if (find_scsi_disk(dev, sizeof(dev))) {
		ksft_test_result_skip("dio_pins_sg_io_counted: no SCSI disk\n");
		return;
	}
	fd = open(dev, O_RDWR);
	buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (fd < 0 || !buf) {
		ksft_test_result_fail("dio_pins_sg_io_counted: open %s: %s\n",
				      dev, strerror(errno));
		return;
	}
	memset(buf, 1, NPAGES * page_size);
	sg_read10(&hdr, cdb, sense, sizeof(sense), buf, NPAGES * page_size, 0);
	p0 = pins_now();
	ret = ioctl(fd, SG_IO, &hdr);
	balanced(p0, &acq, &rel);
	ksft_print_msg("SG_IO READ(10) of %d pages on %s: ret %d status %d, pins acquired %ld released %ld\n",
		       NPAGES, dev, ret, hdr.status, acq, rel);
	ksft_test_result(ret == 0 && hdr.status == 0 && acq == NPAGES &&
			 rel == NPAGES, "dio_pins_sg_io_counted\n");
	munmap(buf, NPAGES * page_size);
	close(fd);
}

/*
 * NFS direct I/O (fs/nfs/direct.c): each page is pinned by the extraction
 * and again by the nfs_page request made for it, so a read takes at least
 * one pin per page; all of them are dropped by the time it returns.
 */
static void test_nfs(void)
{
	const char *path = NFS_MNT "/dio_pins.dat";
	char *buf, *ro, *tail;
	struct pins p0;
	long acq, rel;
	ssize_t n;
	int fd;

	if (system("nfs-loopback")) {
		ksft_test_result_fail("dio_pins_nfs_read_counted (nfs-loopback could not serve and mount the export)\n");
		ksft_test_result_fail("dio_pins_nfs_zero_page_not_pinned (no export)\n");
		ksft_test_result_fail("dio_pins_nfs_unmapped_tail_no_leak (no export)\n");
		ksft_test_result_fail("dio_pins_nfs_readonly_target_efault (no export)\n");
		return;
	}
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
	buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (fd < 0 || !buf)
		ksft_exit_fail_msg("open %s: %s\n", path, strerror(errno));

	test_write_zero_page(fd, "dio_pins_nfs_zero_page_not_pinned");

	memset(buf, 1, NPAGES * page_size);
	p0 = pins_now();
	n = pread(fd, buf, NPAGES * page_size, 0);
	balanced(p0, &acq, &rel);
	ksft_print_msg("NFS read %zd bytes: pins acquired %ld released %ld\n",
		       n, acq, rel);
	ksft_test_result(n == NPAGES * page_size && buf[0] == 0 &&
			 acq >= NPAGES && acq == rel,
			 "dio_pins_nfs_read_counted\n");

	tail = map_pages(2, PROT_READ | PROT_WRITE);
	munmap(tail + page_size, page_size);
	p0 = pins_now();
	n = pread(fd, tail, 2 * page_size, 0);
	ksft_print_msg("NFS read over an unmapped tail: %zd (%s)\n", n,
		       n < 0 ? strerror(errno) : "short");
	ksft_test_result((n == page_size || (n == -1 && errno == EFAULT)) &&
			 balanced(p0, &acq, &rel),
			 "dio_pins_nfs_unmapped_tail_no_leak\n");
	munmap(tail, page_size);

	ro = map_pages(1, PROT_READ);
	p0 = pins_now();
	n = pread(fd, ro, page_size, 0);
	ksft_test_result(n == -1 && errno == EFAULT && balanced(p0, &acq, &rel),
			 "dio_pins_nfs_readonly_target_efault\n");
	munmap(ro, page_size);
	munmap(buf, NPAGES * page_size);
	close(fd);
	unlink(path);
}

/*
 * fs/direct-io.c, through FAT's blockdev_direct_IO(): the extraction pins
 * each page, and the page takes one more pin while the dio and its bio
 * hold it (folio_add_pin() on 6.12). Every pin taken must be counted as
 * taken: the read's acquired and released deltas are equal.
 */
static void test_vfat(void)
{
	const char *mnt = "/mnt/dio-vfat", *path = "/mnt/dio-vfat/dio_pins.dat";
	size_t len = NPAGES * page_size;
	char *buf, *want, dev[32];
	struct pins p0;
	long acq, rel;
	ssize_t n;
	int fd;

	if (find_disk("dio-vfat", dev, sizeof(dev))) {
		ksft_test_result_fail("dio_pins_vfat_read_counted: no disk dio-vfat\n");
		return;
	}
	if (mount_disk("dio-vfat", "vfat", mnt)) {
		if (errno == ENODEV)
			ksft_test_result_skip("dio_pins_vfat_read_counted: no vfat in this kernel\n");
		else
			ksft_test_result_fail("dio_pins_vfat_read_counted: mount %s: %s\n",
					      dev, strerror(errno));
		return;
	}
	buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	want = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (fd < 0 || !buf || !want)
		ksft_exit_fail_msg("open %s: %s\n", path, strerror(errno));
	memset(want, 0x5a, len);
	/* FAT writes a direct write past i_size through the page cache. */
	if (pwrite(fd, want, len, 0) != (ssize_t)len || fsync(fd))
		ksft_exit_fail_msg("write %s: %s\n", path, strerror(errno));
	memset(buf, 1, len);
	p0 = pins_now();
	n = pread(fd, buf, len, 0);
	balanced(p0, &acq, &rel);
	ksft_print_msg("vfat read %zd bytes: pins acquired %ld released %ld\n",
		       n, acq, rel);
	ksft_test_result(n == (ssize_t)len && !memcmp(buf, want, len) &&
			 acq >= NPAGES && acq == rel,
			 "dio_pins_vfat_read_counted\n");
	close(fd);
	unlink(path);
	umount(mnt);
	munmap(buf, len);
	munmap(want, len);
}

int main(void)
{
	char dev[32];
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	ksft_print_header();
	ksft_set_plan(12);
	if (find_disk("dio-raw", dev, sizeof(dev)))
		ksft_exit_skip("no disk with serial dio-raw\n");
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0)
		ksft_exit_fail_msg("open %s: %s\n", dev, strerror(errno));

	test_read_counted(fd);
	test_write_zero_page(fd, "dio_pins_zero_page_not_pinned");
	test_misaligned(fd);
	test_unmapped_tail(fd);
	test_too_many_iovecs(fd);
	test_readonly_target(fd);
	test_sg_io_counted();
	close(fd);
	test_nfs();
	test_vfat();
	ksft_finished();
}

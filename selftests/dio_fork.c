// SPDX-License-Identifier: GPL-2.0
/*
 * dio_fork: an O_DIRECT read in flight across fork() must land in the
 * parent's buffer.
 *
 * The parent submits an asynchronous O_DIRECT read into the first half of
 * an anonymous page, forks while the read is in flight (the harness
 * throttles the test disks so that each request takes tens of
 * milliseconds), then writes to the second half of the same page. If the
 * direct I/O path only took a page reference (FOLL_GET), fork() shares
 * the page copy-on-write and the parent's write gives the parent a fresh
 * copy: the device's data lands in the page the child keeps and the
 * parent's buffer never sees it. With FOLL_PIN, fork() sees a maybe-DMA-
 * pinned page and copies it for the child instead.
 *
 * Variants: Linux AIO and io_uring on a raw virtio block device, AIO on
 * a file on ext4 (iomap direct I/O) and on ext2 (fs/direct-io.c on 6.1,
 * iomap on 6.12), and an SG_IO READ(10) on a virtio-scsi disk
 * (blk_rq_map_user_iov()), issued
 * from a second thread because SG_IO blocks, and AIO on a file of an NFS
 * mount served by the guest's own nfsd over loopback (fs/nfs/direct.c).
 * For NFS the server's page cache is dropped before each attempt, so that
 * every READ waits for the throttled disk behind the export.
 * Usage: dio_fork [iterations per variant]
 */
#include <pthread.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"

#define REGION		(1 << 20)
#define READ_LEN	2048

static long page_size;
/* NFS: the exported file on the server side, to drop its page cache. */
static int server_fd = -1;

static unsigned char pattern(long off)
{
	return 0x5a ^ (off / 512) ^ ((off / 512) >> 8);
}

static int prefill(int fd)
{
	unsigned char *buf;
	long i;
	int ret;

	buf = aligned_alloc(page_size, REGION);
	if (!buf)
		return -1;
	for (i = 0; i < REGION; i++)
		buf[i] = pattern(i);
	ret = pwrite(fd, buf, REGION, 0) == REGION ? 0 : -1;
	free(buf);
	return ret;
}

struct sg_req {
	int fd, ret;
	struct sg_io_hdr hdr;
	unsigned char cdb[10], sense[32];
};

static void *sg_thread(void *arg)
{
	struct sg_req *r = arg;

	r->ret = ioctl(r->fd, SG_IO, &r->hdr);
	return NULL;
}

enum submit { VIA_AIO, VIA_URING, VIA_SG_IO };

/* One attempt; returns 1 if the read data was lost, 0 if kept, -1 on error. */
static int attempt(int fd, enum submit via, void *ctxp, long off)
{
	struct sg_req sg;
	pthread_t thread;
	unsigned char *buf;
	int pipefd[2], lost = 0, i;
	long res;
	pid_t pid;

	buf = mmap(NULL, page_size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED || pipe(pipefd))
		return -1;
	memset(buf, 0, page_size);
	if (server_fd >= 0)
		posix_fadvise(server_fd, 0, 0, POSIX_FADV_DONTNEED);

	if (via == VIA_SG_IO) {
		sg.fd = fd;
		sg_read10(&sg.hdr, sg.cdb, sg.sense, sizeof(sg.sense), buf,
			  READ_LEN, off);
		res = pthread_create(&thread, NULL, sg_thread, &sg) ? -1 : 1;
		/* Let the thread map the buffer and queue the command. */
		usleep(5000);
	} else if (via == VIA_URING) {
		res = uring_submit_rw(ctxp, fd, 0, buf, READ_LEN, off);
	} else {
		res = aio_submit_rw(*(aio_context_t *)ctxp, fd, 0, buf,
				    READ_LEN, off);
	}
	if (res != 1) {
		ksft_print_msg("submit: %s\n", strerror(errno));
		return -1;
	}

	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		char c;

		close(pipefd[1]);
		/* Keep the shared page mapped until the parent is done. */
		if (read(pipefd[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pipefd[0]);

	/* Another byte of the same page: a COW fault in the parent. */
	buf[page_size - 1] = 1;

	if (via == VIA_SG_IO) {
		pthread_join(thread, NULL);
		res = (sg.ret == 0 && sg.hdr.status == 0) ?
			READ_LEN - sg.hdr.resid : -EIO;
	} else if (via == VIA_URING) {
		res = uring_wait(ctxp);
	} else {
		res = aio_wait(*(aio_context_t *)ctxp);
	}
	if (res != READ_LEN) {
		ksft_print_msg("read returned %ld\n", res);
		lost = -1;
	} else {
		for (i = 0; i < READ_LEN; i++)
			if (buf[i] != pattern(off + i)) {
				lost = 1;
				break;
			}
	}
	close(pipefd[1]);
	waitpid(pid, NULL, 0);
	munmap(buf, page_size);
	return lost;
}

static int open_target(const char *serial, const char *fs, char *name, size_t len)
{
	char dev[32], mnt[64], path[96];
	int fd;

	if (!strcmp(serial, "dio-sg") ? find_scsi_disk(dev, sizeof(dev)) :
	    find_disk(serial, dev, sizeof(dev)))
		return -ENODEV;
	if (!strcmp(serial, "dio-nfs")) {
		if (system("nfs-loopback"))
			return -EHOSTUNREACH;
		snprintf(name, len, "%s/dio_fork.dat", NFS_MNT);
		fd = open(name, O_RDWR | O_CREAT | O_DIRECT, 0644);
		if (fd < 0 || ftruncate(fd, REGION))
			return -errno;
		server_fd = open(NFS_SRV "/dio_fork.dat", O_RDONLY);
		return server_fd < 0 ? -errno : fd;
	}
	if (!fs) {
		snprintf(name, len, "%s", dev);
		return open(dev, O_RDWR | O_DIRECT);
	}
	snprintf(mnt, sizeof(mnt), "/mnt/%s", serial);
	mkdir(mnt, 0755);
	if (mount(dev, mnt, fs, 0, NULL) && errno != EBUSY)
		return -errno;
	snprintf(path, sizeof(path), "%s/dio_fork.dat", mnt);
	snprintf(name, len, "%s", path);
	fd = open(path, O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (fd >= 0 && ftruncate(fd, REGION)) {
		close(fd);
		return -errno;
	}
	return fd < 0 ? -errno : fd;
}

static void run_variant(const char *tname, const char *serial, const char *fs,
			enum submit via, int iterations)
{
	long acq0, rel0, acq1, rel1;
	struct uring ring;
	aio_context_t ctx;
	int fd, i, lost = 0, err = 0;
	char name[96];
	void *ctxp;

	fd = open_target(serial, fs, name, sizeof(name));
	if (fd == -ENODEV) {
		ksft_test_result_skip("%s: no disk with serial %s\n", tname, serial);
		return;
	}
	if (fd == -EHOSTUNREACH) {
		ksft_test_result_fail("%s (nfs-loopback could not serve and mount the export)\n",
				      tname);
		return;
	}
	if (fd < 0) {
		ksft_test_result_fail("%s: open: %s\n", tname, strerror(-fd));
		return;
	}
	if (prefill(fd) || (server_fd >= 0 && fsync(server_fd))) {
		ksft_test_result_fail("%s: prefill %s: %s\n", tname, name,
				      strerror(errno));
		close(fd);
		return;
	}
	if ((via == VIA_URING && uring_setup(&ring)) ||
	    (via == VIA_AIO && aio_setup(&ctx))) {
		ksft_test_result_fail("%s: %s setup: %s\n", tname,
				      via == VIA_URING ? "io_uring" : "aio",
				      strerror(errno));
		close(fd);
		return;
	}
	ctxp = via == VIA_URING ? (void *)&ring : (void *)&ctx;

	acq0 = pins_acquired();
	rel0 = pins_released();
	for (i = 0; i < iterations; i++) {
		int r = attempt(fd, via, ctxp, (i * page_size) % REGION);

		if (r < 0) {
			err = 1;
			break;
		}
		lost += r;
	}
	acq1 = pins_acquired();
	rel1 = pins_released();

	if (via == VIA_URING)
		uring_destroy(&ring);
	else if (via == VIA_AIO)
		aio_destroy(ctx);
	close(fd);
	if (server_fd >= 0) {
		close(server_fd);
		server_fd = -1;
	}
	if (fs) {
		char mnt[64];

		snprintf(mnt, sizeof(mnt), "/mnt/%s", serial);
		umount(mnt);
	}

	ksft_print_msg("%s on %s: lost %d/%d, pins acquired %ld released %ld\n",
		       tname, name, lost, i, acq1 - acq0, rel1 - rel0);
	if (err)
		ksft_test_result_fail("%s: I/O error after %d iterations\n", tname, i);
	else
		ksft_test_result(lost == 0, "%s (lost %d/%d)\n", tname, lost, i);
}

int main(int argc, char **argv)
{
	int iterations = argc > 1 ? atoi(argv[1]) : 200;

	page_size = sysconf(_SC_PAGESIZE);
	ksft_print_header();
	ksft_set_plan(6);
	run_variant("dio_fork_blkdev_aio", "dio-raw", NULL, VIA_AIO, iterations);
	run_variant("dio_fork_blkdev_io_uring", "dio-raw", NULL, VIA_URING,
		    iterations);
	run_variant("dio_fork_ext4_aio", "dio-ext4", "ext4", VIA_AIO, iterations);
	run_variant("dio_fork_ext2_aio", "dio-ext2", "ext2", VIA_AIO, iterations);
	run_variant("dio_fork_sg_io", "dio-sg", NULL, VIA_SG_IO, iterations);
	run_variant("dio_fork_nfs_aio", "dio-nfs", NULL, VIA_AIO, iterations);
	ksft_finished();
}

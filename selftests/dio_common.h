/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers shared by the direct I/O selftests: finding the harness's test
 * disks, Linux AIO and io_uring through raw system calls (no libaio or
 * liburing in the guest), and the FOLL_PIN vmstat counters.
 */
#ifndef DIO_COMMON_H
#define DIO_COMMON_H


#include <errno.h>
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <linux/io_uring.h>
#include <scsi/sg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "kselftest.h"

/* initramfs/nfs-loopback: the export (an ext4 disk) and its NFS mount. */
#define NFS_SRV		"/srv/nfs"
#define NFS_MNT		"/mnt/nfs"

/*
 * Find the block device whose virtio serial is @serial (the harness names
 * its disks "dio-raw", "dio-ext4", "dio-ext2"); fill @path with /dev/NAME.
 */
static inline int find_disk(const char *serial, char *path, size_t len)
{
	static const char *const names[] = { "vda", "vdb", "vdc", "vdd", "vde", "vdf" };
	char buf[64], sys[64];
	unsigned int i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		FILE *f;

		snprintf(sys, sizeof(sys), "/sys/block/%s/serial", names[i]);
		f = fopen(sys, "r");
		if (!f)
			continue;
		if (fgets(buf, sizeof(buf), f)) {
			buf[strcspn(buf, "\n")] = 0;
			if (!strcmp(buf, serial)) {
				fclose(f);
				snprintf(path, len, "/dev/%s", names[i]);
				return 0;
			}
		}
		fclose(f);
	}
	return -1;
}

/*
 * Mount the disk whose serial is @serial (a file system the harness made)
 * at @mnt, creating it; an existing mount there is fine.
 */
static inline int mount_disk(const char *serial, const char *fs,
			     const char *mnt)
{
	char dev[32];

	if (find_disk(serial, dev, sizeof(dev)))
		return -1;
	mkdir(mnt, 0755);
	if (mount(dev, mnt, fs, 0, NULL) && errno != EBUSY)
		return -1;
	return 0;
}

/* CLOCK_MONOTONIC in milliseconds. */
static inline long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* The harness's one SCSI disk (virtio-scsi): fill @path with /dev/sdX. */
static inline int find_scsi_disk(char *path, size_t len)
{
	char sys[64];
	char c;

	for (c = 'a'; c <= 'd'; c++) {
		snprintf(sys, sizeof(sys), "/sys/block/sd%c", c);
		if (!access(sys, F_OK)) {
			snprintf(path, len, "/dev/sd%c", c);
			return 0;
		}
	}
	return -1;
}

/* Read one counter from /proc/vmstat, after folding the per-cpu deltas. */
static inline long vmstat_read(const char *name)
{
	char key[64];
	long val, ret = -1;
	FILE *f;
	int fd;

	fd = open("/proc/sys/vm/stat_refresh", O_WRONLY);
	if (fd >= 0) {
		/* EINVAL only says some counter went negative: ignore. */
		ssize_t n = write(fd, "1", 1);

		(void)n;
		close(fd);
	}
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &val) == 2)
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	fclose(f);
	return ret;
}

static inline long pins_acquired(void)
{
	return vmstat_read("nr_foll_pin_acquired");
}

static inline long pins_released(void)
{
	return vmstat_read("nr_foll_pin_released");
}

struct pins {
	long acq, rel;
};

/* Both FOLL_PIN counters, after a stat_refresh. */
static inline struct pins pins_now(void)
{
	struct pins p = { pins_acquired(), pins_released() };

	return p;
}

/* Pins acquired and released since @p0. */
static inline struct pins pins_since(struct pins p0)
{
	struct pins p1 = pins_now();

	p1.acq -= p0.acq;
	p1.rel -= p0.rel;
	return p1;
}

/* KTAP header and plan of a test that counts pins; bail out without them. */
static inline void pins_test_start(int plan)
{
	ksft_print_header();
	ksft_set_plan(plan);
	if (pins_acquired() < 0)
		ksft_exit_fail_msg("no nr_foll_pin_acquired in /proc/vmstat\n");
}

/* Bring up lo, for the tests that talk to the guest itself. */
static inline void lo_up(void)
{
	if (system("ip link set lo up"))
		ksft_exit_fail_msg("ip link set lo up failed\n");
}

/* @n fresh anonymous private pages with @prot, or NULL. */
/*
 * Drop the clean page cache. A page is only dropped when nothing but the
 * page cache holds it, and this CPU's LRU batches hold references until
 * drained: mlock() drains them (lru_add_drain() in mlock_fixup()).
 */
static inline void drop_clean_cache(void)
{
	static char scratch[4096] __attribute__((aligned(4096)));
	int fd;

	mlock(scratch, sizeof(scratch));
	munlock(scratch, sizeof(scratch));
	fd = open("/proc/sys/vm/drop_caches", O_WRONLY);
	if (fd < 0 || write(fd, "1", 1) != 1)
		ksft_exit_fail_msg("drop_caches: %s\n", strerror(errno));
	close(fd);
}

static inline void *map_pages(int n, int prot)
{
	void *p = mmap(NULL, n * sysconf(_SC_PAGESIZE), prot,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* Fill @hdr for a SCSI READ(10) of @len bytes at byte offset @off into @buf. */
static inline void sg_read10(struct sg_io_hdr *hdr, unsigned char *cdb,
			     unsigned char *sense, size_t sense_len,
			     void *buf, size_t len, off_t off)
{
	unsigned long lba = off / 512;
	unsigned int blocks = len / 512;

	memset(cdb, 0, 10);
	cdb[0] = 0x28;
	cdb[2] = lba >> 24;
	cdb[3] = lba >> 16;
	cdb[4] = lba >> 8;
	cdb[5] = lba;
	cdb[7] = blocks >> 8;
	cdb[8] = blocks;
	memset(hdr, 0, sizeof(*hdr));
	hdr->interface_id = 'S';
	hdr->dxfer_direction = SG_DXFER_FROM_DEV;
	hdr->cmd_len = 10;
	hdr->cmdp = cdb;
	hdr->dxferp = buf;
	hdr->dxfer_len = len;
	hdr->sbp = sense;
	hdr->mx_sb_len = sense_len;
	hdr->timeout = 20000;
}

/* Linux AIO, one request at a time. */
static inline int aio_setup(aio_context_t *ctx)
{
	*ctx = 0;
	return syscall(__NR_io_setup, 8, ctx);
}

static inline int aio_submit_rw(aio_context_t ctx, int fd, int write,
				void *buf, size_t len, off_t off)
{
	struct iocb cb = { 0 }, *cbs[1] = { &cb };

	cb.aio_fildes = fd;
	cb.aio_lio_opcode = write ? IOCB_CMD_PWRITE : IOCB_CMD_PREAD;
	cb.aio_buf = (unsigned long)buf;
	cb.aio_nbytes = len;
	cb.aio_offset = off;
	return syscall(__NR_io_submit, ctx, 1, cbs);
}

/* Wait for the one request; return its result (bytes or -errno). */
static inline long aio_wait(aio_context_t ctx)
{
	struct io_event ev;
	int ret;

	do {
		ret = syscall(__NR_io_getevents, ctx, 1, 1, &ev, NULL);
	} while (ret < 0 && errno == EINTR);
	return ret == 1 ? (long)ev.res : -errno;
}

static inline void aio_destroy(aio_context_t ctx)
{
	syscall(__NR_io_destroy, ctx);
}

/* A minimal io_uring: one SQE, one CQE at a time. */
struct uring {
	int fd;
	unsigned int *sq_tail, *sq_mask, *sq_array;
	unsigned int *cq_head, *cq_tail, *cq_mask;
	struct io_uring_sqe *sqes;
	struct io_uring_cqe *cqes;
	void *sq_ring, *cq_ring;
	size_t sq_len, cq_len, sqes_len;
};

static inline int uring_setup(struct uring *r)
{
	struct io_uring_params p = { 0 };

	r->fd = syscall(__NR_io_uring_setup, 4, &p);
	if (r->fd < 0)
		return -1;
	r->sq_len = p.sq_off.array + p.sq_entries * sizeof(unsigned int);
	r->cq_len = p.cq_off.cqes + p.cq_entries * sizeof(struct io_uring_cqe);
	r->sqes_len = p.sq_entries * sizeof(struct io_uring_sqe);
	r->sq_ring = mmap(NULL, r->sq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  r->fd, IORING_OFF_SQ_RING);
	r->cq_ring = mmap(NULL, r->cq_len, PROT_READ | PROT_WRITE, MAP_SHARED,
			  r->fd, IORING_OFF_CQ_RING);
	r->sqes = mmap(NULL, r->sqes_len, PROT_READ | PROT_WRITE, MAP_SHARED,
		       r->fd, IORING_OFF_SQES);
	if (r->sq_ring == MAP_FAILED || r->cq_ring == MAP_FAILED ||
	    r->sqes == MAP_FAILED)
		return -1;
	r->sq_tail = (unsigned int *)((char *)r->sq_ring + p.sq_off.tail);
	r->sq_mask = (unsigned int *)((char *)r->sq_ring + p.sq_off.ring_mask);
	r->sq_array = (unsigned int *)((char *)r->sq_ring + p.sq_off.array);
	r->cq_head = (unsigned int *)((char *)r->cq_ring + p.cq_off.head);
	r->cq_tail = (unsigned int *)((char *)r->cq_ring + p.cq_off.tail);
	r->cq_mask = (unsigned int *)((char *)r->cq_ring + p.cq_off.ring_mask);
	r->cqes = (struct io_uring_cqe *)((char *)r->cq_ring + p.cq_off.cqes);
	return 0;
}

static inline int uring_submit_rw(struct uring *r, int fd, int write,
				  void *buf, size_t len, off_t off)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = write ? IORING_OP_WRITE : IORING_OP_READ;
	sqe->fd = fd;
	sqe->addr = (unsigned long)buf;
	sqe->len = len;
	sqe->off = off;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	return syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0);
}

static inline long uring_wait(struct uring *r)
{
	unsigned int head = *r->cq_head;
	long res;

	while (__atomic_load_n(r->cq_tail, __ATOMIC_ACQUIRE) == head) {
		if (syscall(__NR_io_uring_enter, r->fd, 0, 1,
			    IORING_ENTER_GETEVENTS, NULL, 0) < 0 && errno != EINTR)
			return -errno;
	}
	res = r->cqes[head & *r->cq_mask].res;
	__atomic_store_n(r->cq_head, head + 1, __ATOMIC_RELEASE);
	return res;
}

static inline void uring_destroy(struct uring *r)
{
	munmap(r->sqes, r->sqes_len);
	munmap(r->cq_ring, r->cq_len);
	munmap(r->sq_ring, r->sq_len);
	close(r->fd);
}

#endif /* DIO_COMMON_H */

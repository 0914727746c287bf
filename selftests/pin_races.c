// SPDX-License-Identifier: GPL-2.0
/*
 * pin_races: direct I/O in flight while the buffer's mapping, or the file,
 * changes under it.
 *
 * Each attempt submits one O_DIRECT read or write of IO_LEN bytes (Linux
 * AIO or io_uring, in turn) on a throttled test disk, so that the request
 * is still in flight when the test munmaps, mremaps, madvise(DONTNEED)s,
 * mprotects or forks over the buffer, or truncates the file or punches a
 * hole in it; then it waits for the completion. Buffers: private
 * anonymous pages, a THP, a hugetlb page, shmem (memfd), a MAP_SHARED
 * page-cache file on ext4 and, for writes, the shared zero page. Targets:
 * the raw virtio disk, a file on ext4 (iomap) and one on ext2
 * (fs/direct-io.c).
 *
 * Each row (one target, one race) checks:
 *  - every I/O completes with IO_LEN bytes, or -EFAULT (an io_uring
 *    request punted to a worker may pin after the race took the buffer);
 *    fewer bytes only after a truncate, or after a race that unmaps or
 *    write-protects the buffer (that worker may fault between two
 *    extents, and direct I/O then returns what it did);
 *  - the data, where its destination is still defined: a read lands in
 *    the pages the buffer maps afterwards (no race, mprotect, mremap, fork
 *    in the parent, DONTNEED on shared memory); a write stores what the
 *    buffer held at submission, read back from the disk; after a truncate
 *    or a punched hole, and for a write from private memory given to
 *    DONTNEED, each sector holds either that data or zeros;
 *  - as many pins released as acquired over the row.
 * Two rows on the raw disk read into one iovec per buffer kind: with
 * 512-byte aligned segments the data must land in each; with one segment
 * misaligned the read must fail with EINVAL and leave no pin behind.
 *
 * On Debian's 6.1 without the series the fork rows lose data (the page
 * the parent writes after fork() is copied away from the device, as in
 * dio_fork); every other row passes there too.
 * PIN_RACES_SECONDS=N repeats each row for N seconds (a soak); by default
 * each row runs its matrix once.
 */
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include "dio_common.h"
#include "kselftest.h"

#define BUF_LEN		(64 << 10)
/* The last sector of the buffer stays out of the I/O: fork() writes it. */
#define IO_LEN		(BUF_LEN - 512)
#define NSLOT		16
#define AREA		(NSLOT * BUF_LEN)
#define HUGE		(2UL << 20)
#define RAW_BASE	(32L << 20)
#define EXT4_MNT	"/mnt/pin_races_ext4"
#define EXT2_MNT	"/mnt/pin_races_ext2"

enum kind { K_ANON, K_THP, K_HUGETLB, K_SHMEM, K_FILE, K_ZERO, NKIND };
static const char *const kind_name[] = {
	"anon", "thp", "hugetlb", "shmem", "file", "zero"
};

enum race { R_NONE, R_MUNMAP, R_MREMAP, R_DONTNEED, R_MPROTECT, R_FORK,
	    R_TRUNCATE, R_PUNCH };
static const char *const race_name[] = {
	"none", "munmap", "mremap", "madv_dontneed", "mprotect", "fork",
	"truncate", "punch_hole"
};

struct target {
	const char *name;
	int fd;
	off_t rbase, wbase;	/* read area (prefilled), write area */
};

struct buf {
	void *map;		/* what to unmap, maplen bytes */
	size_t maplen;
	unsigned char *p;	/* the buffer, BUF_LEN bytes */
	void *resv;		/* mremap destination reservation */
	size_t resvlen;
};

struct tally {
	int io, full, efault, shortio, bad, checked, wrong, unavail;
};

static aio_context_t aio;
static struct uring ring;
static unsigned int engine_turn, seed = 1;
static int have_ext4;
static unsigned char *scratch;	/* aligned, BUF_LEN: prefill and read back */

static unsigned char pat(off_t off, unsigned int s)
{
	return (unsigned char)((off >> 9) * 13 + (off & 511) + s * 101 + 1);
}

static void fill(unsigned char *p, off_t off, unsigned int s, size_t len)
{
	size_t i;

	for (i = 0; i < len; i++)
		p[i] = pat(off + i, s);
}

/* Bytes of @p (from disk offset @off, seed @s) that are wrong; with
 * @or_zero a sector of zeros is also right.
 */
static long wrong_bytes(const unsigned char *p, off_t off, unsigned int s,
			size_t len, int or_zero)
{
	long wrong = 0;
	size_t i, j;

	for (i = 0; i < len; i += 512) {
		long w = 0, nz = 0;

		for (j = i; j < i + 512 && j < len; j++) {
			w += p[j] != pat(off + j, s);
			nz += p[j] != 0;
		}
		if (w && !(or_zero && !nz))
			wrong += w;
	}
	return wrong;
}

static int make_buf(struct buf *b, enum kind k, int write)
{
	int fd;

	memset(b, 0, sizeof(*b));
	switch (k) {
	case K_ANON:
	case K_ZERO:
		b->maplen = BUF_LEN;
		b->map = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		break;
	case K_THP: {
		unsigned char *m = mmap(NULL, 2 * HUGE, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		unsigned long a;

		if (m == MAP_FAILED)
			return -1;
		a = ((unsigned long)m + HUGE - 1) & ~(HUGE - 1);
		/* Keep exactly one aligned 2 MiB range mapped. */
		if (a > (unsigned long)m)
			munmap(m, a - (unsigned long)m);
		munmap((void *)(a + HUGE), (unsigned long)m + HUGE - a);
		b->map = (void *)a;
		b->maplen = HUGE;
		madvise(b->map, HUGE, MADV_HUGEPAGE);
		break;
	}
	case K_HUGETLB:
		b->maplen = HUGE;
		b->map = mmap(NULL, HUGE, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
		break;
	case K_SHMEM:
	case K_FILE:
		if (k == K_SHMEM)
			fd = memfd_create("pin_races", 0);
		else if (have_ext4)
			fd = open(EXT4_MNT "/map.dat", O_RDWR | O_CREAT | O_TRUNC, 0644);
		else
			return -1;
		if (fd < 0 || ftruncate(fd, BUF_LEN)) {
			if (fd >= 0)
				close(fd);
			return -1;
		}
		b->maplen = BUF_LEN;
		b->map = mmap(NULL, BUF_LEN, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		close(fd);
		break;
	default:
		return -1;
	}
	if (b->map == MAP_FAILED) {
		b->map = NULL;
		return -1;
	}
	b->p = b->map;
	if (k == K_ZERO) {
		unsigned int sum = 0;
		size_t i;

		/* Read faults map the shared zero page. */
		for (i = 0; i < BUF_LEN; i += 4096)
			sum += __atomic_load_n(&b->p[i], __ATOMIC_RELAXED);
		if (sum)
			return -1;
	} else if (write) {
		fill(b->p, 0, seed, BUF_LEN);
	} else {
		memset(b->p, 0xee, BUF_LEN);
	}
	return 0;
}

static void free_buf(struct buf *b)
{
	if (b->map)
		munmap(b->map, b->maplen);
	if (b->resv)
		munmap(b->resv, b->resvlen);
}

static int submit(int fd, int write, void *p, off_t off, int *engine)
{
	*engine = engine_turn++ & 1;
	if (*engine)
		return uring_submit_rw(&ring, fd, write, p, IO_LEN, off) == 1 ? 0 : -1;
	return aio_submit_rw(aio, fd, write, p, IO_LEN, off) == 1 ? 0 : -1;
}

static long complete(int engine)
{
	return engine ? uring_wait(&ring) : aio_wait(aio);
}

/* Write the pattern of seed 0 at @off, for a read to find. */
static int prefill(int fd, off_t off, size_t len)
{
	size_t done;

	for (done = 0; done < len; done += BUF_LEN) {
		fill(scratch, off + done, 0, BUF_LEN);
		if (pwrite(fd, scratch, BUF_LEN, off + done) != BUF_LEN)
			return -1;
	}
	return 0;
}

/*
 * The race, while the request is in flight. Return 1 when the data of a
 * read is then defined at b->p, 0 when it is not, -1 when the race itself
 * failed (errno set). @pipefd holds the fork child's pipe.
 */
static int race(enum race r, enum kind k, struct buf *b, struct target *t,
		off_t off, pid_t *child, int *pipefd)
{
	void *dst;

	switch (r) {
	case R_NONE:
		return 1;
	case R_MUNMAP:
		munmap(b->map, b->maplen);
		b->map = NULL;
		return 0;
	case R_MREMAP:
		b->resvlen = b->maplen + HUGE;
		b->resv = mmap(NULL, b->resvlen, PROT_NONE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (b->resv == MAP_FAILED) {
			b->resv = NULL;
			return -1;
		}
		dst = (void *)(((unsigned long)b->resv + HUGE - 1) & ~(HUGE - 1));
		if (mremap(b->map, b->maplen, b->maplen,
			   MREMAP_MAYMOVE | MREMAP_FIXED, dst) == MAP_FAILED)
			return -1;
		/* Now part of the reservation, unmapped with it. */
		b->map = NULL;
		b->p = dst;
		return 1;
	case R_DONTNEED:
		if (madvise(b->map, b->maplen, MADV_DONTNEED))
			return -1;
		/* Shared memory keeps its pages; private memory refaults. */
		return k == K_SHMEM || k == K_FILE;
	case R_MPROTECT:
		return mprotect(b->map, b->maplen, PROT_NONE) ? -1 : 1;
	case R_FORK:
		if (pipe(pipefd))
			return -1;
		*child = fork();
		if (*child < 0)
			return -1;
		if (!*child) {
			char c;

			close(pipefd[1]);
			_exit(read(pipefd[0], &c, 1) < 0);
		}
		close(pipefd[0]);
		/* The parent's write copies a page it shares with the child. */
		b->p[BUF_LEN - 1] = 0x77;
		return 1;
	case R_TRUNCATE:
		return ftruncate(t->fd, off) ? -1 : 1;
	case R_PUNCH:
		return fallocate(t->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
				 off, BUF_LEN) ? -1 : 1;
	}
	return -1;
}

static void attempt(struct target *t, enum race r, enum kind k, int write,
		    struct tally *ty, char *why, size_t wlen)
{
	int cut = r == R_TRUNCATE || r == R_PUNCH;
	/* The worker below may pin the first extent and fault on the next. */
	int may_fault = r == R_MUNMAP || r == R_MREMAP || r == R_MPROTECT;
	/*
	 * An io_uring request that cannot start without blocking goes to a
	 * worker, which pins the buffer only then: after DONTNEED a private
	 * buffer it writes from may already be refaulted zeros.
	 */
	int or_zero = cut || (write && r == R_DONTNEED && k != K_SHMEM && k != K_FILE);
	off_t off = (write ? t->wbase : t->rbase) + (seed % NSLOT) * BUF_LEN;
	int defined, engine, pipefd[2] = { -1, -1 };
	pid_t child = -1;
	struct buf b;
	long res, w;

	if (make_buf(&b, k, write)) {
		ty->unavail++;
		return;
	}
	/* A truncate or a hole takes the slot's data: write it again first. */
	if (cut && !write && prefill(t->fd, off, BUF_LEN)) {
		snprintf(why, wlen, "prefill: %s", strerror(errno));
		ty->bad++;
		free_buf(&b);
		return;
	}
	if (submit(t->fd, write, b.p, off, &engine)) {
		snprintf(why, wlen, "%s submit: %s", kind_name[k], strerror(errno));
		ty->bad++;
		free_buf(&b);
		return;
	}
	defined = race(r, k, &b, t, off, &child, pipefd);
	if (defined < 0)
		snprintf(why, wlen, "%s on %s: %s", race_name[r], kind_name[k],
			 strerror(errno));
	res = complete(engine);
	ty->io++;
	if (child > 0) {
		close(pipefd[1]);
		waitpid(child, NULL, 0);
	}
	if (r == R_MPROTECT && defined > 0)
		mprotect(b.map, b.maplen, PROT_READ | PROT_WRITE);
	if (r == R_TRUNCATE && ftruncate(t->fd, 2 * AREA))
		defined = -1;
	if (defined < 0) {
		ty->bad++;
		goto out;
	}
	if (res == -EFAULT) {
		ty->efault++;
		goto out;
	}
	if (res < 0 || res > IO_LEN || (res < IO_LEN && !cut && !may_fault)) {
		snprintf(why, wlen, "%s %s %s (%s): result %ld", race_name[r],
			 write ? "write" : "read", kind_name[k],
			 engine ? "io_uring" : "aio", res);
		ty->bad++;
		goto out;
	}
	if (res < IO_LEN)
		ty->shortio++;
	else
		ty->full++;
	if (write) {
		/* What reached the disk: the buffer as it was at submission. */
		if (pread(t->fd, scratch, BUF_LEN, off) < res) {
			snprintf(why, wlen, "read back: %s", strerror(errno));
			ty->bad++;
			goto out;
		}
		if (k == K_ZERO) {
			long i;

			for (w = 0, i = 0; i < res; i++)
				w += scratch[i] != 0;
		} else {
			w = wrong_bytes(scratch, 0, seed, res, or_zero);
		}
	} else if (defined) {
		w = wrong_bytes(b.p, off, 0, res, cut);
	} else {
		goto out;
	}
	ty->checked++;
	if (w) {
		ty->wrong++;
		snprintf(why, wlen, "%s %s into %s (%s): %ld of %ld bytes wrong",
			 race_name[r], write ? "write" : "read", kind_name[k],
			 engine ? "io_uring" : "aio", w, res);
	}
out:
	free_buf(&b);
	seed++;
}

static void run_row(struct target *t, enum race r, int seconds)
{
	struct timespec t0, t1;
	struct tally ty = { 0 };
	char why[160] = "";
	struct pins p0, d;
	int k, write;

	if (t->fd < 0) {
		ksft_test_result_skip("pin_races_%s_%s: no target\n", t->name,
				      race_name[r]);
		return;
	}
	p0 = pins_now();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (write = 0; write <= 1; write++)
			for (k = 0; k < NKIND; k++) {
				if (k == K_ZERO && !write)
					continue;
				attempt(t, r, k, write, &ty, why, sizeof(why));
			}
		clock_gettime(CLOCK_MONOTONIC, &t1);
	} while (t1.tv_sec - t0.tv_sec < seconds);
	d = pins_since(p0);
	ksft_print_msg("%s/%s: %d I/Os: %d full, %d short, %d EFAULT, %d bad; data checked %d, wrong %d; %d buffers unavailable; pins +%ld -%ld\n",
		       t->name, race_name[r], ty.io, ty.full, ty.shortio,
		       ty.efault, ty.bad, ty.checked, ty.wrong, ty.unavail,
		       d.acq, d.rel);
	if (d.acq != d.rel && !why[0])
		snprintf(why, sizeof(why), "%ld pins not released", d.acq - d.rel);
	ksft_test_result(ty.io > 0 && !ty.bad && !ty.wrong && d.acq == d.rel,
			 "pin_races_%s_%s%s%s\n", t->name, race_name[r],
			 why[0] ? " # " : "", why);
}

/*
 * One preadv() whose iovecs are one buffer of each kind, of different
 * lengths at different offsets. @misalign puts the second segment 100
 * bytes off: O_DIRECT must refuse the read and keep no pin.
 */
static void run_iovec_row(struct target *t, int misalign)
{
	const char *name = misalign ? "pin_races_iovec_misaligned_refused" :
				      "pin_races_iovec_mixed";
	struct buf b[NKIND - 1];
	struct iovec iov[NKIND - 1];
	long res, w = 0, len = 0;
	int k, n = 0;
	struct pins p0, d;

	if (t->fd < 0) {
		ksft_test_result_skip("%s: no target\n", name);
		return;
	}
	for (k = 0; k < NKIND - 1; k++) {
		if (make_buf(&b[n], k, 0))
			continue;
		iov[n].iov_base = b[n].p + 512 * (n + 1);
		iov[n].iov_len = 512 * (2 * n + 1);
		if (misalign && n == 1)
			iov[n].iov_base = b[n].p + 100;
		len += iov[n].iov_len;
		n++;
	}
	p0 = pins_now();
	res = preadv(t->fd, iov, n, t->rbase);
	d = pins_since(p0);
	if (misalign) {
		ksft_print_msg("%s: %d iovecs, result %ld (%s), pins +%ld -%ld\n",
			       name, n, res, res < 0 ? strerror(errno) : "-",
			       d.acq, d.rel);
		ksft_test_result(res < 0 && errno == EINVAL && d.acq == d.rel,
				 "%s\n", name);
	} else {
		off_t off = t->rbase;

		for (k = 0; res == len && k < n; k++) {
			w += wrong_bytes(iov[k].iov_base, off, 0, iov[k].iov_len, 0);
			off += iov[k].iov_len;
		}
		ksft_print_msg("%s: %d iovecs, %ld of %ld bytes, %ld wrong, pins +%ld -%ld\n",
			       name, n, res, len, w, d.acq, d.rel);
		ksft_test_result(res == len && !w && d.acq == d.rel, "%s\n", name);
	}
	for (k = 0; k < n; k++)
		free_buf(&b[k]);
}

static int open_file_target(struct target *t, const char *serial,
			    const char *fs, const char *mnt)
{
	t->fd = -1;
	if (mount_disk(serial, fs, mnt))
		return -1;
	t->fd = open(strcmp(fs, "ext4") ? EXT2_MNT "/data.dat" : EXT4_MNT "/data.dat",
		     O_RDWR | O_CREAT | O_DIRECT, 0644);
	if (t->fd < 0 || ftruncate(t->fd, 2 * AREA) || prefill(t->fd, 0, AREA)) {
		ksft_print_msg("%s: %s\n", t->name, strerror(errno));
		t->fd = -1;
		return -1;
	}
	t->rbase = 0;
	t->wbase = AREA;
	return 0;
}

int main(int argc, char **argv)
{
	struct target raw = { .name = "blkdev", .fd = -1 };
	struct target ext4 = { .name = "ext4", .fd = -1 };
	struct target ext2 = { .name = "ext2", .fd = -1 };
	const char *secs_env = getenv("PIN_RACES_SECONDS");
	int secs = secs_env ? atoi(secs_env) : 0;
	struct target *targets[] = { &raw, &ext4, &ext2 };
	struct pins p0, d;
	char dev[32];
	unsigned int i, r;
	FILE *f;
	long nr = 0;

	pins_test_start(3 * 6 + 3 + 2 + 1);
	scratch = aligned_alloc(4096, BUF_LEN);
	if (!scratch || aio_setup(&aio) || uring_setup(&ring))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	/* At least 4 huge pages for the hugetlb buffers; restored at the end. */
	f = fopen("/proc/sys/vm/nr_hugepages", "r+");
	if (f && fscanf(f, "%ld", &nr) == 1 && nr < 4) {
		rewind(f);
		fprintf(f, "%d\n", 4);
	}
	if (f)
		fclose(f);

	p0 = pins_now();
	if (!find_disk("dio-raw", dev, sizeof(dev))) {
		raw.fd = open(dev, O_RDWR | O_DIRECT);
		raw.rbase = RAW_BASE;
		raw.wbase = RAW_BASE + AREA;
		if (raw.fd >= 0 && prefill(raw.fd, raw.rbase, AREA))
			raw.fd = -1;
	}
	have_ext4 = !open_file_target(&ext4, "dio-ext4", "ext4", EXT4_MNT);
	open_file_target(&ext2, "dio-ext2", "ext2", EXT2_MNT);

	for (i = 0; i < 3; i++)
		for (r = R_NONE; r <= R_FORK; r++)
			run_row(targets[i], r, secs);
	run_row(&ext4, R_TRUNCATE, secs);
	run_row(&ext2, R_TRUNCATE, secs);
	/* ext2 has no hole punching. */
	run_row(&ext4, R_PUNCH, secs);
	run_iovec_row(&raw, 0);
	run_iovec_row(&raw, 1);

	for (i = 0; i < 3; i++)
		if (targets[i]->fd >= 0)
			close(targets[i]->fd);
	umount(EXT4_MNT);
	umount(EXT2_MNT);
	d = pins_since(p0);
	ksft_test_result(d.acq == d.rel, "pin_races_balance (pins +%ld -%ld)\n",
			 d.acq, d.rel);
	if (nr < 4) {
		f = fopen("/proc/sys/vm/nr_hugepages", "w");
		if (f) {
			fprintf(f, "%ld\n", nr);
			fclose(f);
		}
	}
	ksft_finished();
}

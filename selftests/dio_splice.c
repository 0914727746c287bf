// SPDX-License-Identifier: GPL-2.0
/*
 * dio_splice: direct I/O through a pipe must keep the pipe's pages until
 * the device is done with them.
 *
 * splice() and sendfile() from an O_DIRECT file read into pages that the
 * pipe owns (ITER_PIPE). For a read that reaches past EOF, iomap's direct
 * I/O (ext4) submits the whole request, then calls iov_iter_revert() for
 * the part past i_size before it waits for the bio; on a pipe the revert
 * releases those pipe buffers. On the stock kernel the bio holds its own
 * page references, so the pages live until the bio completes. An
 * iov_iter_extract_pages() that takes neither a reference nor a pin on
 * pipe pages (as the series' first version did, with the bio marked
 * BIO_NO_PAGE_REF) lets the pages go back to the allocator while the
 * device still writes into them: whoever gets them next (a pipe buffer,
 * a page table) is overwritten with file data.
 *
 * Detection does not wait for a crash. A child pinned to the same CPU as
 * the I/O (freed pages go to that CPU's per-cpu free lists) runs while
 * the parent blocks in each I/O, and then allocates fresh pipe buffer
 * pages (from the same unmovable free lists as the splice's pipe pages),
 * each filled with its own pattern and a per-page marker; after the I/O
 * has completed it checks and frees them. The file's blocks, EOF or
 * not, hold a pattern of their own. A row FAILs when any page the child
 * held changed (those holding the file's pattern are counted apart),
 * when the child died or did not run inside most I/Os, when the data
 * spliced out is not the file's first i_size bytes, or when the FOLL_PIN
 * counters do not balance over the row. On the series with the
 * reference-less ITER_PIPE extraction the ext4 and io_uring read rows
 * find the file's data in the child's pages in nearly every attempt; the
 * freed pages the child does not take corrupt whatever else gets them,
 * and the guest may oops later (the harness names the test that crashed).
 *
 * The file: 64 KiB written through the file system; then, with the disk
 * unmounted, debugfs sets its i_size to ISIZE (not block aligned) so
 * that its blocks past EOF stay mapped and each read reaches them.
 *
 * Rows: splice() and sendfile() on ext4 (iomap) and on ext2
 * (fs/direct-io.c), IORING_OP_SPLICE on ext4, splice() and sendfile() of
 * the last ISIZE bytes of the raw block device; and writes: user pages
 * vmsplice()d into a pipe and spliced to an O_DIRECT ext4 file, directly
 * and through tee() (the first pipe drained, the user pages unmapped),
 * read back with O_DIRECT. Only the ext4 and io_uring reads reach the
 * revert; the other rows guard the same pages on paths that do not.
 *
 * Usage: dio_splice [attempts per read row; write rows do a third]
 */
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <sys/sendfile.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"

#define FILE_LEN	65536		/* written, all blocks mapped */
#define ISIZE		1536		/* i_size set by debugfs */
#define SPLICE_LEN	65536		/* one default pipe's worth */
#define WLEN		65536		/* one vmsplice()/splice() write */
#define WSLOTS		16		/* the write file: WSLOTS * WLEN */

#define FILE_TAG	0xf11eda7aULL	/* high half of each file word */
#define CHILD_TAG	0xc41dc41dULL	/* ... of each allocator word */
#define MARK_TAG	0x3a4b5c6dULL	/* ... of an allocator page's marker */
#define WRITE_TAG	0x7e57da7aULL	/* ... of each word written */

/*
 * The allocator fills GROUP pipes of PIPE_PAGES fresh pages while each
 * I/O of the parent is in flight.
 */
#define GROUP		2
#define PIPE_PAGES	16

static long page_size;
static int words;		/* 64-bit words per page */
static unsigned char *region;	/* the file's FILE_LEN bytes */

static uint64_t file_word(long i)
{
	return FILE_TAG << 32 | (uint32_t)i;
}

static uint64_t child_word(long serial, int i)
{
	if (!i)
		return MARK_TAG << 32 | (uint32_t)serial;
	return CHILD_TAG << 32 | (uint32_t)(serial << 9 | i);
}

static void fill_written(uint64_t *w, int iter)
{
	int i;

	for (i = 0; i < WLEN / 8; i++)
		w[i] = WRITE_TAG << 32 | (uint32_t)iter << 16 | i;
}

static ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n <= 0)
			return n < 0 ? -1 : (ssize_t)done;
		done += n;
	}
	return done;
}

/*
 * The parent's I/O rounds and what the allocator child saw, in memory
 * shared by both.
 */
struct alloc_stats {
	int ready, stop;
	long round, done;	/* the parent's I/O: started, completed */
	long rounds;		/* rounds the child allocated in */
	long pages, file_pages, bad_pages;
	long bad_serial;
	int bad_word;
	uint64_t bad_val;
	char err[96];
};

static struct alloc_stats *st;

/* A pipe of the child and the serials of the pages it holds. */
struct slot {
	int fd[2], npages;
	long first;
};

static void fill_page(uint64_t *w, long serial)
{
	int i;

	for (i = 0; i < words; i++)
		w[i] = child_word(serial, i);
}

static void check_page(const uint64_t *w, long serial)
{
	int i, first = -1, file = 0;

	for (i = 0; i < words; i++) {
		if (w[i] == child_word(serial, i))
			continue;
		if (first < 0)
			first = i;
		if (w[i] >> 32 == FILE_TAG)
			file = 1;
	}
	st->pages++;
	if (first < 0)
		return;
	if (!st->file_pages && !st->bad_pages) {
		st->bad_serial = serial;
		st->bad_word = first;
		st->bad_val = w[first];
	}
	if (file)
		st->file_pages++;
	else
		st->bad_pages++;
}

/* Each write() of a page to an empty slot allocates a pipe buffer page. */
static int fill_slot(struct slot *s, long *serial, uint64_t *buf)
{
	s->first = *serial;
	for (s->npages = 0; s->npages < PIPE_PAGES; s->npages++) {
		fill_page(buf, (*serial)++);
		if (write(s->fd[1], buf, page_size) != page_size) {
			snprintf(st->err, sizeof(st->err), "pipe write: %s",
				 strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* Check every page of @s and free them. */
static void release_slot(struct slot *s, uint64_t *buf)
{
	int i;

	for (i = 0; i < s->npages; i++) {
		if (read_full(s->fd[0], buf, page_size) != page_size) {
			snprintf(st->err, sizeof(st->err), "pipe read: %s",
				 strerror(errno));
			break;
		}
		check_page(buf, s->first + i);
	}
	s->npages = 0;
}

/*
 * The child. It runs when the parent (or io-wq) blocks in an I/O, as the
 * two share a CPU: in each round it first takes fresh pages (what the
 * I/O freed early is at the head of this CPU's free list), then checks
 * and frees the pages of the round before, whose I/O has completed.
 *
 * Only pipe buffers: they come from the same unmovable free lists as the
 * splice's pipe pages. Anonymous pages come from the movable lists and
 * would not see them; mapping or unmapping them allocates page tables
 * and mmu_gather batches, which the device then overwrites, crashing
 * the child or the kernel instead of being reported.
 */
static void __attribute__((noreturn)) allocator(void)
{
	uint64_t *buf = aligned_alloc(page_size, page_size);
	struct slot slots[2][GROUP];
	long serial = 0, seen = 0;
	int g = 0, i, j;

	memset(slots, 0, sizeof(slots));
	for (i = 0; i < 2; i++)
		for (j = 0; j < GROUP; j++)
			if (pipe2(slots[i][j].fd, O_NONBLOCK)) {
				snprintf(st->err, sizeof(st->err), "pipe: %s",
					 strerror(errno));
				_exit(1);
			}
	if (!buf)
		_exit(1);
	__atomic_store_n(&st->ready, 1, __ATOMIC_RELEASE);

	while (!__atomic_load_n(&st->stop, __ATOMIC_ACQUIRE)) {
		long r = __atomic_load_n(&st->round, __ATOMIC_ACQUIRE);

		if (r == seen || __atomic_load_n(&st->done, __ATOMIC_ACQUIRE) >= r) {
			sched_yield();
			continue;
		}
		seen = r;
		for (j = 0; j < GROUP; j++)
			if (fill_slot(&slots[g][j], &serial, buf))
				goto out;
		g ^= 1;
		for (j = 0; j < GROUP; j++)
			release_slot(&slots[g][j], buf);
		st->rounds++;
	}
out:
	/* No I/O is in flight any more: check what is held now. */
	for (i = 0; i < 2; i++)
		for (j = 0; j < GROUP; j++)
			release_slot(&slots[i][j], buf);
	_exit(st->err[0] ? 1 : 0);
}

/* The parent, around each I/O. */
static void io_begin(long round)
{
	__atomic_store_n(&st->round, round, __ATOMIC_RELEASE);
}

static void io_end(long round)
{
	__atomic_store_n(&st->done, round, __ATOMIC_RELEASE);
}

/* One row's outcome. */
struct row {
	const char *name;
	int attempts, done, bad_data;
	long extra;		/* most bytes a pipe held past the count */
	long long ms;
	struct pins pins;
	struct alloc_stats al;
	char err[160], child[160];
};

static pid_t start_allocator(struct row *row)
{
	int status;
	pid_t pid;

	memset(st, 0, sizeof(*st));
	pid = fork();
	if (pid < 0) {
		snprintf(row->err, sizeof(row->err), "fork: %s", strerror(errno));
		return -1;
	}
	if (!pid) {
		/*
		 * A child the kernel oopsed in would keep the suite's output
		 * pipe open forever: it reports through @st only.
		 */
		int null = open("/dev/null", O_WRONLY);

		if (null >= 0) {
			dup2(null, STDOUT_FILENO);
			dup2(null, STDERR_FILENO);
			close(null);
		}
		allocator();
	}
	while (!__atomic_load_n(&st->ready, __ATOMIC_ACQUIRE)) {
		if (waitpid(pid, &status, WNOHANG) == pid) {
			snprintf(row->child, sizeof(row->child),
				 "allocator did not start: %s", st->err);
			return -1;
		}
		usleep(1000);
	}
	return pid;
}

static void stop_allocator(struct row *row, pid_t pid)
{
	int status, i;
	pid_t r = 0;

	__atomic_store_n(&st->stop, 1, __ATOMIC_RELEASE);
	/* A child stuck in the kernel must not hang the suite. */
	for (i = 0; i < 3000 && !r; i++) {
		r = waitpid(pid, &status, WNOHANG);
		if (!r)
			usleep(10000);
	}
	if (!r) {
		kill(pid, SIGKILL);
		snprintf(row->child, sizeof(row->child),
			 "allocator did not exit in 30 s");
	} else if (r != pid) {
		snprintf(row->child, sizeof(row->child), "waitpid: %s",
			 strerror(errno));
	} else if (WIFSIGNALED(status)) {
		snprintf(row->child, sizeof(row->child),
			 "allocator killed by signal %d", WTERMSIG(status));
	} else if (WEXITSTATUS(status)) {
		snprintf(row->child, sizeof(row->child),
			 "allocator failed: %s", st->err);
	}
	row->al = *st;
}

static void report(struct row *row)
{
	struct alloc_stats *a = &row->al;
	long leaked = row->pins.acq - row->pins.rel;
	/* Without the child running inside most I/Os the row proves nothing. */
	int idle = a->rounds * 2 < row->done;
	char note[160];

	ksft_print_msg("%s: %d/%d attempts in %lld ms, %d with wrong data, pipe held %ld bytes past the count\n",
		       row->name, row->done, row->attempts, row->ms,
		       row->bad_data, row->extra);
	ksft_print_msg("%s: allocator ran in %ld attempts, checked %ld pages: %ld overwritten with file data, %ld otherwise changed\n",
		       row->name, a->rounds, a->pages, a->file_pages,
		       a->bad_pages);
	if (a->file_pages || a->bad_pages)
		ksft_print_msg("%s: first: page %ld, word %d = %#llx\n",
			       row->name, a->bad_serial, a->bad_word,
			       (unsigned long long)a->bad_val);
	ksft_print_msg("%s: pins acquired %ld released %ld\n", row->name,
		       row->pins.acq, row->pins.rel);
	if (row->err[0])
		ksft_print_msg("%s: %s\n", row->name, row->err);
	if (row->child[0])
		ksft_print_msg("%s: %s\n", row->name, row->child);

	if (row->child[0])
		snprintf(note, sizeof(note), "%s", row->child);
	else if (a->file_pages || a->bad_pages)
		snprintf(note, sizeof(note),
			 "%ld of %ld allocated pages overwritten, %ld with file data",
			 a->file_pages + a->bad_pages, a->pages, a->file_pages);
	else if (row->err[0])
		snprintf(note, sizeof(note), "%s", row->err);
	else if (row->bad_data)
		snprintf(note, sizeof(note), "wrong data in %d/%d attempts",
			 row->bad_data, row->done);
	else if (leaked)
		snprintf(note, sizeof(note), "%ld pins leaked", leaked);
	else if (idle)
		snprintf(note, sizeof(note),
			 "allocator ran in only %ld of %d attempts", a->rounds,
			 row->done);
	else
		snprintf(note, sizeof(note), "%d attempts, %ld pages checked",
			 row->done, a->pages);
	ksft_test_result(!row->child[0] && !a->file_pages && !a->bad_pages &&
			 !row->err[0] && !row->bad_data && !leaked && !idle,
			 "%s (%s)\n", row->name, note);
}

enum shape { SH_SPLICE, SH_SENDFILE, SH_URING, SH_VMSPLICE, SH_TEE };

/* Where each read starts, its offset in region, and the bytes before EOF. */
struct target {
	int fd;
	off_t start, pat;
	size_t want;
};

static long uring_splice(struct uring *r, int fd_in, off_t off_in, int fd_out,
			 unsigned int len)
{
	unsigned int tail = *r->sq_tail, idx = tail & *r->sq_mask;
	struct io_uring_sqe *sqe = &r->sqes[idx];

	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = IORING_OP_SPLICE;
	sqe->fd = fd_out;
	sqe->off = -1ULL;	/* fd_out is a pipe: no offset */
	sqe->splice_fd_in = fd_in;
	sqe->splice_off_in = off_in;
	sqe->len = len;
	r->sq_array[idx] = idx;
	__atomic_store_n(r->sq_tail, tail + 1, __ATOMIC_RELEASE);
	if (syscall(__NR_io_uring_enter, r->fd, 1, 0, 0, NULL, 0) != 1)
		return -errno;
	return uring_wait(r);
}

/* One read; 0 if right, 1 if the data is wrong, -1 on error. */
static int read_once(struct row *row, enum shape sh, const struct target *t,
		     int pfd[2], int out, struct uring *r, unsigned char *buf)
{
	loff_t off = t->start;
	ssize_t n, got;
	int avail = 0;

	if (sh == SH_SPLICE) {
		n = splice(t->fd, &off, pfd[1], NULL, SPLICE_LEN, 0);
	} else if (sh == SH_URING) {
		n = uring_splice(r, t->fd, t->start, pfd[1], SPLICE_LEN);
		if (n < 0) {
			errno = -n;
			n = -1;
		}
	} else {
		if (lseek(out, 0, SEEK_SET) || ftruncate(out, 0)) {
			snprintf(row->err, sizeof(row->err), "memfd: %s",
				 strerror(errno));
			return -1;
		}
		n = sendfile(out, t->fd, &off, SPLICE_LEN);
	}
	if (n < 0) {
		snprintf(row->err, sizeof(row->err), "attempt %d: %s", row->done,
			 strerror(errno));
		return -1;
	}
	if (sh == SH_SENDFILE)
		got = pread(out, buf, SPLICE_LEN, 0);
	else if (ioctl(pfd[0], FIONREAD, &avail))
		got = -1;
	else
		got = read_full(pfd[0], buf, avail);
	if (got < n) {
		snprintf(row->err, sizeof(row->err),
			 "attempt %d: %zd bytes moved, %zd read back", row->done,
			 n, got);
		return -1;
	}
	if (got - n > row->extra)
		row->extra = got - n;
	return n != (ssize_t)t->want || memcmp(buf, region + t->pat, t->want);
}

static void read_row(const char *name, enum shape sh, const struct target *t,
		     int attempts)
{
	struct row row = { .name = name, .attempts = attempts };
	unsigned char *buf = aligned_alloc(page_size, SPLICE_LEN);
	int pfd[2] = { -1, -1 }, out = -1, i;
	struct uring ring = { .fd = -1 };
	struct pins p0 = pins_now();
	long long t0 = now_ms();
	pid_t pid = -1;

	if (sh == SH_SENDFILE) {
		out = memfd_create("dio_splice", 0);
		if (out < 0)
			snprintf(row.err, sizeof(row.err), "memfd_create: %s",
				 strerror(errno));
	} else if (pipe(pfd)) {
		snprintf(row.err, sizeof(row.err), "pipe: %s", strerror(errno));
	}
	if (sh == SH_URING && !row.err[0]) {
		cpu_set_t cpus;

		/* io-wq runs the splice: on the allocator's CPU too. */
		sched_getaffinity(0, sizeof(cpus), &cpus);
		if (uring_setup(&ring) ||
		    syscall(__NR_io_uring_register, ring.fd,
			    IORING_REGISTER_IOWQ_AFF, &cpus, sizeof(cpus)) < 0)
			snprintf(row.err, sizeof(row.err), "io_uring: %s",
				 strerror(errno));
	}
	if (!buf)
		snprintf(row.err, sizeof(row.err), "no memory");
	if (!row.err[0])
		pid = start_allocator(&row);
	for (i = 0; pid > 0 && i < attempts; i++) {
		int r;

		io_begin(i + 1);
		r = read_once(&row, sh, t, pfd, out, &ring, buf);
		io_end(i + 1);
		if (r < 0)
			break;
		row.bad_data += r;
		row.done++;
	}
	if (pid > 0)
		stop_allocator(&row, pid);
	if (ring.fd >= 0)
		uring_destroy(&ring);
	if (out >= 0)
		close(out);
	if (pfd[0] >= 0) {
		close(pfd[0]);
		close(pfd[1]);
	}
	free(buf);
	row.ms = now_ms() - t0;
	row.pins = pins_since(p0);
	report(&row);
}

/*
 * One write: user pages vmsplice()d into a pipe (with @tee, duplicated
 * into a second pipe and the first drained), unmapped, spliced to @wfd,
 * read back. 0 if right, 1 if the data is wrong, -1 on error.
 */
static int write_once(struct row *row, int tee_too, int wfd, int iter,
		      unsigned char *want, unsigned char *buf)
{
	off_t off = (off_t)(iter % WSLOTS) * WLEN;
	int p1[2], p2[2] = { -1, -1 }, *p = p1, ret = -1, err;
	struct iovec iov = { .iov_len = WLEN };
	const char *what = "pipe";
	ssize_t n = 0, done;

	fill_written((uint64_t *)want, iter);
	iov.iov_base = map_pages(WLEN / page_size, PROT_READ | PROT_WRITE);
	if (!iov.iov_base || pipe(p1))
		goto out;
	memcpy(iov.iov_base, want, WLEN);
	what = "vmsplice";
	if (vmsplice(p1[1], &iov, 1, 0) != WLEN)
		goto out_pipes;
	if (tee_too) {
		what = "tee";
		if (pipe(p2) || tee(p1[0], p2[1], WLEN, 0) != WLEN)
			goto out_pipes;
		what = "read of the first pipe";
		if (read_full(p1[0], buf, WLEN) != WLEN ||
		    memcmp(buf, want, WLEN))
			goto out_pipes;
		p = p2;
	}
	/* Only the pipe holds the pages now. */
	munmap(iov.iov_base, WLEN);
	iov.iov_base = NULL;
	what = "splice to the file";
	for (done = 0; done < WLEN; done += n) {
		loff_t o = off + done;

		n = splice(p[0], NULL, wfd, &o, WLEN - done, 0);
		if (n <= 0)
			goto out_pipes;
	}
	what = "read back";
	memset(buf, 0, WLEN);
	if (pread(wfd, buf, WLEN, off) != WLEN)
		goto out_pipes;
	ret = memcmp(buf, want, WLEN) != 0;
out_pipes:
	err = errno;
	close(p1[0]);
	close(p1[1]);
	if (p2[0] >= 0) {
		close(p2[0]);
		close(p2[1]);
	}
	errno = err;
out:
	if (iov.iov_base)
		munmap(iov.iov_base, WLEN);
	if (ret < 0)
		snprintf(row->err, sizeof(row->err), "attempt %d: %s: %s",
			 iter, what, errno ? strerror(errno) : "short");
	return ret;
}

static void write_row(const char *name, int tee_too, int wfd, int attempts)
{
	struct row row = { .name = name, .attempts = attempts };
	unsigned char *want = aligned_alloc(page_size, WLEN);
	unsigned char *buf = aligned_alloc(page_size, WLEN);
	struct pins p0 = pins_now();
	long long t0 = now_ms();
	pid_t pid = -1;
	int i;

	if (!want || !buf)
		snprintf(row.err, sizeof(row.err), "no memory");
	else
		pid = start_allocator(&row);
	for (i = 0; pid > 0 && i < attempts; i++) {
		int r;

		errno = 0;
		io_begin(i + 1);
		r = write_once(&row, tee_too, wfd, i, want, buf);
		io_end(i + 1);
		if (r < 0)
			break;
		row.bad_data += r;
		row.done++;
	}
	if (pid > 0)
		stop_allocator(&row, pid);
	free(want);
	free(buf);
	row.ms = now_ms() - t0;
	row.pins = pins_since(p0);
	report(&row);
}

/*
 * Mount @serial's disk, write the test file (and with @wfile the write
 * target), unmount, let debugfs cut i_size to ISIZE, mount again. Return
 * an O_DIRECT fd of the file, or -errno with @why filled.
 */
static int prepare_fs(const char *serial, const char *fs, int wfile,
		      char *mnt, size_t len, int *wfd, char *why, size_t wlen)
{
	char dev[32], path[128], cmd[256];
	struct stat sb;
	int fd, ok;

	if (find_disk(serial, dev, sizeof(dev)))
		return -ENODEV;
	snprintf(mnt, len, "/mnt/%s", serial);
	mkdir(mnt, 0755);
	if (mount(dev, mnt, fs, 0, NULL)) {
		snprintf(why, wlen, "mount %s: %s", dev, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/dio_splice.dat", mnt);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, region, FILE_LEN) == FILE_LEN && !fsync(fd);
	if (fd >= 0)
		close(fd);
	if (ok && wfile) {
		void *zero = calloc(1, WLEN);
		int i;

		snprintf(path, sizeof(path), "%s/dio_splice_w.dat", mnt);
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		ok = fd >= 0 && zero;
		for (i = 0; ok && i < WSLOTS; i++)
			ok = write(fd, zero, WLEN) == WLEN;
		ok = ok && !fsync(fd);
		if (fd >= 0)
			close(fd);
		free(zero);
	}
	if (!ok) {
		snprintf(why, wlen, "writing %s: %s", path, strerror(errno));
		umount(mnt);
		return -EIO;
	}
	if (umount(mnt)) {
		snprintf(why, wlen, "umount %s: %s", mnt, strerror(errno));
		return -errno;
	}
	snprintf(cmd, sizeof(cmd),
		 "debugfs -w -R 'sif /dio_splice.dat size %d' %s >/tmp/debugfs.log 2>&1 || cat /tmp/debugfs.log",
		 ISIZE, dev);
	if (system(cmd))
		ksft_print_msg("debugfs on %s failed\n", dev);
	if (mount(dev, mnt, fs, 0, NULL)) {
		snprintf(why, wlen, "mount %s again: %s", dev, strerror(errno));
		return -errno;
	}
	snprintf(path, sizeof(path), "%s/dio_splice.dat", mnt);
	fd = open(path, O_RDONLY | O_DIRECT);
	if (fd < 0 || fstat(fd, &sb)) {
		snprintf(why, wlen, "open %s: %s", path, strerror(errno));
		return -errno;
	}
	ksft_print_msg("%s on %s: size %lld, %lld bytes allocated\n", path, dev,
		       (long long)sb.st_size, (long long)sb.st_blocks * 512);
	if (sb.st_size != ISIZE || sb.st_blocks * 512 < FILE_LEN) {
		snprintf(why, wlen, "debugfs did not leave %s with size %d and its blocks",
			 path, ISIZE);
		close(fd);
		return -EINVAL;
	}
	if (wfile) {
		snprintf(path, sizeof(path), "%s/dio_splice_w.dat", mnt);
		*wfd = open(path, O_RDWR | O_DIRECT);
		if (*wfd < 0) {
			snprintf(why, wlen, "open %s: %s", path, strerror(errno));
			close(fd);
			return -errno;
		}
	}
	return fd;
}

static void rows_not_run(const char *const *names, int n, int skip,
			 const char *why)
{
	int i;

	for (i = 0; i < n; i++) {
		if (skip)
			ksft_test_result_skip("%s: %s\n", names[i], why);
		else
			ksft_test_result_fail("%s (%s)\n", names[i], why);
	}
}

static void fs_rows(const char *serial, const char *fs, int attempts)
{
	static const char *const ext4[] = {
		"dio_splice_ext4_splice", "dio_splice_ext4_sendfile",
		"dio_splice_ext4_uring_splice", "dio_splice_vmsplice_write",
		"dio_splice_tee_write",
	};
	static const char *const ext2[] = {
		"dio_splice_ext2_splice", "dio_splice_ext2_sendfile",
	};
	int is_ext4 = !strcmp(fs, "ext4"), wfd = -1, n = is_ext4 ? 5 : 2;
	const char *const *names = is_ext4 ? ext4 : ext2;
	struct target t = { .start = 0, .pat = 0, .want = ISIZE };
	char mnt[64] = "", why[256];

	t.fd = prepare_fs(serial, fs, is_ext4, mnt, sizeof(mnt), &wfd, why,
			  sizeof(why));
	if (t.fd < 0) {
		if (t.fd == -ENODEV)
			snprintf(why, sizeof(why), "no disk with serial %s", serial);
		ksft_print_msg("%s\n", why);
		rows_not_run(names, n, t.fd == -ENODEV, why);
		if (mnt[0])
			umount(mnt);
		return;
	}
	read_row(names[0], SH_SPLICE, &t, attempts);
	read_row(names[1], SH_SENDFILE, &t, attempts);
	if (is_ext4) {
		read_row(names[2], SH_URING, &t, attempts);
		write_row(names[3], 0, wfd, attempts / 3 ? attempts / 3 : 1);
		write_row(names[4], 1, wfd, attempts / 3 ? attempts / 3 : 1);
		close(wfd);
	}
	close(t.fd);
	umount(mnt);
}

static void blkdev_rows(int attempts)
{
	static const char *const names[] = {
		"dio_splice_blkdev_splice", "dio_splice_blkdev_sendfile",
	};
	char dev[32], why[160];
	struct target t;
	off_t size;

	if (find_disk("dio-raw", dev, sizeof(dev))) {
		rows_not_run(names, 2, 1, "no disk with serial dio-raw");
		return;
	}
	t.fd = open(dev, O_RDWR | O_DIRECT);
	size = t.fd < 0 ? -1 : lseek(t.fd, 0, SEEK_END);
	if (size < FILE_LEN ||
	    pwrite(t.fd, region, FILE_LEN, size - FILE_LEN) != FILE_LEN) {
		snprintf(why, sizeof(why), "%s: %s", dev, strerror(errno));
		rows_not_run(names, 2, 0, why);
		if (t.fd >= 0)
			close(t.fd);
		return;
	}
	/* The device ends ISIZE bytes into the read. */
	t.start = size - ISIZE;
	t.pat = FILE_LEN - ISIZE;
	t.want = ISIZE;
	read_row(names[0], SH_SPLICE, &t, attempts);
	read_row(names[1], SH_SENDFILE, &t, attempts);
	close(t.fd);
}

int main(int argc, char **argv)
{
	int attempts = argc > 1 ? atoi(argv[1]) : 60;
	cpu_set_t cpus;
	int cpu, i;

	page_size = sysconf(_SC_PAGESIZE);
	words = page_size / 8;
	pins_test_start(9);
	if (attempts < 1)
		ksft_exit_fail_msg("usage: dio_splice [attempts per read row]\n");

	/* The I/O, io-wq and the allocator share one CPU's free lists. */
	cpu = sched_getcpu();
	CPU_ZERO(&cpus);
	CPU_SET(cpu, &cpus);
	if (cpu < 0 || sched_setaffinity(0, sizeof(cpus), &cpus))
		ksft_exit_fail_msg("sched_setaffinity: %s\n", strerror(errno));
	ksft_print_msg("CPU %d of %ld online, %d attempts per read row\n", cpu,
		       sysconf(_SC_NPROCESSORS_ONLN), attempts);

	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE,
		  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	region = aligned_alloc(page_size, FILE_LEN);
	if (st == MAP_FAILED || !region)
		ksft_exit_fail_msg("no memory\n");
	for (i = 0; i < FILE_LEN / 8; i++)
		((uint64_t *)region)[i] = file_word(i);

	fs_rows("dio-ext4", "ext4", attempts);
	fs_rows("dio-ext2", "ext2", attempts);
	blkdev_rows(attempts);
	ksft_finished();
}

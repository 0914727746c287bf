/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Catching a host that writes into guest pages after the guest freed
 * them: take fresh pipe pages and anonymous pages at once after the
 * release, fill each with a pattern of its own, and count the pages that
 * changed by the time the host's write is due, those holding the file's
 * data apart. The file under test holds file_word(i) at word i.
 *
 * Also the pieces both such tests share: the file's words, a counted
 * read, and a reader child that says when its read is about to be held.
 *
 * Pipe pages are taken first: they come from the same free lists as the
 * page tables the anonymous refill needs, and a freed page that became
 * a page table would crash the guest instead of showing up here.
 */
#ifndef REFILL_H
#define REFILL_H

#include <sched.h>
#include <stdint.h>
#include <sys/wait.h>
#include "dio_common.h"

#define REFILL_ANON_PAGES	8192	/* 32 MiB of fresh anonymous memory */
#define REFILL_PIPES		16	/* ... and this many pipes ... */
#define REFILL_PIPE_PAGES	16	/* ... of this many pages */

#define FILE_TAG	0x9f11eda7ULL	/* high half of each file word */
#define FILL_TAG	0xf1110000ULL	/* ... of each refill word */

/* Pages that changed: holding the file's data, or otherwise. */
struct damage {
	long file_pages, bad_pages;
};

struct refill {
	long page_size;
	uint64_t *scratch;	/* one page, for pipe reads and writes */
	uint64_t *anon;
	int pp[REFILL_PIPES][2];
};

static inline uint64_t file_word(long i)
{
	return FILE_TAG << 32 | (uint32_t)i;
}

static inline uint64_t fill_word(long page, int i)
{
	return (FILL_TAG | (page & 0xffff)) << 32 | (uint32_t)i;
}

static inline void fill_page(const struct refill *r, uint64_t *w, long page)
{
	int i;

	for (i = 0; i < r->page_size / 8; i++)
		w[i] = fill_word(page, i);
}

static inline void check_page(const struct refill *r, const uint64_t *w,
			      long page, struct damage *d)
{
	int i, words = r->page_size / 8;

	for (i = 0; i < words; i++)
		if (w[i] != fill_word(page, i))
			break;
	if (i == words)
		return;
	if (w[i] >> 32 == FILE_TAG)
		d->file_pages++;
	else
		d->bad_pages++;
}

/*
 * One scratch page for the whole test, and CPU 0 for it and its
 * children: a killed child's pages go to that CPU's free lists, where
 * the refill takes them. Exits the test if either fails.
 */
static inline void refill_init(struct refill *r)
{
	cpu_set_t cpus;

	r->page_size = sysconf(_SC_PAGESIZE);
	r->scratch = malloc(r->page_size);
	if (!r->scratch)
		ksft_exit_fail_msg("no memory\n");
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	if (sched_setaffinity(0, sizeof(cpus), &cpus))
		ksft_exit_fail_msg("sched_setaffinity: %s\n", strerror(errno));
}

/* Take and fill the pipe pages, then the anonymous pages. */
static inline int refill_take(struct refill *r)
{
	int i, j;

	for (i = 0; i < REFILL_PIPES; i++) {
		if (pipe(r->pp[i]) ||
		    fcntl(r->pp[i][1], F_SETPIPE_SZ,
			  REFILL_PIPE_PAGES * r->page_size) < 0)
			return -1;
		for (j = 0; j < REFILL_PIPE_PAGES; j++) {
			long page = REFILL_ANON_PAGES + i * REFILL_PIPE_PAGES + j;

			fill_page(r, r->scratch, page);
			if (write(r->pp[i][1], r->scratch, r->page_size) !=
			    r->page_size)
				return -1;
		}
	}
	r->anon = map_pages(REFILL_ANON_PAGES, PROT_READ | PROT_WRITE);
	if (!r->anon)
		return -1;
	for (i = 0; i < REFILL_ANON_PAGES; i++)
		fill_page(r, r->anon + i * r->page_size / 8, i);
	return 0;
}

/* Check every page refill_take() filled, into @d, and give them back. */
static inline void refill_check(struct refill *r, struct damage *d)
{
	int i, j;

	for (i = 0; i < REFILL_ANON_PAGES; i++)
		check_page(r, r->anon + i * r->page_size / 8, i, d);
	munmap(r->anon, REFILL_ANON_PAGES * r->page_size);
	for (i = 0; i < REFILL_PIPES; i++) {
		for (j = 0; j < REFILL_PIPE_PAGES; j++) {
			long page = REFILL_ANON_PAGES + i * REFILL_PIPE_PAGES + j;

			if (read(r->pp[i][0], r->scratch, r->page_size) !=
			    r->page_size)
				d->bad_pages++;
			else
				check_page(r, r->scratch, page, d);
		}
		close(r->pp[i][0]);
		close(r->pp[i][1]);
	}
}

/* Write @len bytes of file_word() to @path; 0, or -1 with errno. */
static inline int refill_write_file(const char *path, long len)
{
	uint64_t *buf = malloc(len);
	long i;
	int fd, ok;

	if (!buf)
		return -1;
	for (i = 0; i < len / 8; i++)
		buf[i] = file_word(i);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ok = fd >= 0 && write(fd, buf, len) == len;
	if (fd >= 0)
		close(fd);
	free(buf);
	return ok ? 0 : -1;
}

/*
 * read() @n pages from the start of @path into fresh, page-aligned
 * memory. Returns what read() returned; @wrong gets the words that are
 * not file_word(), @p the pins taken and released meanwhile.
 */
static inline ssize_t refill_counted_read(const struct refill *r,
					  const char *path, int n,
					  long *wrong, struct pins *p)
{
	uint64_t *buf = map_pages(n, PROT_READ | PROT_WRITE);
	int fd = open(path, O_RDONLY);
	ssize_t got = -1;
	long i;

	*p = pins_now();
	if (buf && fd >= 0)
		got = read(fd, buf, n * r->page_size);
	*p = pins_since(*p);
	*wrong = 0;
	for (i = 0; got == n * r->page_size && i < got / 8; i++)
		*wrong += buf[i] != file_word(i);
	if (fd >= 0)
		close(fd);
	if (buf)
		munmap(buf, n * r->page_size);
	return got;
}

/*
 * Fork a child that runs @reader(@use_splice, fd) and writes one byte to
 * fd when its read is about to be held, and wait for that byte. Returns
 * the child's pid; 0 if it ended first (its status in @status); -1 with
 * errno if it could not start.
 */
static inline pid_t start_reader(void (*reader)(int use_splice, int sync),
				 int use_splice, int *status)
{
	int sync[2];
	pid_t pid;
	char c;

	if (pipe(sync))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(sync[0]);
		close(sync[1]);
		return -1;
	}
	if (!pid)
		reader(use_splice, sync[1]);
	close(sync[1]);
	if (read(sync[0], &c, 1) != 1) {
		waitpid(pid, status, 0);
		pid = 0;
	}
	close(sync[0]);
	return pid;
}

/*
 * No export to test: each of the four rows of such a test, TEST_read_counted,
 * TEST_read, TEST_splice and TEST_balance, is a SKIP for @why.
 */
static inline void skip_rows(const char *test, const char *why)
{
	static const char *const rows[] = { "read_counted", "read", "splice", "balance" };
	unsigned int i;

	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		ksft_test_result_skip("%s_%s: %s\n", test, rows[i], why);
	ksft_finished();
}

#endif /* REFILL_H */

/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Catching a host that writes into guest pages after the guest freed
 * them: take fresh pipe pages and anonymous pages at once after the
 * release, fill each with a pattern of its own, and count the pages that
 * changed by the time the host's write is due, those holding the file's
 * data apart. The file under test holds file_word(i) at word i.
 *
 * Pipe pages are taken first: they come from the same free lists as the
 * page tables the anonymous refill needs, and a freed page that became
 * a page table would crash the guest instead of showing up here.
 */
#ifndef REFILL_H
#define REFILL_H

#include <stdint.h>
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

/* One scratch page for the whole test; 0 or -1 with errno. */
static inline int refill_init(struct refill *r)
{
	r->page_size = sysconf(_SC_PAGESIZE);
	r->scratch = malloc(r->page_size);
	return r->scratch ? 0 : -1;
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

#endif /* REFILL_H */

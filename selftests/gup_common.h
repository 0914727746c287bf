/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the selftests that drive the gup_test debugfs driver
 * (CONFIG_GUP_TEST, mm/gup_test.c): pin through it with pin counts, and
 * read back what dump_page() printed for a page it held.
 */
#ifndef GUP_COMMON_H
#define GUP_COMMON_H

#include "dio_common.h"
#include "mm/gup_test.h"

#define FOLL_WRITE	0x01	/* include/linux/mm.h */
#define GUP_PIN_COUNTING_BIAS	1024

/*
 * Run gup_test command @cmd on [@addr, @addr + @len) with @flags in one
 * call; *@done is the size the driver reports (-1 on an errno), *@d the
 * pins acquired and released meanwhile.
 */
static inline int gup_call(int gfd, unsigned long cmd, void *addr, long len,
			   unsigned int flags, long *done, struct pins *d)
{
	struct gup_test gup = { 0 };
	struct pins p0 = pins_now();
	int ret;

	gup.addr = (unsigned long)addr;
	gup.size = len;
	gup.nr_pages_per_call = len / sysconf(_SC_PAGESIZE);
	gup.gup_flags = flags;
	ret = ioctl(gfd, cmd, &gup);
	*d = pins_since(p0);
	*done = ret ? -1 : (long)gup.size;
	return ret;
}

/*
 * One KTAP line @name: gup_test @cmd write-pins @npages at @addr in one
 * call and the driver reports all of them, each pinned and released.
 */
static inline void gup_pin_result(int gfd, unsigned long cmd, void *addr,
				  long npages, const char *name)
{
	long len = npages * sysconf(_SC_PAGESIZE), done;
	struct pins d;
	int ret;

	ret = gup_call(gfd, cmd, addr, len, FOLL_WRITE, &done, &d);
	ksft_print_msg("%s: %d, %ld bytes, pins acquired %ld released %ld\n",
		       name, ret, done, d.acq, d.rel);
	ksft_test_result(ret == 0 && done == len && d.acq == npages &&
			 d.rel == npages, "%s\n", name);
}

/* What dump_page() printed for the first page of a DUMP_USER_PAGES_TEST. */
struct dump {
	int refcount, order, pincount;
};

/* The text of the next /dev/kmsg record, or NULL when there is none. */
static inline const char *kmsg_next(int fd)
{
	static char rec[8192];
	ssize_t n;
	char *p;

	do {
		n = read(fd, rec, sizeof(rec) - 1);
	} while (n < 0 && errno == EPIPE);
	if (n <= 0)
		return NULL;
	rec[n] = 0;
	p = strchr(rec, ';');
	p = p ? p + 1 : rec;
	p[strcspn(p, "\n")] = 0;
	return p;
}

/*
 * Have gup_test get (or, with @pin, pin) @npages at @addr and dump the
 * first one; parse the refcount (and order and compound_pincount of a
 * compound page) from the kernel log into @d. 0 on success.
 */
static inline int dump_first_page(int gfd, void *addr, long npages, int pin,
				  struct dump *d)
{
	struct gup_test gup = { 0 };
	int kfd, found = 0, ret;
	const char *msg, *p;
	char marker[96];

	d->refcount = d->order = d->pincount = -1;
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kfd < 0 || lseek(kfd, 0, SEEK_END) < 0)
		return -1;
	gup.addr = (unsigned long)addr;
	gup.size = npages * sysconf(_SC_PAGESIZE);
	gup.nr_pages_per_call = npages;
	gup.gup_flags = FOLL_WRITE;
	gup.test_flags = pin ? GUP_TEST_FLAG_DUMP_PAGES_USE_PIN : 0;
	gup.which_pages[0] = 1;
	ret = ioctl(gfd, DUMP_USER_PAGES_TEST, &gup);
	snprintf(marker, sizeof(marker),
		 "---- page #0, starting from user virt addr: 0x%llx",
		 (unsigned long long)gup.addr);
	while (!ret && (msg = kmsg_next(kfd))) {
		if (!strcmp(msg, marker)) {
			found = 1;
			continue;
		}
		if (!found)
			continue;
		if (!strncmp(msg, "raw:", 4))
			break;
		p = strstr(msg, " refcount:");
		if (d->refcount < 0 && !strncmp(msg, "page:", 5) && p)
			d->refcount = atoi(p + 10);
		p = strstr(msg, "order:");
		if (!strncmp(msg, "head:", 5) && p &&
		    sscanf(p, "order:%d compound_mapcount:%*d compound_pincount:%d",
			   &d->order, &d->pincount) != 2)
			d->order = d->pincount = -1;
	}
	close(kfd);
	return ret || d->refcount < 0 ? -1 : 0;
}

#endif /* GUP_COMMON_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * pin_overflow: the kernel refuses to pin a 4 KiB page so often that its
 * refcount would overflow. Each FOLL_PIN pin of a small page adds
 * GUP_PIN_COUNTING_BIAS (1024) to the refcount, so about 2^21 pins wrap
 * it; stock 6.1 takes them all and WARNs on the next one. Here one shmem
 * page is mapped MAPS times in a row, and io_uring fixed buffers over that
 * range (FOLL_LONGTERM pins, one per mapping) are registered ring after
 * ring until the kernel says no. It must say no with an errno before the
 * count wraps, print no WARNING, and every pin must come back when the
 * rings are closed.
 */
#include <linux/io_uring.h>
#include <sys/syscall.h>
#include "dio_common.h"
#include "kselftest.h"

#define MAPS		32768		/* pins per registration */
#define MAX_RINGS	80		/* 80 * 32768 > 2^21 pins */

static int kmsg_warned(int kfd)
{
	char rec[2048];
	ssize_t n;
	int warned = 0;

	/* Records logged since the open; EAGAIN once they are read. */
	while ((n = read(kfd, rec, sizeof(rec) - 1)) > 0 || (n < 0 && errno == EPIPE)) {
		if (n <= 0)
			continue;
		rec[n] = '\0';
		if (strstr(rec, "WARNING:") || strstr(rec, "BUG:"))
			warned = 1;
	}
	return warned;
}

int main(void)
{
	long page_size = sysconf(_SC_PAGESIZE);
	int rings[MAX_RINGS], nrings = 0, refused = 0, err = 0, kfd, mfd, i;
	long acq0, rel0, acq, rel, pinned = 0;
	struct io_uring_params p;
	struct iovec iov;
	char *base;

	ksft_print_header();
	ksft_set_plan(1);
	kfd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	if (kfd >= 0)
		lseek(kfd, 0, SEEK_END);
	mfd = memfd_create("pin_overflow", 0);
	if (kfd < 0 || mfd < 0 || ftruncate(mfd, page_size))
		ksft_exit_fail_msg("setup: %s\n", strerror(errno));
	base = mmap(NULL, MAPS * page_size, PROT_NONE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (base == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	for (i = 0; i < MAPS; i++)
		if (mmap(base + i * page_size, page_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, mfd, 0) == MAP_FAILED)
			ksft_exit_fail_msg("mmap %d: %s\n", i, strerror(errno));
	base[0] = 42;		/* every mapping now shows the one page */
	if (base[(MAPS - 1) * page_size] != 42)
		ksft_exit_fail_msg("the mappings do not share the page\n");

	acq0 = pins_acquired();
	rel0 = pins_released();
	iov.iov_base = base;
	iov.iov_len = MAPS * page_size;
	while (nrings < MAX_RINGS) {
		memset(&p, 0, sizeof(p));
		rings[nrings] = syscall(__NR_io_uring_setup, 1, &p);
		if (rings[nrings] < 0)
			ksft_exit_fail_msg("io_uring_setup: %s\n", strerror(errno));
		if (syscall(__NR_io_uring_register, rings[nrings],
			    IORING_REGISTER_BUFFERS, &iov, 1)) {
			err = errno;
			refused = 1;
			close(rings[nrings]);
			break;
		}
		pinned += MAPS;
		nrings++;
	}
	ksft_print_msg("%d rings registered, %ld pins of one page held; next registration: %s\n",
		       nrings, pinned, refused ? strerror(err) : "not tried");
	for (i = 0; i < nrings; i++)
		close(rings[i]);
	/* Rings are freed by a work item: wait for the unpins to land. */
	for (i = 0; i < 100; i++) {
		acq = pins_acquired() - acq0;
		rel = pins_released() - rel0;
		if (acq == rel)
			break;
		usleep(100000);
	}
	ksft_print_msg("pins acquired %ld released %ld\n", acq, rel);
	ksft_test_result(refused && (err == EFAULT || err == ENOMEM) &&
			 pinned < (1L << 21) && acq == rel &&
			 base[0] == 42 && !kmsg_warned(kfd),
			 "pin_overflow_refused_without_warning\n");
	ksft_finished();
}

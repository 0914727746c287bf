// SPDX-License-Identifier: GPL-2.0
/*
 * ktls_pins: a kTLS receive that decrypts a record straight into the
 * recvmsg() buffer (net/tls/tls_sw.c, tls_setup_from_iter()) must pin the
 * buffer's pages (Case 1 of pin_user_pages.rst: the cipher writes them
 * outside the process's page tables). Debian's 6.1 takes plain references,
 * so nr_foll_pin_acquired does not move there.
 *
 * A TCP connection over loopback with kTLS (TLS 1.2, AES-GCM-128) on both
 * ends: the sender's kernel encrypts, the receiver's decrypts. Records of
 * 16 KiB received with a length of exactly one record take the zero-copy
 * path, one pin per page spanned. A read-only receive buffer must fail
 * and leak no pin. The pages the cipher wrote must be marked dirty: a
 * clean page of a MAP_SHARED memfd would lose the plaintext to
 * drop_caches (Debian's 6.1 never dirties them).
 */
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/socket.h>
#include "dio_common.h"
#include "kselftest.h"

#ifndef SOL_TLS
#define SOL_TLS		282
#endif
#ifndef TCP_ULP
#define TCP_ULP		31
#endif
#define REC_LEN		16384	/* the largest TLS record payload */
#define NREC		4

static long page_size;

static unsigned char pattern(long i)
{
	return (unsigned char)(i * 7 + 3);
}

static int tls_ulp(int fd, int dir)
{
	struct tls12_crypto_info_aes_gcm_128 ci = { 0 };

	ci.info.version = TLS_1_2_VERSION;
	ci.info.cipher_type = TLS_CIPHER_AES_GCM_128;
	memset(ci.key, 0x11, sizeof(ci.key));
	memset(ci.iv, 0x22, sizeof(ci.iv));
	memset(ci.salt, 0x33, sizeof(ci.salt));
	if (setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof("tls")))
		return -1;
	return setsockopt(fd, SOL_TLS, dir, &ci, sizeof(ci));
}

/* A loopback TCP connection with kTLS TX on *@tx and kTLS RX on *@rx. */
static void tls_pair(int *tx, int *rx)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t alen = sizeof(a);
	int l;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	*tx = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || *tx < 0 || bind(l, (void *)&a, sizeof(a)) ||
	    listen(l, 1) || getsockname(l, (void *)&a, &alen) ||
	    connect(*tx, (void *)&a, sizeof(a)))
		ksft_exit_fail_msg("loopback TCP: %s\n", strerror(errno));
	*rx = accept(l, NULL, NULL);
	close(l);
	if (*rx < 0)
		ksft_exit_fail_msg("accept: %s\n", strerror(errno));
	if (tls_ulp(*tx, TLS_TX) || tls_ulp(*rx, TLS_RX))
		ksft_exit_fail_msg("kTLS setup: %s (CONFIG_TLS)\n",
				   strerror(errno));
}

/*
 * Send @n records of the pattern and receive each into @dst + i * REC_LEN
 * with a length of one record; *@d gets the pins of the receives.
 */
static long send_recv(int tx, int rx, unsigned char *src, unsigned char *dst,
		      int n, struct pins *d)
{
	struct pins p0;
	long got = 0;
	ssize_t r;
	int i;

	d->acq = d->rel = 0;
	for (i = 0; i < n; i++) {
		if (send(tx, src + i * REC_LEN, REC_LEN, 0) != REC_LEN)
			ksft_exit_fail_msg("send: %s\n", strerror(errno));
		p0 = pins_now();
		r = recv(rx, dst + i * REC_LEN, REC_LEN, MSG_WAITALL);
		p0 = pins_since(p0);
		d->acq += p0.acq;
		d->rel += p0.rel;
		if (r < 0)
			return -errno;
		got += r;
	}
	return got;
}

static long count_bad(const unsigned char *buf, long len)
{
	long i, bad = 0;

	for (i = 0; i < len; i++)
		bad += buf[i] != pattern(i);
	return bad;
}

/* Records received @skip bytes into a page: pins = pages spanned. */
static void test_recv(unsigned char *src, int skip, int n, const char *name)
{
	long len = (long)n * REC_LEN, npages, got, bad;
	size_t maplen = (len + skip + page_size - 1) / page_size * page_size;
	unsigned char *map = map_pages(maplen / page_size, PROT_READ | PROT_WRITE);
	struct pins d;
	int tx, rx;

	if (!map)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(map, 0, maplen);
	tls_pair(&tx, &rx);
	got = send_recv(tx, rx, src, map + skip, n, &d);
	bad = got == len ? count_bad(map + skip, len) : -1;
	/* Each record of REC_LEN at @skip spans this many pages. */
	npages = n * ((skip + REC_LEN + page_size - 1) / page_size);
	ksft_print_msg("%s: %ld of %ld bytes, %ld wrong; pins acquired %ld released %ld, pages spanned %ld\n",
		       name, got, len, bad, d.acq, d.rel, npages);
	ksft_test_result(got == len && bad == 0 && d.acq == npages &&
			 d.rel == npages, "%s\n", name);
	close(tx);
	close(rx);
	munmap(map, maplen);
}

static void test_readonly(unsigned char *src)
{
	unsigned char *ro = map_pages(REC_LEN / page_size, PROT_READ);
	struct pins d;
	int tx, rx;
	long r;

	if (!ro)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	tls_pair(&tx, &rx);
	r = send_recv(tx, rx, src, ro, 1, &d);
	ksft_print_msg("recv into read-only memory: %ld (%s); pins acquired %ld released %ld\n",
		       r, r < 0 ? strerror(-r) : "no error", d.acq, d.rel);
	ksft_test_result(r < 0 && d.acq == d.rel,
			 "ktls_pins_readonly_recv_fails_no_leak\n");
	close(tx);
	close(rx);
	munmap(ro, REC_LEN);
}

/*
 * Records decrypted into a MAP_SHARED memfd whose pages were only
 * read-faulted: tmpfs needs no write notification, so the PTEs are
 * writable and clean, the pin does not dirty the pages, and the cipher
 * writes them through the kernel mapping. Unless the release marks them
 * dirty, they are clean once unmapped, drop_caches drops them and the file
 * reads back as a hole. One CPU, so that drop_clean_cache() drains the LRU
 * batches the faults and the unmap filled.
 */
static void test_memfd(unsigned char *src)
{
	const char *name = "ktls_pins_memfd_recv_dirtied";
	long len = (long)NREC * REC_LEN, npages = len / page_size, i;
	long got, bad = -1, resident = 0;
	unsigned char *map, *back = malloc(len), *vec = malloc(npages);
	cpu_set_t old, one;
	struct pins d;
	int fd, tx, rx;

	if (sched_getaffinity(0, sizeof(old), &old))
		ksft_exit_fail_msg("sched_getaffinity: %s\n", strerror(errno));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	fd = memfd_create("ktls_pins", 0);
	if (fd < 0 || ftruncate(fd, len) || !back || !vec)
		ksft_exit_fail_msg("memfd: %s\n", strerror(errno));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	/* Read faults only: clean pages behind writable PTEs. */
	for (i = 0; i < len; i += page_size)
		(void)((volatile unsigned char *)map)[i];
	tls_pair(&tx, &rx);
	got = send_recv(tx, rx, src, map, NREC, &d);
	close(tx);
	close(rx);
	munmap(map, len);
	drop_clean_cache();
	/* Which pages the page cache still holds, and what the file reads. */
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map != MAP_FAILED && !mincore(map, len, vec))
		for (i = 0; i < npages; i++)
			resident += vec[i] & 1;
	if (map != MAP_FAILED)
		munmap(map, len);
	if (got == len && pread(fd, back, len, 0) == len)
		bad = count_bad(back, len);
	ksft_print_msg("%s: %ld of %ld bytes; after munmap and drop_caches %ld of %ld pages resident, %ld bytes wrong; pins acquired %ld released %ld\n",
		       name, got, len, resident, npages, bad, d.acq, d.rel);
	ksft_test_result(got == len && bad == 0 && d.acq == d.rel, "%s\n",
			 name);
	close(fd);
	free(back);
	free(vec);
	sched_setaffinity(0, sizeof(old), &old);
}

int main(void)
{
	long i, len = (long)NREC * REC_LEN;
	unsigned char *src;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(4);
	lo_up();
	src = malloc(len);
	if (!src)
		ksft_exit_fail_msg("malloc\n");
	for (i = 0; i < len; i++)
		src[i] = pattern(i);
	test_recv(src, 0, NREC, "ktls_pins_recv_counted");
	test_recv(src, 100, 1, "ktls_pins_unaligned_recv_counted");
	test_readonly(src);
	test_memfd(src);
	free(src);
	ksft_finished();
}

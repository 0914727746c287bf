// SPDX-License-Identifier: GPL-2.0
/*
 * afalg_pins: AF_ALG (crypto/af_alg.c) holds the user buffers it hands to
 * the crypto engine with FOLL_PIN: the recvmsg destination of an skcipher
 * socket and the sendmsg source of a hash socket are pinned page by page,
 * counted in /proc/vmstat and released when the operation ends, and bad
 * input gets an errno without leaking a pin. The destination pages the
 * cipher wrote must be marked dirty: a clean page of a MAP_SHARED memfd
 * would lose the output to drop_caches (Debian's 6.1 never dirties them).
 */
#include <linux/if_alg.h>
#include <sched.h>
#include <sys/socket.h>
#include "dio_common.h"
#include "kselftest.h"

#ifndef AF_ALG
#define AF_ALG		38
#endif
#ifndef SOL_ALG
#define SOL_ALG		279
#endif

#define NPAGES	16

static long page_size;

/* An operation socket for @type/@name, keyed with @key if not NULL. */
static int alg_open(const char *type, const char *name, const void *key,
		    int keylen)
{
	struct sockaddr_alg sa = { .salg_family = AF_ALG };
	int tfm, op;

	strncpy((char *)sa.salg_type, type, sizeof(sa.salg_type) - 1);
	strncpy((char *)sa.salg_name, name, sizeof(sa.salg_name) - 1);
	tfm = socket(AF_ALG, SOCK_SEQPACKET, 0);
	if (tfm < 0)
		return -errno;
	if (bind(tfm, (struct sockaddr *)&sa, sizeof(sa)) ||
	    (key && setsockopt(tfm, SOL_ALG, ALG_SET_KEY, key, keylen))) {
		close(tfm);
		return -errno;
	}
	op = accept(tfm, NULL, 0);
	close(tfm);
	return op < 0 ? -errno : op;
}

/* Queue @len bytes of @buf for an skcipher encryption (@enc) or decryption. */
static int cipher_send(int op, const void *buf, size_t len, int enc)
{
	char cbuf[CMSG_SPACE(sizeof(__u32))] = { 0 };
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = {
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = cbuf, .msg_controllen = sizeof(cbuf),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_ALG;
	c->cmsg_type = ALG_SET_OP;
	c->cmsg_len = CMSG_LEN(sizeof(__u32));
	*(__u32 *)CMSG_DATA(c) = enc ? ALG_OP_ENCRYPT : ALG_OP_DECRYPT;
	return sendmsg(op, &msg, 0) == (ssize_t)len ? 0 : -1;
}

static void test_skcipher(void)
{
	static const char key[16] = "foll-pin-afalg!";
	size_t len = NPAGES * page_size;
	char *plain = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *enc = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *dec = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *ro = map_pages(1, PROT_READ);
	long acq0, rel0, acq, rel;
	ssize_t n, m, e;
	int op, i, err;

	op = alg_open("skcipher", "ecb(aes)", key, sizeof(key));
	if (op < 0) {
		ksft_test_result_fail("afalg_pins_skcipher_recv_counted: ecb(aes): %s\n",
				      strerror(-op));
		ksft_test_result_fail("afalg_pins_skcipher_readonly_efault: no socket\n");
		return;
	}
	for (i = 0; i < (int)len; i++)
		plain[i] = i * 7 + i / 4096;
	memset(enc, 0, len);
	memset(dec, 0, len);

	/* The encryption writes straight into @enc: 16 pinned pages. */
	acq0 = pins_acquired();
	rel0 = pins_released();
	n = cipher_send(op, plain, len, 1) ? -1 : read(op, enc, len);
	acq = pins_acquired() - acq0;
	rel = pins_released() - rel0;
	m = cipher_send(op, enc, len, 0) ? -1 : read(op, dec, len);
	ksft_print_msg("ecb(aes) of %zu bytes: %zd, %zd back; pins acquired %ld released %ld\n",
		       len, n, m, acq, rel);
	ksft_test_result(n == (ssize_t)len && m == n && memcmp(enc, plain, len) &&
			 !memcmp(dec, plain, len) && acq == NPAGES && rel == NPAGES,
			 "afalg_pins_skcipher_recv_counted\n");

	/* A read-only destination cannot be pinned for writing. */
	acq0 = pins_acquired();
	rel0 = pins_released();
	e = cipher_send(op, plain, page_size, 1) ? -2 : read(op, ro, page_size);
	err = errno;
	acq = pins_acquired() - acq0;
	rel = pins_released() - rel0;
	ksft_print_msg("encryption into read-only memory: %zd (%s); pins acquired %ld released %ld\n",
		       e, e == -1 ? strerror(err) : "-", acq, rel);
	ksft_test_result(e == -1 && err == EFAULT && acq == rel,
			 "afalg_pins_skcipher_readonly_efault\n");
	close(op);
	munmap(plain, len);
	munmap(enc, len);
	munmap(dec, len);
	munmap(ro, page_size);
}

static void test_hash(void)
{
	size_t len = NPAGES * page_size;
	char *src = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	unsigned char d1[32], d2[32];
	long acq0, rel0, acq, rel;
	ssize_t n, r1, r2;
	int op;

	op = alg_open("hash", "sha256", NULL, 0);
	if (op < 0) {
		ksft_test_result_fail("afalg_pins_hash_send_counted: sha256: %s\n",
				      strerror(-op));
		return;
	}
	memset(src, 0x5a, len);
	/* The hash reads the source through its SGL: 16 pinned pages. */
	acq0 = pins_acquired();
	rel0 = pins_released();
	n = send(op, src, len, 0);
	acq = pins_acquired() - acq0;
	rel = pins_released() - rel0;
	r1 = read(op, d1, sizeof(d1));
	/* The same data in two halves gives the same digest. */
	r2 = send(op, src, len / 2, MSG_MORE) == (ssize_t)len / 2 &&
	     send(op, src + len / 2, len / 2, 0) == (ssize_t)len / 2 ?
	     read(op, d2, sizeof(d2)) : -1;
	ksft_print_msg("sha256 of %zu bytes: sent %zd; pins acquired %ld released %ld\n",
		       len, n, acq, rel);
	ksft_test_result(n == (ssize_t)len && r1 == 32 && r2 == 32 &&
			 !memcmp(d1, d2, 32) && acq == NPAGES && rel == NPAGES,
			 "afalg_pins_hash_send_counted\n");
	close(op);
	munmap(src, len);
}

/*
 * An encryption into a MAP_SHARED memfd whose pages were only read-faulted:
 * tmpfs needs no write notification, so the PTEs are writable and clean,
 * the pin does not dirty the pages, and the cipher writes them through the
 * kernel mapping. Unless the release marks them dirty, they are clean once
 * unmapped, drop_caches drops them and the file reads back as a hole. One
 * CPU, so that drop_clean_cache() drains the LRU batches the faults and the
 * unmap filled.
 */
static void test_memfd(void)
{
	static const char key[16] = "foll-pin-afalg!";
	const char *name = "afalg_pins_memfd_recv_dirtied";
	long len = NPAGES * page_size, i, resident = 0, bad = -1;
	char *plain = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *ref = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	char *back = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	unsigned char vec[NPAGES];
	cpu_set_t old, one;
	long acq0, rel0, acq, rel;
	ssize_t n, r;
	char *map;
	int op, fd;

	op = alg_open("skcipher", "ecb(aes)", key, sizeof(key));
	if (op < 0 || !plain || !ref || !back) {
		ksft_test_result_fail("%s: ecb(aes): %s\n", name,
				      op < 0 ? strerror(-op) : "no memory");
		return;
	}
	if (sched_getaffinity(0, sizeof(old), &old))
		ksft_exit_fail_msg("sched_getaffinity: %s\n", strerror(errno));
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	for (i = 0; i < len; i++)
		plain[i] = i * 5 + i / 4096;
	/* The expected ciphertext, into anonymous memory. */
	r = cipher_send(op, plain, len, 1) ? -1 : read(op, ref, len);

	fd = memfd_create("afalg_pins", 0);
	if (fd < 0 || ftruncate(fd, len))
		ksft_exit_fail_msg("memfd: %s\n", strerror(errno));
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	/* Read faults only: clean pages behind writable PTEs. */
	for (i = 0; i < len; i += page_size)
		(void)((volatile char *)map)[i];
	acq0 = pins_acquired();
	rel0 = pins_released();
	n = cipher_send(op, plain, len, 1) ? -1 : read(op, map, len);
	acq = pins_acquired() - acq0;
	rel = pins_released() - rel0;
	munmap(map, len);
	drop_clean_cache();
	/* Which pages the page cache still holds, and what the file reads. */
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map != MAP_FAILED && !mincore(map, len, vec))
		for (i = 0; i < NPAGES; i++)
			resident += vec[i] & 1;
	if (map != MAP_FAILED)
		munmap(map, len);
	if (r == len && n == len && pread(fd, back, len, 0) == len)
		for (bad = 0, i = 0; i < len; i++)
			bad += back[i] != ref[i];
	ksft_print_msg("%s: %zd of %ld bytes; after munmap and drop_caches %ld of %d pages resident, %ld bytes wrong; pins acquired %ld released %ld\n",
		       name, n, len, resident, NPAGES, bad, acq, rel);
	ksft_test_result(n == len && bad == 0 && acq == rel, "%s\n", name);
	sched_setaffinity(0, sizeof(old), &old);
	close(fd);
	close(op);
	munmap(plain, len);
	munmap(ref, len);
	munmap(back, len);
}

int main(void)
{
	page_size = sysconf(_SC_PAGESIZE);
	ksft_print_header();
	ksft_set_plan(4);
	test_skcipher();
	test_hash();
	test_memfd();
	ksft_finished();
}

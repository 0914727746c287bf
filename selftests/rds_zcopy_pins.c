// SPDX-License-Identifier: GPL-2.0
/*
 * rds_zcopy_pins: an RDS MSG_ZEROCOPY send holds the sender's pages in the
 * message until it is freed (net/rds/message.c). The series pins them
 * (iov_iter_extract_pages(), Case 1 of pin_user_pages.rst) and unpins them
 * when the message is purged, before the completion cookie reaches the
 * sender; Debian's 6.1 held plain references, so no pin is counted there.
 *
 * Zero-copy needs the TCP transport (SO_RDS_TRANSPORT); to a local
 * address RDS-TCP hands the message to its loopback transport, whose
 * receiver copies straight out of the sender's pages.
 */
#include <linux/rds.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include "dio_common.h"
#include "kselftest.h"

#ifndef AF_RDS
#define AF_RDS		21
#endif
#define NPAGES		16
#define PORT_RECV	4000
#define PORT_SEND	4001

static long page_size;

static int rds_socket(int port, int tcp)
{
	struct sockaddr_in sin = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		.sin_port = htons(port),
	};
	int fd = socket(AF_RDS, SOCK_SEQPACKET, 0), one = 1;
	int trans = RDS_TRANS_TCP;

	if (fd < 0)
		ksft_exit_fail_msg("socket(AF_RDS): %s (CONFIG_RDS)\n",
				   strerror(errno));
	if (tcp && (setsockopt(fd, SOL_RDS, SO_RDS_TRANSPORT, &trans,
			       sizeof(trans)) ||
		    setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))))
		ksft_exit_fail_msg("RDS-TCP with SO_ZEROCOPY: %s (CONFIG_RDS_TCP)\n",
				   strerror(errno));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)))
		ksft_exit_fail_msg("bind RDS to 127.0.0.1:%d: %s\n", port,
				   strerror(errno));
	return fd;
}

/* MSG_ZEROCOPY send of @len bytes at @buf with @cookie; bytes or -errno. */
static long zc_send(int fd, void *buf, long len, __u32 cookie)
{
	struct sockaddr_in to = {
		.sin_family = AF_INET,
		.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
		.sin_port = htons(PORT_RECV),
	};
	char ctl[CMSG_SPACE(sizeof(cookie))] = { 0 };
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct msghdr msg = {
		.msg_name = &to, .msg_namelen = sizeof(to),
		.msg_iov = &iov, .msg_iovlen = 1,
		.msg_control = ctl, .msg_controllen = sizeof(ctl),
	};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	long ret;

	c->cmsg_level = SOL_RDS;
	c->cmsg_type = RDS_CMSG_ZCOPY_COOKIE;
	c->cmsg_len = CMSG_LEN(sizeof(cookie));
	memcpy(CMSG_DATA(c), &cookie, sizeof(cookie));
	ret = sendmsg(fd, &msg, MSG_ZEROCOPY);
	return ret < 0 ? -errno : ret;
}

/* Wait up to 10 s for the completion of @cookie on the sender. */
static int zc_completed(int fd, __u32 cookie)
{
	int i;

	for (i = 0; i < 1000; i++) {
		char ctl[CMSG_SPACE(sizeof(struct rds_zcopy_cookies))];
		struct msghdr msg = {
			.msg_control = ctl, .msg_controllen = sizeof(ctl),
		};
		struct cmsghdr *c;

		if (recvmsg(fd, &msg, MSG_DONTWAIT) < 0) {
			if (errno != EAGAIN)
				return 0;
			usleep(10000);
			continue;
		}
		for (c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
			struct rds_zcopy_cookies ck;
			unsigned int j;

			if (c->cmsg_level != SOL_RDS ||
			    c->cmsg_type != RDS_CMSG_ZCOPY_COMPLETION)
				continue;
			memcpy(&ck, CMSG_DATA(c), sizeof(ck));
			for (j = 0; j < ck.num; j++)
				if (ck.cookies[j] == cookie)
					return 1;
		}
	}
	return 0;
}

int main(void)
{
	long len, ret, got;
	unsigned char *buf, *rbuf, *hole;
	struct pins s, c, c1, b;
	int rfd, sfd, done, tries = 0;

	page_size = sysconf(_SC_PAGESIZE);
	len = NPAGES * page_size;
	pins_test_start(4);
	lo_up();
	rfd = rds_socket(PORT_RECV, 0);
	sfd = rds_socket(PORT_SEND, 1);
	buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	rbuf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	hole = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (!buf || !rbuf || !hole)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	memset(buf, 0x3c, len);

	/* The pins are held until the receiver has taken the data. */
	s = pins_now();
	ret = zc_send(sfd, buf, len, 1);
	s = pins_since(s);
	ksft_print_msg("MSG_ZEROCOPY send %ld, pins acquired %ld released %ld\n",
		       ret, s.acq, s.rel);
	ksft_test_result(ret == len && s.acq == NPAGES && s.rel == 0,
			 "rds_zcopy_pins_send_counted\n");

	c = pins_now();
	got = recv(rfd, rbuf, len, 0);
	done = zc_completed(sfd, 1);
	/* The cookie is queued just before the purge unpins: let it finish. */
	for (c1 = pins_since(c); done && c1.rel < NPAGES && tries < 100;
	     tries++) {
		usleep(10000);
		c1 = pins_since(c);
	}
	c = c1;
	ksft_print_msg("received %ld bytes, first %#x; completion %s; pins acquired %ld released %ld\n",
		       got, rbuf[0], done ? "seen" : "missing", c.acq, c.rel);
	ksft_test_result(got == len && !memcmp(buf, rbuf, len),
			 "rds_zcopy_pins_data_intact\n");
	ksft_test_result(done && c.acq == 0 && c.rel == NPAGES,
			 "rds_zcopy_pins_completion_releases\n");

	/* Bad input: the tail of the buffer is unmapped. */
	munmap(hole + NPAGES / 2 * page_size, NPAGES / 2 * page_size);
	memset(hole, 1, NPAGES / 2 * page_size);
	b = pins_now();
	ret = zc_send(sfd, hole, len, 2);
	b = pins_since(b);
	ksft_print_msg("send with an unmapped tail: %ld (%s), pins acquired %ld released %ld\n",
		       ret, ret < 0 ? strerror(-ret) : "sent", b.acq, b.rel);
	ksft_test_result(ret == -EFAULT && b.acq == b.rel,
			 "rds_zcopy_pins_unmapped_tail_refused\n");

	close(sfd);
	close(rfd);
	munmap(buf, len);
	munmap(rbuf, len);
	munmap(hole, NPAGES / 2 * page_size);
	ksft_finished();
}

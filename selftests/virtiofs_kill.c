// SPDX-License-Identifier: GPL-2.0
/*
 * virtiofs_kill: FUSE over virtio-fs gives the reader's pages to the host,
 * which reads the file straight into guest memory. Nothing the guest can
 * do while the host holds a request may give those pages back early.
 *
 * With cache=none the daemon opens files FOPEN_DIRECT_IO, and a read()
 * or splice() puts the user's pages or the pipe's pages into the
 * virtqueue (fs/fuse/file.c, virtio_fs.c). Only fuse_abort_conn() ends
 * a request that was sent and not answered. On 6.1, virtio-fs makes no
 * fusectl connection (no_control), so there is no abort file; it sets
 * no_force_umount, so umount -f does not abort; and its unmount aborts
 * only after draining the queues. A signal does not end a sent request:
 * request_wait_answer() waits for it. This test drives each of those
 * paths while a read waits in the host, and if a kernel ever makes the
 * connection's abort file, it writes to it too.
 *
 * The host (run-qemu.sh) runs virtiofsd under strace, which holds each of
 * its file reads for HOST_DELAY_MS before the read runs. A child reads
 * CHUNK; once the request is in the host, the parent looks for the
 * connection in fusectl, calls umount -f (which must fail with EBUSY),
 * kills the child and reaps it, then refills pipe and anonymous pages
 * and checks them after the host's write is due (refill.h). An attempt
 * fails when a page changed, when the child died before the host could
 * have answered, or when a step did not behave as above. The test runs
 * on the CPU the child ran on, whose free lists get the freed pages.
 *
 * Rows: a 16-page read() pins and releases exactly 16 pages (patch 16;
 * Debian's 6.1 takes references), and takes the host's delay; a killed
 * read() and a killed splice(); the pin counters balance over all of
 * them.
 *
 * Usage: virtiofs_kill [attempts per row]
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"
#include "refill.h"

#define VFS_TAG		"vfstest"	/* run-qemu.sh's vhost-user-fs tag */
#define VFS_MNT		"/mnt/vfs"
#define VFS_FILE	VFS_MNT "/data"
#define FUSECTL		"/sys/fs/fuse/connections"
#define HOST_DELAY_MS	3000		/* run-qemu.sh's VFS_DELAY_MS */
#define CHUNK		(64 << 10)	/* one FUSE_READ */
#define FILE_LEN	(4 * CHUNK)

static long page_size;
static struct refill refill;
static long long host_ms;	/* how long the counted read took */

/*
 * The child: say "1" on @sync, then read CHUNK from the second CHUNK of
 * the file by read() into its own buffer or by splice() into a pipe.
 */
static void __attribute__((noreturn)) reader(int use_splice, int sync)
{
	char *buf = malloc(CHUNK);
	int fd = open(VFS_FILE, O_RDONLY), p[2];
	loff_t off = CHUNK;
	ssize_t n;

	if (!buf || fd < 0 || pipe(p) || fcntl(p[1], F_SETPIPE_SZ, CHUNK) < CHUNK)
		_exit(2);
	if (write(sync, "1", 1) != 1)
		_exit(3);
	if (use_splice)
		n = splice(fd, &off, p[1], NULL, CHUNK, 0);
	else
		n = pread(fd, buf, CHUNK, off);
	_exit(n == CHUNK ? 0 : 4);
}

struct row {
	const char *name;
	int use_splice;
	int attempts, failed;
	long file_pages, bad_pages;
	long long die_ms;	/* the shortest time from the read to the reap */
	int exited;		/* children that were not killed: their read ended */
	char err[128];
};

static char abort_path[64];	/* the connection's fusectl abort file */

/*
 * Name the mount's fusectl connection, by its device number, before any
 * read is held: a stat() of the mount is a FUSE request, which would
 * wait behind the held read in the host.
 */
static int find_connection(void)
{
	struct stat st;

	if (stat(VFS_MNT, &st))
		return -1;
	if (mount("fusectl", FUSECTL, "fusectl", 0, NULL) && errno != EBUSY)
		return -1;
	snprintf(abort_path, sizeof(abort_path), FUSECTL "/%u/abort",
		 minor(st.st_dev));
	return 0;
}

/*
 * Abort the connection if it has a fusectl directory (absent on 6.1, by
 * no_control): that is the path that would end the request the host
 * holds. 1 if it was there, 0 if not.
 */
static int abort_connection(struct row *row)
{
	int fd = open(abort_path, O_WRONLY);

	if (fd < 0)
		return 0;
	if (write(fd, "1", 1) != 1)
		ksft_print_msg("%s: writing %s: %s\n", row->name, abort_path,
			       strerror(errno));
	close(fd);
	return 1;
}

static int attempt(struct row *row)
{
	long long t_read, t_died, due;
	struct damage d = { 0, 0 };
	int status, res = 0;
	pid_t pid;

	pid = start_reader(reader, row->use_splice, &status);
	if (pid < 0)
		return snprintf(row->err, sizeof(row->err), "fork: %s", strerror(errno)), -1;
	if (!pid)
		return snprintf(row->err, sizeof(row->err),
				"the child could not start its read (status %#x)", status), -1;
	t_read = now_ms();
	/* Let the FUSE_READ reach the host, which now holds it. */
	usleep(500 * 1000);

	if (abort_connection(row))
		ksft_print_msg("%s: this kernel has a fusectl connection for virtio-fs; aborted it\n",
			       row->name);
	errno = 0;
	if (!umount2(VFS_MNT, MNT_FORCE) || errno != EBUSY) {
		snprintf(row->err, sizeof(row->err),
			 "umount -f with a reader: %s, not EBUSY",
			 errno ? strerror(errno) : "unmounted");
		res = -1;
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	t_died = now_ms() - t_read;
	if (!row->die_ms || t_died < row->die_ms)
		row->die_ms = t_died;
	/* Its read ended before the kill: it was not held to the end. */
	if (WIFEXITED(status))
		row->exited++;
	if (res)
		return res;
	/* The child cannot be gone before the host has answered. */
	if (t_died < HOST_DELAY_MS - 200)
		res = 1;

	if (refill_take(&refill))
		return snprintf(row->err, sizeof(row->err), "refill: %s", strerror(errno)), -1;
	due = t_read + HOST_DELAY_MS + 2000;
	while (now_ms() < due)
		usleep(100 * 1000);
	refill_check(&refill, &d);
	row->file_pages += d.file_pages;
	row->bad_pages += d.bad_pages;
	return res || d.file_pages || d.bad_pages;
}

static void run_row(struct row *row)
{
	int i, res = 0;

	if (host_ms < HOST_DELAY_MS - 200) {
		ksft_test_result_fail("%s: the host answered a read in %lld ms, not in %d: is virtiofsd delayed?\n",
				      row->name, host_ms, HOST_DELAY_MS);
		return;
	}
	for (i = 0; i < row->attempts && res >= 0; i++) {
		res = attempt(row);
		if (res)
			row->failed++;
	}
	ksft_print_msg("%s: %d of %d attempts failed: %ld pages with the file's data, %ld otherwise changed; the reader was reaped %lld ms after its read began, at the soonest (the host answers after %d), and had ended its read itself %d times\n",
		       row->name, row->failed, i, row->file_pages, row->bad_pages,
		       row->die_ms, HOST_DELAY_MS, row->exited);
	if (row->err[0])
		ksft_print_msg("%s: %s\n", row->name, row->err);
	ksft_test_result(!row->failed && !row->err[0], "%s\n", row->name);
}

/*
 * A 16-page read() into fresh, page-aligned memory pins and releases
 * exactly its 16 pages (patch 16; Debian's 6.1 takes references). Its
 * time tells whether the host delays reads, which the other rows need.
 */
static void counted_row(void)
{
	const int n = 16;
	long long t0 = now_ms();
	struct pins p;
	long wrong;
	ssize_t got = refill_counted_read(&refill, VFS_FILE, n, &wrong, &p);

	host_ms = now_ms() - t0;
	ksft_print_msg("virtiofs_kill_read_counted: read %zd bytes in %lld ms, %ld words wrong, pins +%ld -%ld\n",
		       got, host_ms, wrong, p.acq, p.rel);
	ksft_test_result(got == n * page_size && !wrong && p.acq == n &&
			 p.rel == n, "virtiofs_kill_read_counted\n");
}

int main(int argc, char **argv)
{
	struct row rows[] = {
		{ .name = "virtiofs_kill_read" },
		{ .name = "virtiofs_kill_splice", .use_splice = 1 },
	};
	int attempts = argc > 1 ? atoi(argv[1]) : 3, i;
	struct pins p0;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(4);
	if (attempts < 1)
		ksft_exit_fail_msg("usage: virtiofs_kill [attempts per row]\n");
	refill_init(&refill);
	mkdir(VFS_MNT, 0755);
	if (mount(VFS_TAG, VFS_MNT, "virtiofs", 0, NULL) && errno != EBUSY) {
		const char *why = errno == ENODEV ? "no virtio-fs in this kernel" :
				  "no virtio-fs export (run-qemu.sh's " VFS_TAG ")";

		ksft_print_msg("mount %s: %s\n", VFS_TAG, strerror(errno));
		skip_rows("virtiofs_kill", why);
	}
	if (refill_write_file(VFS_FILE, FILE_LEN))
		ksft_exit_fail_msg("writing %s: %s\n", VFS_FILE, strerror(errno));
	if (find_connection())
		ksft_exit_fail_msg("looking for the connection in %s: %s\n", FUSECTL,
				   strerror(errno));
	p0 = pins_now();
	counted_row();
	for (i = 0; i < 2; i++) {
		rows[i].attempts = attempts;
		run_row(&rows[i]);
	}
	p0 = pins_since(p0);
	ksft_test_result(p0.acq == p0.rel, "virtiofs_kill_balance (pins +%ld -%ld)\n",
			 p0.acq, p0.rel);
	umount2(VFS_MNT, 0);
	ksft_finished();
}

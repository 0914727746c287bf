// SPDX-License-Identifier: GPL-2.0
/*
 * v9fs_kill: a 9p zero-copy read that is killed after umount -f must keep
 * its pages until the host has written them.
 *
 * A read of more than 1 KiB from a 9p file with cache=none hands the
 * reader's pages (user memory for read(), the pipe's pages for splice())
 * to the host through the virtqueue. A fatal signal ends the guest's
 * wait, not the host's work; while the client is connected the TFLUSH
 * that follows keeps the caller in the kernel until the host is done.
 * umount -f moves the client to BeginDisconnect even when the umount
 * fails with EBUSY, and then no flush is sent: on Debian's 6.1 the
 * request returns at once, the pipe's pages or the killed task's memory
 * go back to the allocator, and the host writes the file's data into
 * whatever got them next.
 *
 * The export (run-qemu.sh) is throttled to HOST_BPS of reads, so the
 * child's first read of CHUNK bytes goes through and its second waits
 * about CHUNK / HOST_BPS seconds in QEMU before the host reads the file
 * into the guest's pages. The parent, on the same CPU (freed pages go to
 * that CPU's free lists), lets the second read start, calls umount -f,
 * kills the child and reaps it, then at once takes fresh pipe pages (as
 * splice's were) and anonymous pages (as the child's buffer was),
 * fills each with its own pattern, and checks them after the host's
 * write is due. An attempt fails when any of these pages changed (those
 * holding the file's data are counted apart) or the mount cannot be
 * redone; a row fails on any failed attempt. On a kernel with the bug, a
 * page the refill missed takes the host's write wherever it went, and
 * may crash the guest: run-suite runs this test last. A fixed kernel
 * shows up as a child that takes the host's delay to die.
 *
 * Rows: a 16-page read() pins and releases exactly 16 pages (0 on
 * Debian's 6.1, which takes references); a killed read() and a killed
 * splice(); the pin counters balance over all of them.
 *
 * Usage: v9fs_kill [attempts per row]
 */
#include <signal.h>
#include <stdint.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"
#include "refill.h"

#define P9_TAG		"p9test"	/* run-qemu.sh's mount_tag */
#define P9_MNT		"/mnt/p9"
#define P9_OPTS		"trans=virtio,version=9p2000.L,cache=none,msize=262144"
#define P9_FILE		P9_MNT "/data"
#define HOST_BPS	32768		/* run-qemu.sh's throttling.bps-read */
#define CHUNK		(128 << 10)	/* one TREAD at this msize */
#define FILE_LEN	(2 * CHUNK)

static long page_size;
static struct refill refill;

static int p9_mount(void)
{
	mkdir(P9_MNT, 0755);
	return mount(P9_TAG, P9_MNT, "9p", 0, P9_OPTS);
}

/*
 * The child: read CHUNK twice, by read() into its own buffer or by
 * splice() into a pipe; say "1" on @sync after the first.
 */
static void __attribute__((noreturn)) reader(int use_splice, int sync)
{
	char *buf = malloc(CHUNK);
	int fd = open(P9_FILE, O_RDONLY), p[2], i;

	if (!buf || fd < 0 || pipe(p) || fcntl(p[1], F_SETPIPE_SZ, CHUNK) < CHUNK)
		_exit(2);
	for (i = 0; i < 2; i++) {
		ssize_t n;

		if (use_splice)
			n = splice(fd, NULL, p[1], NULL, CHUNK, 0);
		else
			n = read(fd, buf, CHUNK);
		if (n != CHUNK)
			_exit(3);
		if (use_splice && read(p[0], buf, CHUNK) != CHUNK)
			_exit(4);
		if (!i && write(sync, "1", 1) != 1)
			_exit(5);
	}
	_exit(0);
}

struct row {
	const char *name;
	int use_splice;
	int attempts, failed;
	long file_pages, bad_pages;
	long long die_ms;	/* the longest kill-to-reap */
	char err[96];
};

static int attempt(struct row *row)
{
	int status;
	long long t_read, t_kill, due;
	struct damage d = { 0, 0 };
	pid_t pid;

	pid = start_reader(reader, row->use_splice, &status);
	if (pid < 0)
		return snprintf(row->err, sizeof(row->err), "fork: %s", strerror(errno)), -1;
	if (!pid)
		return snprintf(row->err, sizeof(row->err),
				"the first read failed (status %#x)", status), -1;
	/* The second TREAD is now in QEMU's throttle queue. */
	t_read = now_ms();
	usleep(300 * 1000);
	if (!umount2(P9_MNT, MNT_FORCE) || errno != EBUSY) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
		return snprintf(row->err, sizeof(row->err),
				"umount -f with a reader: %s, not EBUSY", strerror(errno)), -1;
	}
	t_kill = now_ms();
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	t_kill = now_ms() - t_kill;
	if (t_kill > row->die_ms)
		row->die_ms = t_kill;

	if (refill_take(&refill))
		return snprintf(row->err, sizeof(row->err), "refill: %s", strerror(errno)), -1;

	/* The host writes CHUNK about CHUNK / HOST_BPS after it got it. */
	due = t_read + 1000LL * CHUNK / HOST_BPS + 2000;
	while (now_ms() < due)
		usleep(100 * 1000);
	refill_check(&refill, &d);
	row->file_pages += d.file_pages;
	row->bad_pages += d.bad_pages;

	if (umount2(P9_MNT, 0) || p9_mount())
		return snprintf(row->err, sizeof(row->err), "remount: %s", strerror(errno)), -1;
	return d.file_pages || d.bad_pages;
}

static void run_row(struct row *row)
{
	int i, res = 0;

	for (i = 0; i < row->attempts && res >= 0; i++) {
		res = attempt(row);
		if (res)
			row->failed++;
	}
	ksft_print_msg("%s: %d of %d attempts with changed pages: %ld pages with the file's data, %ld otherwise changed; the killed reader took up to %lld ms to die\n",
		       row->name, row->failed, i, row->file_pages, row->bad_pages,
		       row->die_ms);
	if (row->err[0])
		ksft_print_msg("%s: %s\n", row->name, row->err);
	ksft_test_result(!row->failed && !row->err[0], "%s\n", row->name);
}

/*
 * A 16-page read() into fresh, page-aligned memory pins and releases
 * exactly its 16 pages (patch 12; Debian's 6.1 takes references).
 */
static void counted_row(void)
{
	const int n = 16;
	struct pins p;
	long wrong;
	ssize_t got = refill_counted_read(&refill, P9_FILE, n, &wrong, &p);

	ksft_print_msg("v9fs_kill_read_counted: read %zd bytes, %ld words wrong, pins +%ld -%ld\n",
		       got, wrong, p.acq, p.rel);
	ksft_test_result(got == n * page_size && !wrong && p.acq == n &&
			 p.rel == n, "v9fs_kill_read_counted\n");
	/* Let the throttle's bucket drain, so the next first read is quick. */
	sleep(n * page_size / HOST_BPS + 1);
}

int main(int argc, char **argv)
{
	struct row rows[] = {
		{ .name = "v9fs_kill_read" },
		{ .name = "v9fs_kill_splice", .use_splice = 1 },
	};
	int attempts = argc > 1 ? atoi(argv[1]) : 3, i;
	struct pins p0;

	page_size = sysconf(_SC_PAGESIZE);
	pins_test_start(4);
	refill_init(&refill);
	if (attempts < 1)
		ksft_exit_fail_msg("usage: v9fs_kill [attempts per row]\n");
	if (p9_mount() && errno != EBUSY) {
		const char *why = errno == ENODEV ? "no 9p in this kernel" :
				  "no 9p export (run-qemu.sh's " P9_TAG ")";

		ksft_print_msg("mount %s: %s\n", P9_TAG, strerror(errno));
		skip_rows("v9fs_kill", why);
	}
	if (refill_write_file(P9_FILE, FILE_LEN))
		ksft_exit_fail_msg("writing %s: %s\n", P9_FILE, strerror(errno));
	p0 = pins_now();
	counted_row();
	for (i = 0; i < 2; i++) {
		rows[i].attempts = attempts;
		run_row(&rows[i]);
	}
	p0 = pins_since(p0);
	ksft_test_result(p0.acq == p0.rel, "v9fs_kill_balance (pins +%ld -%ld)\n",
			 p0.acq, p0.rel);
	umount2(P9_MNT, 0);
	ksft_finished();
}

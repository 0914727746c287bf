// SPDX-License-Identifier: GPL-2.0
/*
 * ib_perftest_pins: RDMA traffic between two processes over soft-RoCE
 * (rdma_rxe on lo) with Debian's perftest and rdma-core: ib_write_bw and
 * ib_read_bw register their buffers (ib_umem_get(): FOLL_LONGTERM pins),
 * move data with RDMA WRITE / READ, and at exit every pin is released
 * (ib_umem_release()). Debian's 6.1 already pins here; the test guards
 * it with real traffic, where ib_umem_pins only registers memory.
 *
 * The pins held are sampled while the client runs; the total taken must
 * cover both processes' message buffers and be returned when they exit.
 */
#include <signal.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"

#define UVERBS		"/dev/infiniband/uverbs0"
#define MSG_SIZE	"65536"
#define ITERS		"2000"	/* about a second of traffic under TCG */

/* Start @prog (server without @host, client with it); output to @log. */
static pid_t spawn(const char *prog, const char *port, const char *host,
		   const char *log)
{
	pid_t pid = fork();

	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);

		if (fd < 0)
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execlp(prog, prog, "-d", "rxe0", "-s", MSG_SIZE, "-n", ITERS,
		       "-p", port, host, (char *)NULL);
		_exit(127);
	}
	return pid;
}

/*
 * Wait up to @secs for @pid, sampling the pins held since @p0 into *@held
 * (the most seen); its exit status, or -1 (killed) on timeout.
 */
static int reap(pid_t pid, int secs, struct pins p0, long *held)
{
	int status, i;

	for (i = 0; i < secs * 100; i++) {
		struct pins now = pins_since(p0);

		if (now.acq - now.rel > *held)
			*held = now.acq - now.rel;
		if (waitpid(pid, &status, WNOHANG) == pid)
			return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
		usleep(10000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return -1;
}

/* Print the last lines of @log as diagnostics. */
static void show_log(const char *log, int lines)
{
	char buf[256], *ring[16];
	int n = 0, i;
	FILE *f = fopen(log, "r");

	if (!f)
		return;
	while (fgets(buf, sizeof(buf), f)) {
		if (n >= lines)
			free(ring[n % lines]);
		ring[n % lines] = strdup(buf);
		n++;
	}
	fclose(f);
	for (i = n > lines ? n - lines : 0; i < n; i++) {
		ksft_print_msg("  %s", ring[i % lines]);
		free(ring[i % lines]);
	}
}

static void test_pair(const char *prog, const char *port)
{
	char slog[64], clog[64];
	long min_pins = 2 * atol(MSG_SIZE) / sysconf(_SC_PAGESIZE);
	struct pins p = pins_now();
	int srv_rc, cli_rc;
	long held = 0;
	pid_t srv, cli;

	snprintf(slog, sizeof(slog), "/tmp/%s.server.log", prog);
	snprintf(clog, sizeof(clog), "/tmp/%s.client.log", prog);
	srv = spawn(prog, port, NULL, slog);
	usleep(500000);	/* the client gives up if no server listens */
	cli = spawn(prog, port, "127.0.0.1", clog);
	cli_rc = reap(cli, 300, p, &held);
	srv_rc = reap(srv, 30, p, &held);
	p = pins_since(p);
	ksft_print_msg("%s: server exit %d, client exit %d; pins held during the run (most seen) %ld; in all acquired %ld released %ld\n",
		       prog, srv_rc, cli_rc, held, p.acq, p.rel);
	if (srv_rc || cli_rc) {
		ksft_print_msg("%s server:\n", prog);
		show_log(slog, 8);
		ksft_print_msg("%s client:\n", prog);
		show_log(clog, 8);
	} else {
		show_log(clog, 3);
	}
	ksft_test_result(!srv_rc && !cli_rc && held > 0 &&
			 p.acq >= min_pins, "%s_traffic_pins_buffers\n", prog);
	ksft_test_result(!srv_rc && !cli_rc && p.rel == p.acq,
			 "%s_exit_releases_pins\n", prog);
}

int main(void)
{
	pins_test_start(4);
	/* rxe's port is active only while its netdev is up. */
	lo_up();
	if (access(UVERBS, F_OK) &&
	    system("rdma link add rxe0 type rxe netdev lo"))
		ksft_exit_fail_msg("rdma link add rxe0 type rxe netdev lo failed (CONFIG_RDMA_RXE, iproute2's rdma)\n");
	test_pair("ib_write_bw", "18515");
	test_pair("ib_read_bw", "18516");
	ksft_finished();
}

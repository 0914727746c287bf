// SPDX-License-Identifier: GPL-2.0
/*
 * st_pins: the SCSI tape driver's direct I/O pins the user buffer
 * (drivers/scsi/st.c sgl_map_user_pages(): pin_user_pages_fast(), Case 1
 * of pin_user_pages.rst) for the one command and unpins it when the
 * command is done. Debian's 6.1 already does this; the test guards it.
 *
 * The tape is tgt's virtual tape, served on the host over iSCSI on
 * loopback (scripts/tape-target.sh) and passed to the guest as a
 * scsi-generic device on the virtio-scsi bus, where st binds to it.
 * Records are 64 KiB in variable block mode. A buffer that is not
 * aligned for the queue's DMA (4 bytes for SCSI) goes through st's own
 * buffer: no pins.
 */
#include <dirent.h>
#include <sys/mtio.h>
#include "dio_common.h"
#include "kselftest.h"

#define NPAGES		16

static long page_size;

/* /dev/nstN of the first SCSI tape (non-rewinding: records stay put). */
static int find_tape(char *path, size_t len)
{
	DIR *dir = opendir("/sys/class/scsi_tape");
	struct dirent *d;
	int ret = -1;

	if (!dir)
		return -1;
	while ((d = readdir(dir)))
		if (!strncmp(d->d_name, "nst", 3) &&
		    strspn(d->d_name + 3, "0123456789") ==
		    strlen(d->d_name + 3)) {
			snprintf(path, len, "/dev/%.32s", d->d_name);
			ret = 0;
			break;
		}
	closedir(dir);
	return ret;
}

static int mt(int fd, short op, int count)
{
	struct mtop o = { .mt_op = op, .mt_count = count };

	return ioctl(fd, MTIOCTOP, &o) ? -errno : 0;
}

/* write() or read() one record; the pins it took; its result in *ret. */
static struct pins rw_record(int fd, int write_it, void *buf, long len,
			     long *ret)
{
	struct pins p = pins_now();

	*ret = write_it ? write(fd, buf, len) : read(fd, buf, len);
	if (*ret < 0)
		*ret = -errno;
	return pins_since(p);
}

static void report(const char *name, const char *what, long ret,
		   struct pins p)
{
	ksft_print_msg("%s: %s %ld%s%s, pins acquired %ld released %ld\n",
		       name, what, ret, ret < 0 ? " " : "",
		       ret < 0 ? strerror(-ret) : "", p.acq, p.rel);
}

int main(void)
{
	long len, ret;
	unsigned char *a, *b, *ro, *hole;
	char path[64];
	struct pins p;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	len = NPAGES * page_size;
	pins_test_start(5);
	if (find_tape(path, sizeof(path)))
		ksft_exit_fail_msg("no SCSI tape (the host's tgt target, scripts/tape-target.sh)\n");
	fd = open(path, O_RDWR);
	if (fd < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	if (mt(fd, MTREW, 1) || mt(fd, MTSETBLK, 0))
		ksft_exit_fail_msg("%s: rewind / variable block mode: %s\n",
				   path, strerror(errno));
	ksft_print_msg("tape %s, variable blocks, records of %ld bytes\n",
		       path, len);

	a = map_pages(NPAGES + 1, PROT_READ | PROT_WRITE);
	b = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	ro = map_pages(NPAGES, PROT_READ);
	hole = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (!a || !b || !ro || !hole)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));

	/* Record 1, direct from an aligned buffer: every page pinned. */
	memset(a, 0x5a, len);
	p = rw_record(fd, 1, a, len, &ret);
	report("st_pins_aligned_write_pins", "write", ret, p);
	ksft_test_result(ret == len && p.acq == NPAGES && p.rel == NPAGES,
			 "st_pins_aligned_write_pins\n");

	/* Record 2, at an odd address: st copies it into its own buffer. */
	memset(a + 101, 0xc3, len);
	p = rw_record(fd, 1, a + 101, len, &ret);
	report("st_pins_unaligned_write_buffered", "write", ret, p);
	ksft_test_result(ret == len && p.acq == 0 && p.rel == 0,
			 "st_pins_unaligned_write_buffered\n");

	/* A write whose buffer's tail is unmapped: EFAULT, no pin kept. */
	munmap(hole + NPAGES / 2 * page_size, NPAGES / 2 * page_size);
	memset(hole, 1, NPAGES / 2 * page_size);
	p = rw_record(fd, 1, hole, len, &ret);
	report("st_pins_unmapped_tail_write_refused", "write", ret, p);
	ksft_test_result(ret == -EFAULT && p.acq == p.rel,
			 "st_pins_unmapped_tail_write_refused\n");

	/* Record 3, for the read-only test below. */
	memset(a, 0x77, len);
	p = rw_record(fd, 1, a, len, &ret);
	if (ret != len)
		ksft_exit_fail_msg("writing record 3: %ld\n", ret);

	if (mt(fd, MTREW, 1))
		ksft_exit_fail_msg("rewind: %s\n", strerror(errno));
	p = rw_record(fd, 0, b, len, &ret);
	report("st_pins_aligned_read_pins", "read", ret, p);
	ksft_test_result(ret == len && p.acq == NPAGES && p.rel == NPAGES &&
			 b[0] == 0x5a && b[len - 1] == 0x5a &&
			 !memcmp(b, b + 1, len - 1),
			 "st_pins_aligned_read_pins\n");

	/* Record 2 must have reached the tape as written. */
	p = rw_record(fd, 0, b, len, &ret);
	ksft_print_msg("record 2 read back: %ld bytes, first %#x last %#x\n",
		       ret, b[0], b[len - 1]);
	if (ret != len || b[0] != 0xc3 || memcmp(b, b + 1, len - 1))
		ksft_exit_fail_msg("record 2 (the buffered write) came back wrong\n");

	/* Record 3 into read-only memory: EFAULT, no pin kept. */
	p = rw_record(fd, 0, ro, len, &ret);
	report("st_pins_readonly_read_refused", "read", ret, p);
	ksft_test_result(ret == -EFAULT && p.acq == p.rel,
			 "st_pins_readonly_read_refused\n");

	close(fd);
	munmap(a, (NPAGES + 1) * page_size);
	munmap(b, len);
	munmap(ro, len);
	munmap(hole, NPAGES / 2 * page_size);
	ksft_finished();
}

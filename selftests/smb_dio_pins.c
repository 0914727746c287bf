// SPDX-License-Identifier: GPL-2.0
/*
 * smb_dio_pins: uncached SMB I/O receives into and sends from the user's
 * pages after handing them to the cifs workers (fs/smb/client/file.c,
 * misc.c). The series pins them (Case 1 of pin_user_pages.rst); Debian's
 * 6.1 held plain references, so no pin is counted there.
 *
 * The guest serves a tmpfs directory with Samba's smbd
 * (initramfs/smb-loopback) and mounts it over loopback: an O_DIRECT
 * read and write on the default mount take cifs_send_async_read() and
 * cifs_write_from_iter() on the user's pages; a plain read on a
 * cache=none mount takes setup_aio_ctx_iter()'s bvec of the user's pages.
 */
#include "dio_common.h"
#include "kselftest.h"

#define NPAGES		16
#define MNT		"/mnt/smb"
#define MNT_NOCACHE	"/mnt/smb-nocache"
#define SMB_OPTS	"unc=\\\\127.0.0.1\\share,ip=127.0.0.1,username=root,password=pin,vers=3.0"

static long page_size;

static void smb_mount(const char *dir, const char *extra)
{
	char opts[256];

	snprintf(opts, sizeof(opts), "%s%s", SMB_OPTS, extra);
	mkdir(dir, 0755);
	if (mount("//127.0.0.1/share", dir, "cifs", 0, opts)) {
		int err = errno;

		if (system("sed 's/^/# smbd: /' /var/log/samba/smbd.log"))
			ksft_print_msg("no smbd log\n");
		ksft_exit_fail_msg("mount -t cifs //127.0.0.1/share %s: %s\n",
				   dir, strerror(err));
	}
}

/* pread() or pwrite() of @len bytes at 0; bytes or -errno, and the pins. */
static long rw(int fd, int write_it, void *buf, long len, struct pins *p)
{
	struct pins p0 = pins_now();
	long ret = write_it ? pwrite(fd, buf, len, 0) : pread(fd, buf, len, 0);

	if (ret < 0)
		ret = -errno;
	*p = pins_since(p0);
	return ret;
}

/* One KTAP line: @ret == @len bytes moved and @n pins taken and released. */
static void counted(const char *name, long ret, long len, struct pins p,
		    int data_ok)
{
	ksft_print_msg("%s: %ld bytes, data %s, pins acquired %ld released %ld\n",
		       name, ret, data_ok ? "intact" : "WRONG", p.acq, p.rel);
	ksft_test_result(ret == len && data_ok && p.acq == NPAGES &&
			 p.rel == NPAGES, "%s\n", name);
}

int main(void)
{
	unsigned char *buf, *ro, *hole;
	long len, ret;
	struct pins p;
	int fd;

	page_size = sysconf(_SC_PAGESIZE);
	len = NPAGES * page_size;
	pins_test_start(5);
	if (system("smb-loopback"))
		ksft_exit_fail_msg("smb-loopback could not start smbd\n");
	smb_mount(MNT, "");
	smb_mount(MNT_NOCACHE, ",cache=none");
	buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	ro = map_pages(NPAGES, PROT_READ);
	hole = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (!buf || !ro || !hole)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));

	/* Direct write from the user's pages. */
	fd = open(MNT "/smb_dio_pins.dat", O_RDWR | O_CREAT | O_TRUNC |
		  O_DIRECT, 0644);
	if (fd < 0)
		ksft_exit_fail_msg("open O_DIRECT on %s: %s\n", MNT,
				   strerror(errno));
	memset(buf, 0x6b, len);
	ret = rw(fd, 1, buf, len, &p);
	counted("smb_dio_pins_direct_write_counted", ret, len, p, 1);

	/* Direct read into them. */
	memset(buf, 0, len);
	ret = rw(fd, 0, buf, len, &p);
	counted("smb_dio_pins_direct_read_counted", ret, len, p,
		buf[0] == 0x6b && !memcmp(buf, buf + 1, len - 1));

	/* Bad input: read-only destination, then an unmapped tail. */
	ret = rw(fd, 0, ro, len, &p);
	ksft_print_msg("direct read into read-only memory: %ld (%s), pins acquired %ld released %ld\n",
		       ret, ret < 0 ? strerror(-ret) : "read", p.acq, p.rel);
	ksft_test_result(ret == -EFAULT && p.acq == p.rel,
			 "smb_dio_pins_readonly_target_efault\n");
	munmap(hole + NPAGES / 2 * page_size, NPAGES / 2 * page_size);
	memset(hole, 1, NPAGES / 2 * page_size);
	ret = rw(fd, 0, hole, len, &p);
	ksft_print_msg("direct read into a buffer with an unmapped tail: %ld (%s), pins acquired %ld released %ld\n",
		       ret, ret < 0 ? strerror(-ret) : "read", p.acq, p.rel);
	ksft_test_result(ret != len && p.acq == p.rel,
			 "smb_dio_pins_unmapped_tail_no_leak\n");
	close(fd);

	/* A plain read on the cache=none mount: the uncached bvec path. */
	fd = open(MNT_NOCACHE "/smb_dio_pins.dat", O_RDONLY);
	if (fd < 0)
		ksft_exit_fail_msg("open on %s: %s\n", MNT_NOCACHE,
				   strerror(errno));
	memset(buf, 0, len);
	ret = rw(fd, 0, buf, len, &p);
	counted("smb_dio_pins_uncached_read_counted", ret, len, p,
		buf[0] == 0x6b && !memcmp(buf, buf + 1, len - 1));
	close(fd);

	umount(MNT_NOCACHE);
	umount(MNT);
	munmap(buf, len);
	munmap(ro, len);
	munmap(hole, NPAGES / 2 * page_size);
	ksft_finished();
}

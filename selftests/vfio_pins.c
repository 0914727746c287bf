// SPDX-License-Identifier: GPL-2.0
/*
 * vfio_pins: VFIO type1 pins the memory a user maps for device DMA
 * (vfio_pin_pages_remote(): pin_user_pages_remote() with FOLL_LONGTERM,
 * Case 2 of pin_user_pages.rst) and VFIO_IOMMU_UNMAP_DMA releases every
 * pin. Debian's 6.1 already does this; the test guards it.
 *
 * The guest has QEMU's intel-iommu and its "edu" device (PCI 1234:11e8,
 * docs/specs/edu.rst in QEMU), which the test binds to vfio-pci. edu's DMA
 * engine copies between guest memory and a 4 KiB buffer inside the device,
 * so the test also proves that the device writes into the pinned pages,
 * and that after fork() it still writes into the parent's pages: a pinned
 * anonymous page is copied for the child at fork (page_maybe_dma_pinned()),
 * not shared copy-on-write with the parent's next write.
 */
#include <dirent.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>
#include <sys/wait.h>
#include "dio_common.h"
#include "kselftest.h"

#define PCI_DEVS	"/sys/bus/pci/devices"
#define NPAGES		16
#define IOVA		0x100000UL	/* below edu's 28-bit DMA mask */

/* edu's MMIO registers and its DMA buffer (an address on the device). */
#define EDU_ID		0x00
#define EDU_DMA_SRC	0x80
#define EDU_DMA_DST	0x88
#define EDU_DMA_CNT	0x90
#define EDU_DMA_CMD	0x98
#define EDU_CMD_START	0x1
#define EDU_CMD_TO_RAM	0x2
#define EDU_BUF		0x40000
/*
 * Bytes per transfer: QEMU 7.2's edu refuses (with a hardware error that
 * stops the guest) a transfer that ends exactly at the end of its 4 KiB
 * buffer, so stay well inside it.
 */
#define DMA_LEN		2048

static long page_size;
static int container, group, device;
static volatile unsigned char *bar;

/* Find the edu device; fill @bdf with its PCI address. */
static int find_edu(char *bdf, size_t len)
{
	char path[320], id[16];
	struct dirent *d;
	DIR *dir = opendir(PCI_DEVS);
	int found = -1;
	FILE *f;

	if (!dir)
		return -1;
	while (found && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), PCI_DEVS "/%s/vendor", d->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fgets(id, sizeof(id), f) && !strncmp(id, "0x1234", 6)) {
			fclose(f);
			snprintf(path, sizeof(path), PCI_DEVS "/%s/device",
				 d->d_name);
			f = fopen(path, "r");
			if (!f)
				continue;
			if (fgets(id, sizeof(id), f) &&
			    !strncmp(id, "0x11e8", 6)) {
				snprintf(bdf, len, "%s", d->d_name);
				found = 0;
			}
		}
		fclose(f);
	}
	closedir(dir);
	return found;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -errno;
}

/*
 * Bind edu to vfio-pci, open its IOMMU group into a type1 container, map
 * its BAR 0 and let it master the bus.
 */
static void setup(void)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };
	struct vfio_region_info reg = { .argsz = sizeof(reg) };
	char bdf[256], path[320], link[320], *grp;
	unsigned short cmd;
	ssize_t n;

	if (find_edu(bdf, sizeof(bdf)))
		ksft_exit_fail_msg("no edu PCI device (QEMU -device edu)\n");
	snprintf(path, sizeof(path), PCI_DEVS "/%s/driver", bdf);
	if (access(path, F_OK)) {
		snprintf(path, sizeof(path), PCI_DEVS "/%s/driver_override",
			 bdf);
		if (write_file(path, "vfio-pci") ||
		    write_file("/sys/bus/pci/drivers_probe", bdf))
			ksft_exit_fail_msg("binding %s to vfio-pci: %s\n", bdf,
					   strerror(errno));
	}
	snprintf(path, sizeof(path), PCI_DEVS "/%s/iommu_group", bdf);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0)
		ksft_exit_fail_msg("%s has no IOMMU group (intel-iommu, intel_iommu=on?)\n",
				   bdf);
	link[n] = 0;
	grp = strrchr(link, '/') + 1;
	ksft_print_msg("edu at %s, IOMMU group %s\n", bdf, grp);

	container = open("/dev/vfio/vfio", O_RDWR);
	if (container < 0)
		ksft_exit_fail_msg("/dev/vfio/vfio: %s\n", strerror(errno));
	if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION ||
	    ioctl(container, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) <= 0)
		ksft_exit_fail_msg("no VFIO type1v2 IOMMU\n");
	snprintf(path, sizeof(path), "/dev/vfio/%s", grp);
	group = open(path, O_RDWR);
	if (group < 0)
		ksft_exit_fail_msg("%s: %s\n", path, strerror(errno));
	if (ioctl(group, VFIO_GROUP_GET_STATUS, &status) ||
	    !(status.flags & VFIO_GROUP_FLAGS_VIABLE))
		ksft_exit_fail_msg("IOMMU group %s not viable\n", grp);
	if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) ||
	    ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU))
		ksft_exit_fail_msg("VFIO container set-up: %s\n",
				   strerror(errno));
	device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
	if (device < 0)
		ksft_exit_fail_msg("VFIO_GROUP_GET_DEVICE_FD: %s\n",
				   strerror(errno));

	reg.index = VFIO_PCI_BAR0_REGION_INDEX;
	if (ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &reg) ||
	    !(reg.flags & VFIO_REGION_INFO_FLAG_MMAP))
		ksft_exit_fail_msg("edu BAR 0 cannot be mapped\n");
	bar = mmap(NULL, reg.size, PROT_READ | PROT_WRITE, MAP_SHARED, device,
		   reg.offset);
	if (bar == MAP_FAILED)
		ksft_exit_fail_msg("mmap BAR 0: %s\n", strerror(errno));
	ksft_print_msg("edu id %#x\n", *(volatile __u32 *)(bar + EDU_ID));

	reg.index = VFIO_PCI_CONFIG_REGION_INDEX;
	if (ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &reg) ||
	    pread(device, &cmd, 2, reg.offset + PCI_COMMAND) != 2)
		ksft_exit_fail_msg("reading PCI_COMMAND: %s\n", strerror(errno));
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	if (pwrite(device, &cmd, 2, reg.offset + PCI_COMMAND) != 2)
		ksft_exit_fail_msg("writing PCI_COMMAND: %s\n", strerror(errno));
}

static int map_dma(void *vaddr, __u64 iova, __u64 size, __u32 flags)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map), .flags = flags,
		.vaddr = (unsigned long)vaddr, .iova = iova, .size = size,
	};

	return ioctl(container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

/* Unmap @size bytes at @iova; return the bytes unmapped or -errno. */
static long unmap_dma(__u64 iova, __u64 size)
{
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap), .iova = iova, .size = size,
	};

	if (ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap))
		return -errno;
	return unmap.size;
}

static void edu_reg64(unsigned int reg, __u64 val)
{
	*(volatile __u64 *)(bar + reg) = val;
}

/* One DMA of @len bytes between @iova and the device buffer; 0 or -1. */
static int edu_dma(__u64 iova, unsigned int len, int to_ram)
{
	int i;

	edu_reg64(EDU_DMA_SRC, to_ram ? EDU_BUF : iova);
	edu_reg64(EDU_DMA_DST, to_ram ? iova : EDU_BUF);
	edu_reg64(EDU_DMA_CNT, len);
	edu_reg64(EDU_DMA_CMD, EDU_CMD_START | (to_ram ? EDU_CMD_TO_RAM : 0));
	/* edu runs the transfer from a timer 100 ms (virtual time) later. */
	for (i = 0; i < 1000; i++) {
		if (!(*(volatile __u64 *)(bar + EDU_DMA_CMD) & EDU_CMD_START))
			return 0;
		usleep(10000);
	}
	return -1;
}

static int all_bytes(const unsigned char *p, long len, unsigned char c)
{
	long i;

	for (i = 0; i < len; i++)
		if (p[i] != c)
			return 0;
	return 1;
}

/*
 * Map NPAGES for DMA, let the device copy page 0 to page 1 through its
 * buffer, fork, and let the device write page 2 after the parent has
 * written to it: the device's data must reach the parent, not the child.
 * Then unmap and count the releases.
 */
static void test_map_dma(void)
{
	long len = NPAGES * page_size;
	unsigned char *buf = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	unsigned char *p1, *p2, seen = 0;
	struct pins m, u;
	int ret, fds[2], status, dma = -1;
	long unmapped;
	pid_t pid;

	if (!buf || pipe(fds))
		ksft_exit_fail_msg("mmap/pipe: %s\n", strerror(errno));
	memset(buf, 0x11, len);
	p1 = buf + page_size;
	p2 = buf + 2 * page_size;
	memset(buf, 0xa5, page_size);

	m = pins_now();
	ret = map_dma(buf, IOVA, len,
		      VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE);
	m = pins_since(m);
	ksft_print_msg("MAP_DMA %d, pins acquired %ld released %ld\n", ret,
		       m.acq, m.rel);
	ksft_test_result(!ret && m.acq == NPAGES && m.rel == 0,
			 "vfio_pins_map_dma_pins\n");
	if (ret) {
		ksft_test_result_skip("vfio_pins_device_dma_into_pinned_pages\n");
		ksft_test_result_skip("vfio_pins_fork_parent_keeps_dma_page\n");
		ksft_test_result_skip("vfio_pins_unmap_dma_releases\n");
		return;
	}

	if (!edu_dma(IOVA, DMA_LEN, 0))
		dma = edu_dma(IOVA + page_size, DMA_LEN, 1);
	ksft_print_msg("edu DMA page 0 -> device -> page 1: %s, page 1 byte %#x\n",
		       dma ? "timed out" : "done", p1[0]);
	ksft_test_result(!dma && all_bytes(p1, DMA_LEN, 0xa5) &&
			 all_bytes(p1 + DMA_LEN, page_size - DMA_LEN, 0x11),
			 "vfio_pins_device_dma_into_pinned_pages\n");

	pid = fork();
	if (pid < 0)
		ksft_exit_fail_msg("fork: %s\n", strerror(errno));
	if (!pid) {
		char c;

		/* Wait for the device's write, then report what we see. */
		close(fds[1]);
		if (read(fds[0], &c, 1) != 1)
			_exit(2);
		_exit(p2[0] == 0xa5 ? 1 : 0);
	}
	close(fds[0]);
	/* Another byte of the page the device is about to write. */
	p2[page_size - 1] = 0x22;
	dma = edu_dma(IOVA + 2 * page_size, DMA_LEN, 1);
	seen = p2[0];
	if (write(fds[1], "x", 1) != 1 || waitpid(pid, &status, 0) != pid)
		ksft_exit_fail_msg("child: %s\n", strerror(errno));
	close(fds[1]);
	ksft_print_msg("after fork: device wrote page 2 (%s); parent sees %#x, child saw %s\n",
		       dma ? "timed out" : "done", seen,
		       WIFEXITED(status) && WEXITSTATUS(status) == 0 ?
		       "its own copy" : "the device's data (or failed)");
	ksft_test_result(!dma && all_bytes(p2, DMA_LEN, 0xa5) &&
			 p2[page_size - 1] == 0x22 &&
			 WIFEXITED(status) && WEXITSTATUS(status) == 0,
			 "vfio_pins_fork_parent_keeps_dma_page\n");

	u = pins_now();
	unmapped = unmap_dma(IOVA, len);
	u = pins_since(u);
	ksft_print_msg("UNMAP_DMA %ld bytes, pins acquired %ld released %ld\n",
		       unmapped, u.acq, u.rel);
	ksft_test_result(unmapped == len && u.acq == 0 && u.rel == NPAGES,
			 "vfio_pins_unmap_dma_releases\n");
	munmap(buf, len);
}

/* A mapping that must fail: an errno, and no pin left behind. */
static void test_bad(void *vaddr, long size, __u32 flags, int want,
		     const char *name)
{
	struct pins p = pins_now();
	int ret = map_dma(vaddr, IOVA, size, flags);

	if (!ret)
		unmap_dma(IOVA, size);
	p = pins_since(p);
	ksft_print_msg("%s: MAP_DMA %d (%s), pins acquired %ld released %ld\n",
		       name, ret, ret ? strerror(-ret) : "mapped", p.acq, p.rel);
	ksft_test_result(ret == -want && p.acq == p.rel, "%s\n", name);
}

int main(void)
{
	__u32 rw = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE;
	unsigned char *ro, *hole;
	long len;

	page_size = sysconf(_SC_PAGESIZE);
	len = NPAGES * page_size;
	pins_test_start(8);
	setup();
	test_map_dma();

	ro = map_pages(NPAGES, PROT_READ);
	hole = map_pages(NPAGES, PROT_READ | PROT_WRITE);
	if (!ro || !hole)
		ksft_exit_fail_msg("mmap: %s\n", strerror(errno));
	test_bad(ro, len, rw, EFAULT, "vfio_pins_readonly_write_map_refused");
	munmap(hole + NPAGES / 2 * page_size, NPAGES / 2 * page_size);
	memset(hole, 1, NPAGES / 2 * page_size);
	test_bad(hole, len, rw, EFAULT,
		 "vfio_pins_unmapped_tail_refused_released");
	test_bad(hole, 0, rw, EINVAL, "vfio_pins_zero_length_refused");
	test_bad(hole + 100, page_size, rw, EINVAL,
		 "vfio_pins_unaligned_refused");
	munmap(ro, len);
	munmap(hole, NPAGES / 2 * page_size);
	ksft_finished();
}

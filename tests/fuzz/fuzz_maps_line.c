/* gs_parse_maps_line: one line of /proc/PID/maps (the path part is chosen by
 * whoever named the mapped file). */
#include "fuzz.h"

#include <errno.h>
#include <inttypes.h>
#include <sys/sysmacros.h>

#include "proc/holderscan.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *line = fuzz_cstr(data, size);
	dev_t dev = 0, dev2 = 0;
	ino_t ino = 0, ino2 = 0;
	int r = gs_parse_maps_line(line, &dev, &ino);

	FUZZ_CHECK(r == 0 || r == -EINVAL);
	if (r == 0) {
		char canon[160];

		FUZZ_CHECK(ino != 0);
		FUZZ_CHECK(major(dev) <= 0xfff && minor(dev) <= 0xfffff);
		/* the kernel's own format of the same identity parses back */
		snprintf(canon, sizeof(canon), "7f00-7f01 rw-s 00000000 %02x:%02x %" PRIu64 " /dev/x\n",
			 major(dev), minor(dev), (uint64_t)ino);
		FUZZ_CHECK(gs_parse_maps_line(canon, &dev2, &ino2) == 0);
		FUZZ_CHECK(dev2 == dev && ino2 == ino);
	}
	free(line);
	return 0;
}

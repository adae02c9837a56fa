/* gs_kfd_parse_properties and the gpu_id -> card mapping. */
#include "fuzz.h"

#include <errno.h>

#include "gpu/kfd.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size);
	struct gs_kfd_card cards[3] = {
		{ .pci = { 0, 0xc1, 0, 0 }, .render_minor_known = true, .render_minor = 128 },
		{ .pci = { 0, 0xc2, 0, 0 } },
		{ .pci = { 1, 0xc1, 0, 0 } },
	};
	struct gs_kfd_node n;
	struct gs_pci_addr pci;
	int r, c;

	r = gs_kfd_parse_properties(text, &n);
	FUZZ_CHECK(r == 0 || r == -EBADMSG);
	if (r == 0) {
		FUZZ_CHECK(n.id == 0 && n.gpu_id == 0);
		if (gs_kfd_node_pci(&n, &pci) == 0)
			FUZZ_CHECK(n.location_known && pci.dev <= 0x1f && pci.fn <= 7);
		c = gs_kfd_node_card(&n, cards, 3);
		FUZZ_CHECK(c == -ENOENT || (c >= 0 && c < 3));
		/* a card is only ever chosen on evidence */
		if (c >= 0)
			FUZZ_CHECK((n.render_minor_known && n.render_minor == 128 && c == 0) || n.location_known);
	}
	free(text);
	return 0;
}

/* gs_hostlist_parse and gs_hostlist_fold: -w/-x expressions, inventory host
 * words, and the folded host ranges of fleet reports.
 *
 * First byte: mode. Even: the rest is an expression: parse, check every
 * host is a valid, unique name, fold, parse the fold back: the same set.
 * Odd: the rest is a list of raw host strings (one per line) given to
 * fold directly (as the fleet report does with the names it ran); when
 * they are all valid names the fold parses back to the same set. */
#include "fuzz.h"

#include <errno.h>

#include "fleet/hostlist.h"

static void check_list(const struct gs_hostlist *l)
{
	FUZZ_CHECK(l->n <= GS_HOSTLIST_MAX);
	for (size_t i = 0; i < l->n; i++) {
		FUZZ_CHECK(l->hosts[i] != NULL);
		FUZZ_CHECK(gs_hostname_valid(l->hosts[i]));
		/* duplicate-free: each host is found at its own index */
		FUZZ_CHECK(gs_hostlist_index(l, l->hosts[i]) == (ssize_t)i);
	}
}

/* fold(hosts) parses back to exactly the set of hosts (order aside). */
static void roundtrip(char *const *hosts, size_t n)
{
	struct gs_hostlist back, uniq = GS_HOSTLIST_INIT;
	char err[256], *folded = NULL;
	int r;

	r = gs_hostlist_fold(hosts, n, &folded);
	FUZZ_CHECK(r == 0 && folded != NULL);
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(gs_hostlist_add(&uniq, hosts[i]) >= 0);
	r = gs_hostlist_parse(folded, &back, err, sizeof(err));
	if (r != 0) {
		fprintf(stderr, "fold gave '%s', which does not parse: %s\n", folded, err);
		abort();
	}
	if (back.n != uniq.n) {
		fprintf(stderr, "fold gave '%s': %zu hosts back, %zu in\n", folded, back.n, uniq.n);
		abort();
	}
	for (size_t i = 0; i < uniq.n; i++)
		if (gs_hostlist_index(&back, uniq.hosts[i]) < 0) {
			fprintf(stderr, "fold gave '%s', which lost '%s'\n", folded, uniq.hosts[i]);
			abort();
		}
	gs_hostlist_free(&back);
	gs_hostlist_free(&uniq);
	free(folded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[256], *text;
	struct gs_hostlist l, x;
	int r;

	if (size < 1)
		return 0;
	text = fuzz_cstr(data + 1, size - 1);
	if ((data[0] & 1) == 0) {
		err[0] = '\0';
		r = gs_hostlist_parse(text, &l, err, sizeof(err));
		FUZZ_CHECK(r == 0 || r == -EINVAL || r == -E2BIG);
		FUZZ_TERMINATED(err);
		if (r < 0) {
			/* refused with a message, nothing left to free */
			FUZZ_CHECK(err[0] != '\0' && l.n == 0 && l.hosts == NULL);
		} else {
			check_list(&l);
			roundtrip(l.hosts, l.n);
			/* -x of the list itself leaves nothing */
			if (gs_hostlist_parse(text, &x, err, sizeof(err)) == 0) {
				FUZZ_CHECK(gs_hostlist_exclude(&l, &x) == 0);
				FUZZ_CHECK(l.n == 0);
				gs_hostlist_free(&x);
			}
		}
		gs_hostlist_free(&l);
	} else {
		char *hosts[64], *save = NULL, *tok, *folded = NULL;
		size_t n = 0;
		bool valid = true;

		for (tok = strtok_r(text, "\n", &save); tok && n < 64; tok = strtok_r(NULL, "\n", &save)) {
			hosts[n++] = tok;
			valid = valid && gs_hostname_valid(tok);
		}
		r = gs_hostlist_fold(hosts, n, &folded);
		FUZZ_CHECK(r == 0 && folded != NULL);
		free(folded);
		if (valid)
			roundtrip(hosts, n);
	}
	free(text);
	return 0;
}

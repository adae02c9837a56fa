/* gs_inventory_parse: the inventory file (groups, hosts, transports), and
 * gs_inventory_split_words (ssh-opt=, exec=, GPUSLATE_SSH). */
#include "fuzz.h"

#include <errno.h>

#include "fleet/inventory.h"

static void check_strv(char **v, size_t n)
{
	if (!v) {
		FUZZ_CHECK(n == 0);
		return;
	}
	for (size_t i = 0; i < n; i++)
		FUZZ_CHECK(v[i] != NULL);
	FUZZ_CHECK(v[n] == NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_cstr(data, size), err[512];
	struct gs_inventory inv;
	char **words = NULL;
	size_t nw = 0;
	int r;

	err[0] = '\0';
	r = gs_inventory_parse(text, "fuzz", &inv, err, sizeof(err));
	FUZZ_TERMINATED(err);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -E2BIG || r == -ENOMEM);
	if (r < 0) {
		FUZZ_CHECK(strncmp(err, "fuzz", 4) == 0);
		FUZZ_CHECK(inv.n_entries == 0 && inv.entries == NULL && inv.n_groups == 0);
	} else {
		struct gs_hostlist all = GS_HOSTLIST_INIT;

		FUZZ_CHECK(inv.n_entries == inv.all.n);
		for (size_t i = 0; i < inv.n_entries; i++) {
			const struct gs_host_entry *e = &inv.entries[i];

			FUZZ_CHECK(e->name && gs_hostname_valid(e->name) && !strchr(e->name, '@'));
			FUZZ_CHECK(gs_inventory_find(&inv, inv.all.hosts[i]) == e);
			FUZZ_CHECK(e->transport <= GS_TRANSPORT_EXEC);
			check_strv(e->ssh_opts, e->n_ssh_opts);
			check_strv(e->exec_argv, e->n_exec_argv);
			check_strv(e->remote_cmd, e->n_remote_cmd);
			if (e->transport == GS_TRANSPORT_EXEC)
				FUZZ_CHECK(e->n_exec_argv > 0 && !e->user && !e->via && !e->port);
			if (e->transport == GS_TRANSPORT_PCT || e->transport == GS_TRANSPORT_LXC)
				FUZZ_CHECK(e->via != NULL);
			if (e->user)
				FUZZ_CHECK(e->user[0] != '\0' && !strpbrk(e->user, " \t\n;$`'\"@"));
		}
		for (size_t g = 0; g < inv.n_groups; g++) {
			const struct gs_inventory_group *grp = &inv.groups[g];

			FUZZ_CHECK(grp->name && gs_inventory_group(&inv, grp->name) == &grp->members);
			for (size_t i = 0; i < grp->members.n; i++)
				FUZZ_CHECK(gs_inventory_find(&inv, grp->members.hosts[i]) != NULL);
		}
		/* @all is every host of the file */
		FUZZ_CHECK(gs_inventory_hostlist_append(&inv, &all, "@all", err, sizeof(err)) == 0);
		FUZZ_CHECK(all.n == inv.all.n);
		gs_hostlist_free(&all);
		gs_inventory_free(&inv);
	}

	r = gs_inventory_split_words(text, &words, &nw);
	FUZZ_CHECK(r == 0 || r == -EINVAL || r == -ENOMEM);
	if (r == 0) {
		check_strv(words, nw);
		for (size_t i = 0; i < nw; i++)
			FUZZ_CHECK(words[i][0] != '\0' || strchr(text, '"') != NULL);
		gs_strv_free(words);
	}
	free(text);
	return 0;
}

/* The stopped-state file; see stopped.h. */
#include "core/stopped.h"
#include "proc/owner.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *gs_stopped_kind_str(enum gs_stopped_kind k)
{
	return k == GS_STOPPED_CONTAINER ? "container" : k == GS_STOPPED_SUPERVISED ? "supervised" : "unit";
}

const char *gs_stopped_path(char *buf, size_t len)
{
	const char *p = getenv("GPUSLATE_STOPPED_FILE"), *state = getenv("GPUSLATE_STATE_FILE");

	if (p && *p)
		return p;
	if (state && *state) {
		snprintf(buf, len, "%s.stopped", state);
		return buf;
	}
	if (geteuid() == 0)
		return "/run/gpuslate.stopped";
	snprintf(buf, len, "/tmp/gpuslate-%u.stopped", (unsigned)getuid());
	return buf;
}

/* The names end up as one argv word of systemctl, pct, lxc-attach, docker
 * or podman, after "--" where the tool takes one: never a shell. Still,
 * the file is only as trusted as its checks: a name the managers would
 * never give is refused rather than passed on. systemd escapes anything
 * else as \xNN, so its characters are enough for units too. */
bool gs_stopped_name_ok(const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n == 0 || n >= max || s[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
		      c == '_' || c == '-' || c == '@' || c == ':' || c == '\\'))
			return false;
	}
	return true;
}

static bool text_ok(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return false;
	return true;
}

/* A string member into buf: missing or null is "" unless required. */
static int get_str(json_t *o, const char *key, bool required, char *buf, size_t len, char *err, size_t errlen,
		   size_t idx)
{
	json_t *v = json_object_get(o, key);

	buf[0] = '\0';
	if (!v || json_is_null(v)) {
		if (!required)
			return 0;
		gs_seterr(err, errlen, "record %zu: no \"%s\"", idx + 1, key);
		return -EINVAL;
	}
	if (!json_is_string(v) || json_string_length(v) >= len || strlen(json_string_value(v)) != json_string_length(v) ||
	    !text_ok(json_string_value(v))) {
		gs_seterr(err, errlen, "record %zu: \"%s\" is not a short one-line string", idx + 1, key);
		return -EINVAL;
	}
	gs_strlcpy(buf, json_string_value(v), len);
	return 0;
}

static int get_time(json_t *o, const char *key, int64_t *ret, char *err, size_t errlen, size_t idx)
{
	json_t *v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		gs_seterr(err, errlen, "record %zu: \"%s\" is not a unix time", idx + 1, key);
		return -EINVAL;
	}
	*ret = (int64_t)json_integer_value(v);
	return 0;
}

/* A supervised program's record: a name and a way to reach the tool that
 * gpuslate would have used (proc/supervised.h), nothing else. */
static bool supervised_rec_ok(const struct gs_stopped_rec *r)
{
	if (r->id[0] || r->container[0])
		return false;
	if (!strcmp(r->runtime, "supervisord")) {
		if (!gs_stopped_name_ok(r->name, sizeof(r->name)) || !strchr(r->name, ':'))
			return false;
		if (!strcmp(r->control_opt, "-c"))
			return r->control[0] == '/';
		if (!strcmp(r->control_opt, "-s"))
			return (gs_startswith(r->control, "unix:///") || gs_startswith(r->control, "http://")) &&
			       !strchr(r->control, ' ');
		return false;
	}
	if (strcmp(r->runtime, "runit") && strcmp(r->runtime, "s6"))
		return false;
	/* A service directory: absolute, no way up out of it. */
	return r->name[0] == '/' && !strstr(r->name, "/../") && !gs_endswith(r->name, "/..") && !r->control_opt[0] &&
	       !r->control[0];
}

static int parse_record(json_t *o, size_t idx, struct gs_stopped_rec *r, char *err, size_t errlen)
{
	char kind[16];
	json_t *rc;

	memset(r, 0, sizeof(*r));
	if (!json_is_object(o)) {
		gs_seterr(err, errlen, "record %zu is not an object", idx + 1);
		return -EINVAL;
	}
	if (get_str(o, "kind", true, kind, sizeof(kind), err, errlen, idx) < 0 ||
	    get_str(o, "runtime", true, r->runtime, sizeof(r->runtime), err, errlen, idx) < 0 ||
	    get_str(o, "name", false, r->name, sizeof(r->name), err, errlen, idx) < 0 ||
	    get_str(o, "id", false, r->id, sizeof(r->id), err, errlen, idx) < 0 ||
	    get_str(o, "container", false, r->container, sizeof(r->container), err, errlen, idx) < 0 ||
	    get_str(o, "state_before", false, r->state_before, sizeof(r->state_before), err, errlen, idx) < 0 ||
	    get_str(o, "enabled_before", false, r->enabled_before, sizeof(r->enabled_before), err, errlen, idx) < 0 ||
	    get_str(o, "control_option", false, r->control_opt, sizeof(r->control_opt), err, errlen, idx) < 0 ||
	    get_str(o, "control", false, r->control, sizeof(r->control), err, errlen, idx) < 0 ||
	    get_time(o, "stopped_at", &r->stopped_at, err, errlen, idx) < 0)
		return -EINVAL;
	rc = json_object_get(o, "reclaim");
	if (!json_is_object(rc) || get_time(rc, "started_at", &r->reclaim_at, err, errlen, idx) < 0 ||
	    get_str(rc, "reason", false, r->reason, sizeof(r->reason), err, errlen, idx) < 0) {
		if (!json_is_object(rc))
			gs_seterr(err, errlen, "record %zu: no \"reclaim\" object", idx + 1);
		return -EINVAL;
	}
	/* A user's unit: its manager is that user's (owner.h gs_unit_scope_user).
	 * The scope is spelled only as "user"; a "container" is a CT's name. */
	if (!strcmp(kind, "unit") && r->container[0] && !gs_stopped_name_ok(r->container, sizeof(r->container))) {
		gs_seterr(err, errlen, "record %zu: not a systemd unit gpuslate could have stopped", idx + 1);
		return -EINVAL;
	}
	{
		json_t *u = json_object_get(o, "user");

		if (u && !json_is_null(u)) {
			if (!json_is_integer(u) || json_integer_value(u) < 0 || json_integer_value(u) >= 4294967295LL ||
			    r->container[0] || strcmp(kind, "unit")) {
				gs_seterr(err, errlen, "record %zu: \"user\" is not a uid of a unit's manager", idx + 1);
				return -EINVAL;
			}
			gs_unit_scope_user(r->container, sizeof(r->container), (unsigned)json_integer_value(u));
		}
	}
	if (!strcmp(kind, "unit")) {
		r->kind = GS_STOPPED_UNIT;
		if (strcmp(r->runtime, "systemd") || !gs_stopped_name_ok(r->name, sizeof(r->name)) || r->id[0] ||
		    (r->container[0] && !gs_unit_scope_is_user(r->container, NULL) &&
		     !gs_stopped_name_ok(r->container, sizeof(r->container)))) {
			gs_seterr(err, errlen, "record %zu: not a systemd unit gpuslate could have stopped", idx + 1);
			return -EINVAL;
		}
	} else if (!strcmp(kind, "container")) {
		r->kind = GS_STOPPED_CONTAINER;
		if ((strcmp(r->runtime, "docker") && strcmp(r->runtime, "podman")) || r->container[0] ||
		    !gs_stopped_name_ok(r->id, sizeof(r->id)) || (r->name[0] && !gs_stopped_name_ok(r->name, sizeof(r->name)))) {
			gs_seterr(err, errlen, "record %zu: not a docker or podman container gpuslate could have stopped",
				  idx + 1);
			return -EINVAL;
		}
	} else if (!strcmp(kind, "supervised")) {
		r->kind = GS_STOPPED_SUPERVISED;
		if (!supervised_rec_ok(r)) {
			gs_seterr(err, errlen, "record %zu: not a supervisord, runit or s6 program gpuslate could have stopped",
				  idx + 1);
			return -EINVAL;
		}
	} else {
		gs_seterr(err, errlen, "record %zu: unknown kind", idx + 1);
		return -EINVAL;
	}
	return 0;
}

int gs_stopped_parse(const char *text, size_t len, struct gs_stopped *ret, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), *list, *o;
	size_t i;
	int r = 0;

	memset(ret, 0, sizeof(*ret));
	if (!doc && json_error_code(&jerr) == json_error_out_of_memory) {
		gs_seterr(err, errlen, "out of memory");
		return -ENOMEM;
	}
	if (!json_is_object(doc)) {
		gs_seterr(err, errlen, "not a JSON object%s%s", doc ? "" : ": ", doc ? "" : jerr.text);
		json_decref(doc);
		return -EINVAL;
	}
	if (!json_is_integer(json_object_get(doc, "schema_version")) ||
	    json_integer_value(json_object_get(doc, "schema_version")) != GS_STOPPED_SCHEMA_VERSION) {
		gs_seterr(err, errlen, "schema_version is not %d", GS_STOPPED_SCHEMA_VERSION);
		json_decref(doc);
		return -EINVAL;
	}
	list = json_object_get(doc, "stopped");
	if (!json_is_array(list) || json_array_size(list) > GS_STOPPED_MAX_RECORDS) {
		gs_seterr(err, errlen, "\"stopped\" is not a list of at most %u records", GS_STOPPED_MAX_RECORDS);
		json_decref(doc);
		return -EINVAL;
	}
	json_array_foreach(list, i, o) {
		struct gs_stopped_rec rec;

		r = parse_record(o, i, &rec, err, errlen);
		if (r == 0)
			r = gs_stopped_add(ret, &rec);
		if (r < 0)
			break;
	}
	json_decref(doc);
	if (r < 0)
		gs_stopped_free(ret);
	return r;
}

int gs_stopped_load(const char *path, struct gs_stopped *ret, char *err, size_t errlen)
{
	struct stat st;
	char *text = NULL;
	size_t len = 0;
	int fd, r;

	memset(ret, 0, sizeof(*ret));
	/* O_NONBLOCK: a FIFO put there must not hang us before the check. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		r = -errno;
		gs_seterr(err, errlen, "%s", r == -ELOOP ? "it is a symbolic link" : strerror(-r));
		return r == -ELOOP ? -EPERM : r;
	}
	if (fstat(fd, &st) < 0) {
		r = -errno;
		close(fd);
		gs_seterr(err, errlen, "%s", strerror(-r));
		return r;
	}
	if (!S_ISREG(st.st_mode) || (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022)) {
		gs_seterr(err, errlen, "%s", !S_ISREG(st.st_mode) ? "not a regular file"
					     : st.st_mode & 022 ? "others may write it (group or world writable)"
								: "owned by another user");
		close(fd);
		return -EPERM;
	}
	if ((uint64_t)st.st_size > GS_STOPPED_MAX_BYTES) {
		close(fd);
		gs_seterr(err, errlen, "larger than %u bytes", GS_STOPPED_MAX_BYTES);
		return -EINVAL;
	}
	r = gs_read_fd(fd, GS_STOPPED_MAX_BYTES, false, &text, &len);
	close(fd);
	if (r < 0) {
		gs_seterr(err, errlen, "%s", strerror(-r));
		return r;
	}
	r = gs_stopped_parse(text, len, ret, err, errlen);
	free(text);
	return r;
}

static json_t *str_or_null(const char *s)
{
	return s[0] ? json_string(s) : json_null();
}

int gs_stopped_save(const char *path, const struct gs_stopped *s)
{
	json_t *doc, *list;
	char tmp[4200], *text;
	size_t len;
	int fd, r = 0;

	if (s->n == 0)
		return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
	doc = json_object();
	list = json_array();
	if (!doc || !list) {
		json_decref(doc);
		json_decref(list);
		return -ENOMEM;
	}
	json_object_set_new(doc, "schema_version", json_integer(GS_STOPPED_SCHEMA_VERSION));
	json_object_set_new(doc, "stopped", list);
	for (size_t i = 0; i < s->n; i++) {
		const struct gs_stopped_rec *x = &s->recs[i];
		json_t *o = json_object(), *rc = json_object();

		if (!o || !rc) {
			json_decref(o);
			json_decref(rc);
			json_decref(doc);
			return -ENOMEM;
		}
		json_object_set_new(o, "kind", json_string(gs_stopped_kind_str(x->kind)));
		json_object_set_new(o, "runtime", json_string(x->runtime));
		json_object_set_new(o, "name", str_or_null(x->name));
		json_object_set_new(o, "id", str_or_null(x->id));
		if (x->kind == GS_STOPPED_SUPERVISED) {
			json_object_set_new(o, "control_option", str_or_null(x->control_opt));
			json_object_set_new(o, "control", str_or_null(x->control));
		}
		{
			unsigned uid;
			bool user = gs_unit_scope_is_user(x->container, &uid);

			json_object_set_new(o, "container", user ? json_null() : str_or_null(x->container));
			json_object_set_new(o, "user", user ? json_integer(uid) : json_null());
		}
		json_object_set_new(o, "stopped_at", json_integer(x->stopped_at));
		json_object_set_new(rc, "started_at", json_integer(x->reclaim_at));
		json_object_set_new(rc, "reason", str_or_null(x->reason));
		json_object_set_new(o, "reclaim", rc);
		json_object_set_new(o, "state_before", str_or_null(x->state_before));
		json_object_set_new(o, "enabled_before", str_or_null(x->enabled_before));
		json_array_append_new(list, o);
	}
	text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(doc);
	if (!text)
		return -ENOMEM;
	len = strlen(text);
	/* O_EXCL: in a shared /tmp, a name someone else made is not ours to
	 * write through. */
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	(void)unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
		free(text);
		return r;
	}
	errno = 0;
	if (write(fd, text, len) != (ssize_t)len || write(fd, "\n", 1) != 1)
		r = errno ? -errno : -EIO;
	if (fsync(fd) < 0 && !r)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r)
		(void)unlink(tmp);
	free(text);
	return r;
}

bool gs_stopped_same(const struct gs_stopped_rec *a, const struct gs_stopped_rec *b)
{
	if (a->kind != b->kind || strcmp(a->runtime, b->runtime))
		return false;
	if (a->kind == GS_STOPPED_CONTAINER)
		return !strcmp(a->id, b->id);
	return !strcmp(a->container, b->container) && !strcmp(a->name, b->name);
}

int gs_stopped_add(struct gs_stopped *s, const struct gs_stopped_rec *r)
{
	for (size_t i = 0; i < s->n; i++)
		if (gs_stopped_same(&s->recs[i], r)) {
			s->recs[i] = *r;
			return 0;
		}
	if (s->n >= GS_STOPPED_MAX_RECORDS)
		return -E2BIG;
	if (GS_ARRAY_RESERVE(s->recs, s->cap, s->n) < 0)
		return -ENOMEM;
	s->recs[s->n++] = *r;
	return 0;
}

void gs_stopped_remove(struct gs_stopped *s, size_t i)
{
	if (i >= s->n)
		return;
	memmove(&s->recs[i], &s->recs[i + 1], (s->n - i - 1) * sizeof(*s->recs));
	s->n--;
}

void gs_stopped_free(struct gs_stopped *s)
{
	free(s->recs);
	memset(s, 0, sizeof(*s));
}

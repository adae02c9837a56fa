/* A fleet's `status --format prometheus`: every host's exposition merged
 * into one that a collector can read (Prometheus text format 0.0.4). Each
 * metric's HELP and TYPE come once, its samples from every host together
 * (the format wants a metric's samples in one group), each sample with a
 * host="NAME" label, NAME as the host list gives it. A label "host" a host
 * sent itself is kept as "exported_host" (as Prometheus renames a clash).
 * A host that failed adds gpuslate_up{host="NAME"} 0.
 *
 * The hosts' text is remote input: a line that is not a HELP, TYPE,
 * comment or well-formed sample (printable ASCII) is dropped (counted in
 * *dropped), never copied, so one host cannot break the document for the
 * others.
 *
 * Library code: returns 0 or -errno, never prints. */
#ifndef GS_FLEET_PROM_H
#define GS_FLEET_PROM_H

#include <stddef.h>

#include "fleet/merge.h"

/* *ret is malloc'd; dropped may be NULL. */
int gs_fleet_render_prometheus(const struct gs_host_result *r, size_t n, char **ret, size_t *dropped);

#endif

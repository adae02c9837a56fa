/* Owner classification from /proc/PID/cgroup fixtures (v1, v2, hybrid). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdbool.h>

#include "proc/owner.h"

#define ID2 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static const char id1[] = "3f2a9c1e5b7d4f60a1b2c3d4e5f60718293a4b5c6d7e8f900112233445566778";

static void expect(const char *text, enum gs_owner_kind kind, const char *name,
		   const char *unit, unsigned uid, const char *cgroup)
{
	struct gs_owner o;
	int r = gs_owner_from_cgroup(text, &o);

	if (r != 0 || o.kind != kind || strcmp(o.name, name) != 0 || strcmp(o.unit, unit) != 0 ||
	    o.uid != uid || (cgroup && strcmp(o.cgroup, cgroup) != 0))
		print_error("text:\n%s\ngot r=%d kind=%s name='%s' unit='%s' uid=%u cgroup='%s'\n",
			    text, r, gs_owner_kind_str(o.kind), o.name, o.unit, o.uid, o.cgroup);
	assert_int_equal(r, 0);
	assert_string_equal(gs_owner_kind_str(o.kind), gs_owner_kind_str(kind));
	assert_string_equal(o.name, name);
	assert_string_equal(o.unit, unit);
	assert_int_equal(o.uid, uid);
	if (cgroup)
		assert_string_equal(o.cgroup, cgroup);
}

static void test_kind_str(void **state)
{
	(void)state;
	assert_string_equal(gs_owner_kind_str(GS_OWNER_NONE), "none");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_UNIT), "unit");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_USER_UNIT), "user-unit");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_SESSION), "session");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_DOCKER), "docker");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_PODMAN), "podman");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_KUBERNETES), "kubernetes");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_LXC), "lxc");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_NSPAWN), "nspawn");
	assert_string_equal(gs_owner_kind_str(GS_OWNER_SLURM), "slurm");
	assert_string_equal(gs_owner_kind_str((enum gs_owner_kind)99), "none");
}

static void test_ids(void **state)
{
	(void)state;
	assert_int_equal(strlen(id1), 64);
	assert_int_equal(strlen(ID2), 64);
}

static void test_root_and_init(void **state)
{
	(void)state;
	expect("0::/\n", GS_OWNER_NONE, "", "", 0, "/");
	expect("0::/init.scope\n", GS_OWNER_UNIT, "init.scope", "", 0, "/init.scope");
	/* kernel thread on a v1 host */
	expect("12:pids:/\n11:memory:/\n1:name=systemd:/\n", GS_OWNER_NONE, "", "", 0, "/");
	/* custom cgroup without any unit */
	expect("0::/mygroup/sub\n", GS_OWNER_NONE, "", "", 0, "/mygroup/sub");
	/* no trailing newline */
	expect("0::/system.slice/cron.service", GS_OWNER_UNIT, "cron.service", "", 0, NULL);
}

static void test_system_units(void **state)
{
	(void)state;
	expect("0::/system.slice/ollama.service\n", GS_OWNER_UNIT, "ollama.service", "", 0,
	       "/system.slice/ollama.service");
	/* template instance and systemd escapes stay as written */
	expect("0::/system.slice/system-getty.slice/getty@tty1.service\n", GS_OWNER_UNIT,
	       "getty@tty1.service", "", 0, NULL);
	expect("0::/system.slice/vllm\\x2dserver.service\n", GS_OWNER_UNIT,
	       "vllm\\x2dserver.service", "", 0, NULL);
	/* sub-cgroups a service creates itself (Delegate=yes) */
	expect("0::/system.slice/triton.service/workers/w3\n", GS_OWNER_UNIT, "triton.service", "", 0, NULL);
	/* units in other slices */
	expect("0::/machine.slice/libvirtd.service\n", GS_OWNER_UNIT, "libvirtd.service", "", 0, NULL);
	expect("0::/gpu.slice/gpu-jobs.slice/train.service\n", GS_OWNER_UNIT, "train.service", "", 0, NULL);
	/* transient scope from systemd-run --scope */
	expect("0::/system.slice/run-r3b1c2d.scope\n", GS_OWNER_UNIT, "run-r3b1c2d.scope", "", 0, NULL);
	/* a unit inside a unit lives below a delegation boundary: the outer
	 * unit is the host's, the inner one its own manager's (see
	 * test_delegation_boundaries) */
	expect("0::/system.slice/outer.service/inner.service\n", GS_OWNER_UNIT, "outer.service", "inner.service", 0, NULL);
	expect("0::/system.slice/a.service/x.scope\n", GS_OWNER_UNIT, "a.service", "x.scope", 0, NULL);
	/* docker.service itself is a unit, not a container */
	expect("0::/system.slice/docker.service\n", GS_OWNER_UNIT, "docker.service", "", 0, NULL);
	/* removed cgroup on v2 */
	expect("0::/system.slice/old.service (deleted)\n", GS_OWNER_UNIT, "old.service", "", 0,
	       "/system.slice/old.service");
}

static void test_session_and_user(void **state)
{
	(void)state;
	expect("0::/user.slice/user-1000.slice/session-4.scope\n", GS_OWNER_SESSION, "4", "", 1000, NULL);
	expect("0::/user.slice/user-120.slice/session-c1.scope\n", GS_OWNER_SESSION, "c1", "", 120, NULL);
	expect("0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n",
	       GS_OWNER_USER_UNIT, "jupyter.service", "", 1000, NULL);
	expect("0::/user.slice/user-1001.slice/user@1001.service/app.slice/"
	       "app-gnome-firefox-2101.scope\n",
	       GS_OWNER_USER_UNIT, "app-gnome-firefox-2101.scope", "", 1001, NULL);
	expect("0::/user.slice/user-1000.slice/user@1000.service/init.scope\n",
	       GS_OWNER_USER_UNIT, "init.scope", "", 1000, NULL);
	expect("0::/user.slice/user-1000.slice/user@1000.service\n",
	       GS_OWNER_USER_UNIT, "user@1000.service", "", 1000, NULL);
	/* v1 host (CentOS 7 style), session of root */
	expect("11:pids:/user.slice/user-0.slice\n"
	       "10:memory:/user.slice/user-0.slice\n"
	       "4:cpu,cpuacct:/user.slice/user-0.slice\n"
	       "1:name=systemd:/user.slice/user-0.slice/session-12.scope\n",
	       GS_OWNER_SESSION, "12", "", 0, "/user.slice/user-0.slice/session-12.scope");
}

static void test_docker(void **state)
{
	char buf[1024];

	(void)state;
	snprintf(buf, sizeof(buf), "0::/system.slice/docker-%s.scope\n", id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* v1, systemd driver, several hierarchies */
	snprintf(buf, sizeof(buf),
		 "12:devices:/system.slice/docker-%s.scope\n"
		 "11:memory:/system.slice/docker-%s.scope\n"
		 "5:cpu,cpuacct:/system.slice/docker-%s.scope\n"
		 "1:name=systemd:/system.slice/docker-%s.scope\n", id1, id1, id1, id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* cgroupfs driver, v1 without a name=systemd hierarchy (Alpine) */
	snprintf(buf, sizeof(buf),
		 "10:cpuset:/docker/%s\n"
		 "9:memory:/docker/%s\n"
		 "8:pids:/docker/%s\n", id1, id1, id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* docker-in-docker: the inner container */
	snprintf(buf, sizeof(buf), "0::/docker/%s/docker/%s\n", id1, ID2);
	expect(buf, GS_OWNER_DOCKER, ID2, "", 0, NULL);
	snprintf(buf, sizeof(buf), "0::/system.slice/docker-%s.scope/docker/%s\n", id1, ID2);
	expect(buf, GS_OWNER_DOCKER, ID2, "", 0, NULL);
	/* a service inside a container with systemd is still the container */
	snprintf(buf, sizeof(buf), "0::/system.slice/docker-%s.scope/system.slice/nginx.service\n", id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* rootless docker */
	snprintf(buf, sizeof(buf),
		 "0::/user.slice/user-1000.slice/user@1000.service/app.slice/docker-%s.scope\n", id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* not 64 hex: no container */
	expect("0::/docker/buildkit\n", GS_OWNER_NONE, "", "", 0, NULL);
	expect("0::/system.slice/docker-3f2a9c1e5b7d.scope\n", GS_OWNER_UNIT,
	       "docker-3f2a9c1e5b7d.scope", "", 0, NULL);
	{
		char name[128];

		snprintf(name, sizeof(name), "docker-%sX.scope", id1);
		snprintf(buf, sizeof(buf), "0::/system.slice/%s\n", name);
		expect(buf, GS_OWNER_UNIT, name, "", 0, NULL);
	}
}

static void test_hybrid(void **state)
{
	char buf[1024];

	(void)state;
	/* hybrid: the v2 line wins when it says something */
	expect("12:pids:/user.slice/user-1000.slice/session-2.scope\n"
	       "11:memory:/user.slice/user-1000.slice/session-2.scope\n"
	       "1:name=systemd:/system.slice/decoy.service\n"
	       "0::/user.slice/user-1000.slice/session-2.scope\n",
	       GS_OWNER_SESSION, "2", "", 1000, "/user.slice/user-1000.slice/session-2.scope");
	/* hybrid where the unified line is "/" and v1 has the docker path */
	snprintf(buf, sizeof(buf),
		 "9:name=systemd:/\n"
		 "8:pids:/docker/%s\n"
		 "4:memory:/docker/%s\n"
		 "0::/\n", id1, id1);
	expect(buf, GS_OWNER_DOCKER, id1, "", 0, NULL);
	/* nothing classifiable: the v2 path is reported */
	expect("9:name=systemd:/\n"
	       "4:memory:/process_api/e99b168f2c04c0e861a10a90f3636eb8\n"
	       "1:cpu:/\n"
	       "0::/\n", GS_OWNER_NONE, "", "", 0, "/");
	/* only a cpu hierarchy left */
	expect("3:cpu,cpuacct:/system.slice/sshd.service\n2:devices:/\n",
	       GS_OWNER_UNIT, "sshd.service", "", 0, NULL);
}

static void test_podman(void **state)
{
	char buf[1024];

	(void)state;
	snprintf(buf, sizeof(buf), "0::/machine.slice/libpod-%s.scope/container\n", id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
	snprintf(buf, sizeof(buf), "0::/machine.slice/libpod-%s.scope\n", id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
	snprintf(buf, sizeof(buf), "0::/machine.slice/libpod-conmon-%s.scope\n", id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
	/* rootless */
	snprintf(buf, sizeof(buf),
		 "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-%s.scope/container\n", id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
	/* pod member, and the cgroupfs manager */
	snprintf(buf, sizeof(buf),
		 "0::/machine.slice/machine-libpod_pod_%s.slice/libpod-%s.scope/container\n", ID2, id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
	snprintf(buf, sizeof(buf), "0::/libpod_parent/libpod-%s\n", id1);
	expect(buf, GS_OWNER_PODMAN, id1, "", 0, NULL);
}

static void test_kubernetes(void **state)
{
	char buf[1024];
	const char *uid = "8f2a0e51-7c3b-4d6e-9a10-2b3c4d5e6f70";

	(void)state;
	snprintf(buf, sizeof(buf),
		 "0::/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod8f2a0e51_7c3b_4d6e_9a10_2b3c4d5e6f70.slice/"
		 "cri-containerd-%s.scope\n", id1);
	expect(buf, GS_OWNER_KUBERNETES, uid, "", 0, NULL);
	snprintf(buf, sizeof(buf),
		 "0::/kubepods.slice/kubepods-besteffort.slice/"
		 "kubepods-besteffort-pod8f2a0e51_7c3b_4d6e_9a10_2b3c4d5e6f70.slice/crio-%s.scope\n", id1);
	expect(buf, GS_OWNER_KUBERNETES, uid, "", 0, NULL);
	/* guaranteed QoS, docker runtime: still the pod, not docker */
	snprintf(buf, sizeof(buf),
		 "0::/kubepods.slice/kubepods-pod8f2a0e51_7c3b_4d6e_9a10_2b3c4d5e6f70.slice/"
		 "docker-%s.scope\n", id1);
	expect(buf, GS_OWNER_KUBERNETES, uid, "", 0, NULL);
	/* cgroupfs driver, v1 */
	snprintf(buf, sizeof(buf),
		 "11:memory:/kubepods/burstable/pod%s/%s\n"
		 "3:pids:/kubepods/burstable/pod%s/%s\n", uid, id1, uid, id1);
	expect(buf, GS_OWNER_KUBERNETES, uid, "", 0, NULL);
	snprintf(buf, sizeof(buf), "0::/kubepods/pod%s/%s\n", uid, id1);
	expect(buf, GS_OWNER_KUBERNETES, uid, "", 0, NULL);
	/* the QoS slice itself (pause-less housekeeping) */
	expect("0::/kubepods.slice/kubepods-burstable.slice\n", GS_OWNER_KUBERNETES, "", "", 0, NULL);
}

static void test_lxc(void **state)
{
	(void)state;
	/* Proxmox VE: payload under ns/, inner unit kept */
	expect("0::/lxc/129/ns/system.slice/ollama.service\n", GS_OWNER_LXC, "129", "ollama.service", 0,
	       "/lxc/129/ns/system.slice/ollama.service");
	expect("0::/lxc/129/ns/init.scope\n", GS_OWNER_LXC, "129", "init.scope", 0, NULL);
	expect("0::/lxc/129/ns/user.slice/user-0.slice/session-3.scope\n", GS_OWNER_LXC, "129",
	       "session-3.scope", 0, NULL);
	expect("0::/lxc/129/ns\n", GS_OWNER_LXC, "129", "", 0, NULL);
	/* Proxmox monitor */
	expect("0::/lxc.monitor/129\n", GS_OWNER_LXC, "129", "", 0, NULL);
	/* older LXC on v1 */
	expect("10:memory:/lxc/web01/system.slice/nginx.service\n"
	       "1:name=systemd:/lxc/web01/system.slice/nginx.service\n",
	       GS_OWNER_LXC, "web01", "nginx.service", 0, NULL);
	/* LXC 4+, LXD, Incus */
	expect("0::/lxc.payload.ct1/system.slice/foo.service\n", GS_OWNER_LXC, "ct1", "foo.service", 0, NULL);
	expect("0::/lxc.payload.gpu-box\n", GS_OWNER_LXC, "gpu-box", "", 0, NULL);
	expect("0::/lxc.monitor.ct1\n", GS_OWNER_LXC, "ct1", "", 0, NULL);
	/* docker inside a CT belongs to the CT */
	expect("0::/lxc/200/ns/system.slice/docker.service\n", GS_OWNER_LXC, "200", "docker.service", 0, NULL);
}

static void test_slurm(void **state)
{
	(void)state;
	expect("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n",
	       GS_OWNER_SLURM, "4242", "", 0, NULL);
	expect("0::/system.slice/slurmstepd.scope/job_4242/step_batch/slurm\n",
	       GS_OWNER_SLURM, "4242", "", 0, NULL);
	expect("0::/system.slice/slurmstepd.scope/system\n",
	       GS_OWNER_UNIT, "slurmstepd.scope", "", 0, NULL);
	expect("11:memory:/slurm/uid_1000/job_77/step_0/task_1\n"
	       "7:devices:/slurm/uid_1000/job_77/step_0\n"
	       "4:cpu,cpuacct:/\n"
	       "1:name=systemd:/system.slice/slurmd.service\n",
	       GS_OWNER_SLURM, "77", "", 0, NULL);
	expect("8:pids:/slurm_node07/uid_1000/job_912/step_extern\n", GS_OWNER_SLURM, "912", "", 0, NULL);
}

static void test_nspawn(void **state)
{
	(void)state;
	expect("0::/machine.slice/machine-build.scope\n", GS_OWNER_NSPAWN, "build", "", 0, NULL);
	expect("0::/machine.slice/machine-build.scope/payload/system.slice/x.service\n",
	       GS_OWNER_NSPAWN, "build", "x.service", 0, NULL);
	/* machined escapes the machine name; --container takes it as typed */
	expect("0::/machine.slice/machine-gpu\\x2dct.scope/payload/init.scope\n",
	       GS_OWNER_NSPAWN, "gpu-ct", "init.scope", 0, NULL);
	/* a libvirt VM is not an nspawn container */
	expect("0::/machine.slice/machine-qemu\\x2d1\\x2dwin11.scope/libvirt/emulator\n",
	       GS_OWNER_UNIT, "machine-qemu\\x2d1\\x2dwin11.scope", "", 0, NULL);
}

/* Whether the owner lies below a delegation boundary, and the cgroup its
 * unit's manager reports for the unit ("" when there is none to check). */
static void expect_boundary(const char *text, enum gs_owner_kind kind, const char *name, const char *unit,
			    bool delegated, const char *unit_cgroup)
{
	struct gs_owner o;
	char cg[1024] = "";
	int r;

	expect(text, kind, name, unit, 0, NULL);
	assert_int_equal(gs_owner_from_cgroup(text, &o), 0);
	r = gs_owner_unit_cgroup(&o, cg, sizeof(cg));
	if ((bool)o.delegated != delegated || (unit_cgroup[0] ? r != 0 || strcmp(cg, unit_cgroup) : r != -ENOENT))
		print_error("text: %sgot delegated=%d unit cgroup r=%d '%s'\n", text, o.delegated, r, cg);
	assert_int_equal(o.delegated, delegated);
	if (unit_cgroup[0]) {
		assert_int_equal(r, 0);
		assert_string_equal(cg, unit_cgroup);
	} else {
		assert_int_equal(r, -ENOENT);
	}
}

/* Issue 28: a user's unit is a unit of the user's manager, which names its
 * cgroup from the root as the path does; a unit below it is delegated. */
static void test_user_unit_cgroup(void **state)
{
	static const struct {
		const char *text, *name, *unit_cgroup;
		bool delegated;
	} cases[] = {
		{ "0::/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service\n", "jupyter.service",
		  "/user.slice/user-1000.slice/user@1000.service/app.slice/jupyter.service", false },
		{ "0::/gs-world-1/user.slice/user-0.slice/user@0.service/app.slice/trainer.service\n", "trainer.service",
		  "/gs-world-1/user.slice/user-0.slice/user@0.service/app.slice/trainer.service", false },
		{ "0::/user.slice/user-1000.slice/user@1000.service/app.slice/ci.service/inner/job.service\n", "ci.service",
		  "/user.slice/user-1000.slice/user@1000.service/app.slice/ci.service", true },
		/* A uid that does not parse names no manager: no unit cgroup. */
		{ "0::/user.slice/user-x.slice/user@x.service/app.slice/a.service\n", "a.service", "", false },
		{ "0::/../user.slice/user-1000.slice/user@1000.service/app.slice/a.service\n", "a.service", "", false },
	};
	struct gs_owner d;

	/* Named user@0.service inside a service's delegated subtree: the
	 * service owns it, never root's user manager. */
	assert_int_equal(gs_owner_from_cgroup("0::/system.slice/ci.service/user@0.service/app.slice/evil.service\n", &d),
			 0);
	assert_int_equal(d.kind, GS_OWNER_UNIT);
	assert_string_equal(d.name, "ci.service");
	assert_true(d.delegated);
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct gs_owner o;
		char cg[1024] = "";
		int r;

		assert_int_equal(gs_owner_from_cgroup(cases[i].text, &o), 0);
		assert_int_equal(o.kind, GS_OWNER_USER_UNIT);
		assert_string_equal(o.name, cases[i].name);
		assert_int_equal(o.delegated, cases[i].delegated);
		r = gs_owner_unit_cgroup(&o, cg, sizeof(cg));
		if (cases[i].unit_cgroup[0]) {
			assert_int_equal(r, 0);
			assert_string_equal(cg, cases[i].unit_cgroup);
		} else {
			assert_int_equal(r, -ENOENT);
		}
	}
	{
		char buf[32];
		unsigned uid = 1;

		assert_string_equal(gs_unit_scope_user(buf, sizeof(buf), 1000), "user/1000");
		assert_true(gs_unit_scope_is_user("user/1000", &uid));
		assert_int_equal(uid, 1000);
		assert_false(gs_unit_scope_is_user("", NULL));
		assert_false(gs_unit_scope_is_user("129", NULL));
		assert_false(gs_unit_scope_is_user("user/", NULL));
		assert_false(gs_unit_scope_is_user("user/x", NULL));
		assert_string_equal(gs_unit_scope_text("user/7", buf, sizeof(buf)), " of user 7");
		assert_string_equal(gs_unit_scope_text("129", buf, sizeof(buf)), " in CT 129");
		assert_string_equal(gs_unit_scope_text("", buf, sizeof(buf)), "");
	}
}

/* Issue 11 item 2: the innermost *.service of a path was taken for a host
 * unit, so `systemctl stop ollama.service` ran on the host for a service
 * inside a container. A unit below another unit belongs to the inner
 * manager. Paths as systemd, machined, nspawn and LXC create them. */
static void test_delegation_boundaries(void **state)
{
	(void)state;
	/* stock systemd-nspawn@.service (machinectl start ct1), systemd inside */
	expect_boundary("0::/machine.slice/systemd-nspawn@ct1.service/payload/system.slice/ollama.service\n",
			GS_OWNER_NSPAWN, "ct1", "ollama.service", false, "");
	expect_boundary("0::/machine.slice/systemd-nspawn@ct1.service/supervisor\n", GS_OWNER_NSPAWN, "ct1", "",
			false, "");
	expect_boundary("0::/machine.slice/systemd-nspawn@gpu\\x2dbox.service/payload/init.scope\n",
			GS_OWNER_NSPAWN, "gpu-box", "init.scope", false, "");
	/* registered with machined as a scope */
	expect_boundary("0::/machine.slice/machine-ct2.scope/payload/system.slice/vllm.service\n",
			GS_OWNER_NSPAWN, "ct2", "vllm.service", false, "");
	/* nspawn --keep-unit run from a script's own cgroup (no unit above) */
	expect_boundary("0::/gs-test-77/payload/system.slice/ollama.service\n", GS_OWNER_NSPAWN, "gs-test-77",
			"ollama.service", false, "");
	/* ... and from a unit: the generic case below */
	expect_boundary("0::/system.slice/box.service/payload/system.slice/ollama.service\n", GS_OWNER_UNIT,
			"box.service", "ollama.service", true, "/system.slice/box.service");
	/* a CI runner with Delegate=yes running a job's own systemd */
	expect_boundary("0::/system.slice/gitlab-runner.service/job-4411/system.slice/ollama.service\n",
			GS_OWNER_UNIT, "gitlab-runner.service", "ollama.service", true,
			"/system.slice/gitlab-runner.service");
	/* a plain host unit and its own sub-cgroups: not delegated to a manager */
	expect_boundary("0::/system.slice/ollama.service\n", GS_OWNER_UNIT, "ollama.service", "", false,
			"/system.slice/ollama.service");
	expect_boundary("0::/system.slice/triton.service/workers/w3\n", GS_OWNER_UNIT, "triton.service", "",
			false, "/system.slice/triton.service");
	/* a test world's manager below a non-unit cgroup */
	expect_boundary("0::/gs-e2e-1-2/system.slice/trainer.service\n", GS_OWNER_UNIT, "trainer.service", "",
			false, "/gs-e2e-1-2/system.slice/trainer.service");
	/* Proxmox: the CT's unit as the CT's systemd names it */
	expect_boundary("0::/lxc/129/ns/system.slice/ollama.service\n", GS_OWNER_LXC, "129", "ollama.service",
			false, "/system.slice/ollama.service");
	expect_boundary("0::/lxc.payload.ct1/system.slice/foo.service\n", GS_OWNER_LXC, "ct1", "foo.service",
			false, "/system.slice/foo.service");
	/* a user manager inside the CT: its units are not the CT's system units */
	expect_boundary("0::/lxc/129/ns/user.slice/user-0.slice/user@0.service/app.slice/foo.service\n",
			GS_OWNER_LXC, "129", "user@0.service", true, "/user.slice/user-0.slice/user@0.service");
	/* a delegated unit inside the CT */
	expect_boundary("0::/lxc/129/ns/system.slice/runner.service/c1/system.slice/ollama.service\n",
			GS_OWNER_LXC, "129", "runner.service", true, "/system.slice/runner.service");
	/* docker and podman with systemd inside: the container owns it */
	expect_boundary("0::/docker/" ID2 "/system.slice/ollama.service\n", GS_OWNER_DOCKER, ID2, "", false, "");
	expect_boundary("0::/system.slice/docker-" ID2 ".scope/system.slice/ollama.service\n", GS_OWNER_DOCKER,
			ID2, "", false, "");
	expect_boundary("0::/machine.slice/libpod-" ID2 ".scope/container/system.slice/ollama.service\n",
			GS_OWNER_PODMAN, ID2, "", false, "");
	/* seen from inside a cgroup namespace: no manager we reach names it so */
	expect_boundary("0::/../../system.slice/ollama.service\n", GS_OWNER_UNIT, "ollama.service", "", false, "");
}

static void test_cgroupns_relative(void **state)
{
	(void)state;
	/* read from inside a cgroup namespace: "/.." leads out of it */
	expect("0::/../../system.slice/nvidia-persistenced.service\n", GS_OWNER_UNIT,
	       "nvidia-persistenced.service", "", 0, NULL);
	expect("0::/../lxc.payload.c2/system.slice/a.service\n", GS_OWNER_LXC, "c2", "a.service", 0, NULL);
}

static void test_invalid(void **state)
{
	struct gs_owner o;

	(void)state;
	memset(&o, 0xaa, sizeof(o));
	assert_int_equal(gs_owner_from_cgroup("", &o), -EINVAL);
	assert_int_equal(o.kind, GS_OWNER_NONE);
	assert_string_equal(o.cgroup, "");
	assert_int_equal(gs_owner_from_cgroup(NULL, &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("\n\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("garbage\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("0:/x\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("x::/system.slice/a.service\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("-1::/system.slice/a.service\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("0::relative\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("0::\n", &o), -EINVAL);
	assert_int_equal(gs_owner_from_cgroup("99999999999999999999::/a.service\n", &o), -EINVAL);
	/* only hierarchies we do not use */
	assert_int_equal(gs_owner_from_cgroup("3:devices:/system.slice/a.service\n", &o), -EINVAL);
	assert_int_equal(o.kind, GS_OWNER_NONE);
	/* a cgroup name that smuggles in a second line */
	assert_int_equal(gs_owner_from_cgroup("0::/user.slice/evil\n0::/system.slice/sshd.service\n", &o),
			 -EINVAL);
	assert_int_equal(o.kind, GS_OWNER_NONE);
	assert_int_equal(gs_owner_from_cgroup("1:name=systemd:/a\nfoo\n0::/b.service\n", &o), -EINVAL);
	/* a named non-systemd hierarchy is ignored */
	assert_int_equal(gs_owner_from_cgroup("2:name=elogind:/c1\n1:blkio:/system.slice/x.service\n", &o),
			 -EINVAL);
	/* controller names only match whole words */
	assert_int_equal(gs_owner_from_cgroup("3:cpuset:/system.slice/a.service\n", &o), -EINVAL);
	/* path with ':' inside is fine */
	expect("0::/system.slice/we:ird.service\n", GS_OWNER_UNIT, "we:ird.service", "", 0, NULL);
}

static void test_long_paths(void **state)
{
	struct gs_owner o;
	char *buf = malloc(8192);
	size_t n = 0;

	(void)state;
	assert_non_null(buf);
	/* deep path longer than the cgroup field: classified from what fits */
	n += (size_t)sprintf(buf + n, "0::/system.slice/deep.service");
	while (n < 3000)
		n += (size_t)sprintf(buf + n, "/d");
	n += (size_t)sprintf(buf + n, "/late.service\n");
	assert_int_equal(gs_owner_from_cgroup(buf, &o), 0);
	assert_int_equal(o.kind, GS_OWNER_UNIT);
	assert_string_equal(o.name, "deep.service");
	assert_int_equal(strlen(o.cgroup), sizeof(o.cgroup) - 1);

	/* the last component cut in half is not taken for a unit */
	n = (size_t)sprintf(buf, "0::/");
	while (n < sizeof(o.cgroup) - 10)
		n += (size_t)sprintf(buf + n, "a/");
	n += (size_t)sprintf(buf + n, "ollama.service\n");
	assert_int_equal(gs_owner_from_cgroup(buf, &o), 0);
	assert_int_equal(o.kind, GS_OWNER_NONE);

	/* a component longer than the name fields */
	n = (size_t)sprintf(buf, "0::/system.slice/");
	for (int i = 0; i < 600; i++)
		buf[n++] = 'x';
	n += (size_t)sprintf(buf + n, ".service\n");
	assert_int_equal(gs_owner_from_cgroup(buf, &o), 0);
	assert_int_equal(o.kind, GS_OWNER_UNIT);
	assert_int_equal(strlen(o.name), sizeof(o.name) - 1);

	n = (size_t)sprintf(buf, "0::/lxc.payload.");
	for (int i = 0; i < 400; i++)
		buf[n++] = 'c';
	buf[n++] = '\n';
	buf[n] = '\0';
	assert_int_equal(gs_owner_from_cgroup(buf, &o), 0);
	assert_int_equal(o.kind, GS_OWNER_LXC);
	assert_int_equal(strlen(o.name), sizeof(o.name) - 1);

	/* many slashes, many lines */
	memset(buf, '/', 8000);
	memcpy(buf, "0::", 3);
	buf[8000] = '\0';
	assert_int_equal(gs_owner_from_cgroup(buf, &o), 0);
	assert_int_equal(o.kind, GS_OWNER_NONE);
	n = 0;
	for (int i = 300; i > 0 && n < 8000; i--)
		n += (size_t)sprintf(buf + n, "%d:x:/\n", i);
	assert_int_equal(gs_owner_from_cgroup(buf, &o), -EINVAL);
	free(buf);
}

/* /proc/PID/cgroup exactly as the test world's real managers wrote it on a
 * hybrid host (cgroup v1 controllers, v2 at /sys/fs/cgroup/unified; the
 * test runner's memory cgroup is its VM agent's): tests/world/. */
#define REAL_V1(path, memory) \
	"9:name=systemd:" path "\n8:pids:/\n7:blkio:/\n6:freezer:/\n5:devices:/\n4:memory:" memory \
	"\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n0::" path "\n"
#define REAL_VM_MEMORY "/process_api/478054d76163f4702b8a6419e0680a23"
#define REAL_DOCKER "6e8df3ef8d066b8def5d7f7856d7eccdfa8fa8943807b625ffc9cd49d56fedbc"
#define REAL_PODMAN "7704a7883737b10d9dac968608310e3d4a2a5d02169ad2123b3bc7c261b6aa7e"

static void test_real_managers(void **state)
{
	(void)state;
	/* systemd --user run as root below a prefix (the test's cgroup): its
	 * units, the manager itself, a login session made beside them */
	expect(REAL_V1("/gs-world-test1/system.slice/trainer.service", REAL_VM_MEMORY),
	       GS_OWNER_UNIT, "trainer.service", "", 0, "/gs-world-test1/system.slice/trainer.service");
	expect(REAL_V1("/gs-world-test1/init.scope", REAL_VM_MEMORY), GS_OWNER_UNIT, "init.scope", "", 0, NULL);
	expect(REAL_V1("/gs-world-test1/user.slice/user-1000.slice/session-7.scope", REAL_VM_MEMORY),
	       GS_OWNER_SESSION, "7", "", 1000, NULL);
	/* LXC 5 with Proxmox's settings (cgroup.dir.container = lxc/<vmid>,
	 * .inner = ns): some v1 controllers stop at the container */
	expect("9:name=systemd:/lxc/9123/ns/system.slice/infer.service\n"
	       "8:pids:/lxc/9123/ns/system.slice/infer.service\n"
	       "7:blkio:/lxc/9123/ns\n6:freezer:/lxc/9123/ns\n"
	       "5:devices:/lxc/9123/ns/system.slice/infer.service\n"
	       "4:memory:/lxc/9123/ns/system.slice/infer.service\n"
	       "3:cpuset:/lxc/9123/ns\n2:cpuacct:/lxc/9123/ns\n1:cpu:/lxc/9123/ns\n"
	       "0::/lxc/9123/ns/system.slice/infer.service\n",
	       GS_OWNER_LXC, "9123", "infer.service", 0, "/lxc/9123/ns/system.slice/infer.service");
	expect("9:name=systemd:/lxc/9123/ns/init.scope\n8:pids:/lxc/9123/ns/init.scope\n"
	       "7:blkio:/lxc/9123/ns\n6:freezer:/lxc/9123/ns\n5:devices:/lxc/9123/ns/init.scope\n"
	       "4:memory:/lxc/9123/ns/init.scope\n3:cpuset:/lxc/9123/ns\n2:cpuacct:/lxc/9123/ns\n"
	       "1:cpu:/lxc/9123/ns\n0::/lxc/9123/ns/init.scope\n",
	       GS_OWNER_LXC, "9123", "init.scope", 0, NULL);
	/* the same unit seen from inside the container (its cgroup namespace) */
	expect("9:name=systemd:/system.slice/infer.service\n8:pids:/system.slice/infer.service\n"
	       "7:blkio:/\n6:freezer:/\n5:devices:/system.slice/infer.service\n"
	       "4:memory:/system.slice/infer.service\n3:cpuset:/\n2:cpuacct:/\n1:cpu:/\n"
	       "0::/system.slice/infer.service\n",
	       GS_OWNER_UNIT, "infer.service", "", 0, "/system.slice/infer.service");
	/* Docker 20.10 and Podman 4.3 with the cgroupfs driver: every
	 * hierarchy, the unified one included, names the container */
	expect("9:name=systemd:/docker/" REAL_DOCKER "\n8:pids:/docker/" REAL_DOCKER "\n"
	       "7:blkio:/docker/" REAL_DOCKER "\n6:freezer:/docker/" REAL_DOCKER "\n"
	       "5:devices:/docker/" REAL_DOCKER "\n4:memory:/docker/" REAL_DOCKER "\n"
	       "3:cpuset:/docker/" REAL_DOCKER "\n2:cpuacct:/docker/" REAL_DOCKER "\n"
	       "1:cpu:/docker/" REAL_DOCKER "\n0::/docker/" REAL_DOCKER "\n",
	       GS_OWNER_DOCKER, REAL_DOCKER, "", 0, "/docker/" REAL_DOCKER);
	expect("9:name=systemd:/libpod_parent/libpod-" REAL_PODMAN "\n8:pids:/libpod_parent/libpod-" REAL_PODMAN "\n"
	       "7:blkio:/libpod_parent/libpod-" REAL_PODMAN "\n6:freezer:/libpod_parent/libpod-" REAL_PODMAN "\n"
	       "5:devices:/libpod_parent/libpod-" REAL_PODMAN "\n4:memory:/libpod_parent/libpod-" REAL_PODMAN "\n"
	       "3:cpuset:/libpod_parent/libpod-" REAL_PODMAN "\n2:cpuacct:/libpod_parent/libpod-" REAL_PODMAN "\n"
	       "1:cpu:/libpod_parent/libpod-" REAL_PODMAN "\n0::/libpod_parent/libpod-" REAL_PODMAN "\n",
	       GS_OWNER_PODMAN, REAL_PODMAN, "", 0, "/libpod_parent/libpod-" REAL_PODMAN);
	/* podman's conmon (the container's parent) stays in the root cgroup */
	expect(REAL_V1("/", "/"), GS_OWNER_NONE, "", "", 0, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kind_str),
		cmocka_unit_test(test_ids),
		cmocka_unit_test(test_root_and_init),
		cmocka_unit_test(test_system_units),
		cmocka_unit_test(test_session_and_user),
		cmocka_unit_test(test_docker),
		cmocka_unit_test(test_hybrid),
		cmocka_unit_test(test_podman),
		cmocka_unit_test(test_kubernetes),
		cmocka_unit_test(test_lxc),
		cmocka_unit_test(test_slurm),
		cmocka_unit_test(test_nspawn),
		cmocka_unit_test(test_delegation_boundaries),
		cmocka_unit_test(test_cgroupns_relative),
		cmocka_unit_test(test_invalid),
		cmocka_unit_test(test_long_paths),
		cmocka_unit_test(test_real_managers),
		cmocka_unit_test(test_user_unit_cgroup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}

#!/usr/bin/env bats
# AMD and Intel GPUs beside NVIDIA ones (issue 17), on a simulated host:
# tests/fakes/mkdrm.sh builds the /sys (--sys-root) and dev/dri, dev/kfd
# files; real gs-holder processes hold them (--open); the DRM usage keys of
# their fdinfo come from fixtures (GPUSLATE_FDINFO_SHADOW) that gpuslate
# believes only for the very open file they were written for; the simulated
# amdgpu (mkdrm.sh release) frees a context's memory and KFD entry when the
# last process holding it is gone. Nothing here ran on AMD or Intel hardware.
#
# The host: GPU 0 and 1 NVIDIA H200 (fake NVML); GPU 2 Intel (xe,
# 0000:83:00.0, card4, renderD131); GPU 3 AMD MI300X (0000:c1:00.0, card3,
# renderD130, KFD gpu_id 51887, GPU-1f9de0957d137940), 280 MiB used by the
# driver itself.

load helpers

UUID0=GPU-a2983c1e-0000-4000-8000-000000000000
AMD_UUID=GPU-1f9de0957d137940
AMD_PCI=0000:c1:00.0
INTEL_PCI=0000:83:00.0
AMD_GPU_ID=51887
AMD_RENDER=dri/renderD130
INTEL_RENDER=dri/renderD131

# helpers.bash's setup under another name: this file's setup builds the
# DRM part of the host after it.
eval "helpers_$(declare -f setup)"

setup() {
	GS_NGPUS=2
	helpers_setup
	rm -rf "$GS_HOST"
	bash "$GS_FAKES/mkdrm.sh" host "$GS_HOST" --nvidia 2
	mkdir -p "$GS_HOST/fdinfo"
	export GPUSLATE_SYS_ROOT=$GS_HOST/sys
	export GPUSLATE_FDINFO_SHADOW=$GS_HOST/fdinfo
}

mkdrm() { bash "$GS_FAKES/mkdrm.sh" "$@"; }

# fd_of NAME PATH: the fd gs-holder NAME opened PATH on.
fd_of() { ready_values "$BATS_TEST_TMPDIR/$1.ready" fd | sed -n "s|^$2:||p"; }

# amd_used MIB: what amdgpu's mem_info_vram_used says, the driver's 280 MiB included.
amd_used() { mkdrm vram-used "$GS_HOST" 3 $((280 + $1)); }

# ROCm worker NAME [gs-holder options]: a process with the AMD render node
# and /dev/kfd open and mapped (a HIP context).
rocm_worker() {
	local name=$1
	shift
	start_holder "$name" --open "$AMD_RENDER" --open kfd "$@"
}

# The simulated amdgpu: when the last holder of the AMD render node is
# gone, used memory drops to the driver's own and the KFD entries go.
start_driver() { bg driver bash "$GS_FAKES/mkdrm.sh" release "$GS_HOST" "$AMD_RENDER" 3 280 "$@"; }

@test "amd-intel: a mixed host lists NVIDIA, Intel and AMD GPUs with vendor, memory and ids (text, JSON, -g)" {
	start_holder nv --gpu 0 --mib 2048
	rocm_worker amd
	start_holder xe --open "$INTEL_RENDER"
	amd=$(rpid amd) xe=$(rpid xe) nv=$(rpid nv)
	mkdrm kfd-proc "$GS_HOST" "$amd" "$AMD_GPU_ID" 4096
	amd_used 4096
	mkdrm fdinfo "$GS_HOST" "$amd" "$(fd_of amd "$AMD_RENDER")" amdgpu "$AMD_PCI" 11 --vram-mib 4096
	mkdrm fdinfo "$GS_HOST" "$xe" "$(fd_of xe "$INTEL_RENDER")" xe "$INTEL_PCI" 3 --vram-mib 1024 --gtt-mib 64

	run --separate-stderr gs status
	assert_status 0
	assert_match "$output" "^GPU +VENDOR +NAME +UUID +USED +RESERVED +TOTAL +HOLDERS\$" "header"
	assert_match "$output" "^0 +NVIDIA +NVIDIA H200 +$UUID0 +2048 MiB +615 MiB +143771 MiB +1\$" "NVIDIA row"
	assert_match "$output" "^2 +Intel +Intel GPU 8086:e211 +$INTEL_PCI +1024 MiB +- +24576 MiB +1\$" "Intel row"
	assert_match "$output" "^3 +AMD +AMD Instinct MI300X OAM +$AMD_UUID +4096 MiB +280 MiB +196288 MiB +1\$" "AMD row"
	assert_match "$output" "^ *$amd +root +.*gs-holder.* +3 +4096 MiB +compute " "ROCm worker row"
	assert_match "$output" "^ *$xe +root +.*gs-holder.* +2 +1024 MiB +compute " "Intel worker row"
	assert_eq "$stderr" "" "stderr"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo .gpu_source)" "nvml+drm" "gpu_source"
	assert_eq "$(jqo '[.gpus[] | "\(.index):\(.vendor):\(.driver):\(.memory_source)"] | join(" ")')" \
		"0:nvidia:nvidia:nvml 1:nvidia:nvidia:nvml 2:intel:xe:fdinfo 3:amd:amdgpu:sysfs" "vendors"
	assert_eq "$(jqo '.gpus[3] | "\(.uuid) \(.pci_bus_id) \(.minor) \(.memory_used_mib) \(.memory_reserved_mib)"')" \
		"$AMD_UUID 00000000:C1:00.0 null 4096 280" "AMD GPU"
	assert_eq "$(jqo '.gpus[2] | "\(.uuid) \(.memory_used_mib) \(.memory_total_mib)"')" "$INTEL_PCI 1024 24576" "Intel GPU"
	assert_eq "$(jqo ".processes[] | select(.pid == $amd) | \"\(.kfd_listed) \(.memory_source) \(.drm_fds) \(.nvidia_fds)\"")" \
		"true kfd 2 0" "ROCm worker"
	assert_eq "$(jqo ".processes[] | select(.pid == $xe) | \"\(.kfd_listed) \(.memory_source) \(.gpus | join(\",\"))\"")" \
		"false fdinfo 2" "Intel worker"
	assert_eq "$(jqo ".processes[] | select(.pid == $nv) | \"\(.memory_source) \(.gpus | join(\",\"))\"")" "nvml 0" "NVIDIA worker"

	# nvidia-smi's view stays NVIDIA's: its GPUs and NVML's rows only.
	run --separate-stderr gs status --query-gpu=index,name,memory.used --format=csv,noheader,nounits
	assert_status 0
	assert_eq "$output" "0, NVIDIA H200, 2048
1, NVIDIA H200, 0" "--query-gpu"
	run --separate-stderr gs status --query-compute-apps=pid,used_memory --format=csv,noheader,nounits
	assert_eq "$output" "$nv, 2048" "--query-compute-apps"

	# -g: the AMD GPU by its unique id, the Intel one by its PCI address in NVML's form.
	run --separate-stderr gs status --json -g "$AMD_UUID,00000000:83:00.0"
	assert_status 0
	assert_eq "$(jqo '[.gpus[].index] | join(",")')" "2,3" "selected by id and PCI address"
	assert_alive "$amd" "$xe" "$nv"
}

@test "amd-intel: a forked ROCm worker keeps the dead creator's memory; reclaim stops it and the memory comes back" {
	start_holder nv --gpu 0 --mib 2048
	rocm_worker job --exit-after-fork
	creator=$(rpid job) child=$(rpid job child) nv=$(rpid nv)
	assert_dead "$creator"
	# KFD names the creator (its context lives until the last reference);
	# the child's inherited render fd shows the same DRM client.
	mkdrm kfd-proc "$GS_HOST" "$creator" "$AMD_GPU_ID" 4096
	amd_used 4096
	mkdrm fdinfo "$GS_HOST" "$child" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 21 --vram-mib 4096
	start_driver "$creator"

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $creator) | \"\(.alive) \(.kfd_listed) \(.held_by | join(\",\"))\"")" \
		"false true $child" "dead creator"
	assert_eq "$(jqo ".processes[] | select(.pid == $child) | \"\(.alive) \(.role) \(.memory_mib) \(.gpus | join(\",\"))\"")" \
		"true compute 4096 3" "heir"
	assert_eq "$(jqo '.gpus[3].memory_used_mib')" 4096 "AMD used"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[] | select(.index == 3) | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" \
		"true 4096 0" "GPU 3"
	assert_dead "$child"
	assert_alive "$nv"
	bg_wait driver 10
	assert_eq "$BG_STATUS" 0 "simulated driver"
	[ ! -e "$GS_HOST/sys/class/kfd/kfd/proc/$creator" ]

	run --separate-stderr gs status --json -g 3
	assert_eq "$(jqo '"\(.gpus[0].memory_used_mib) \(.processes | length)"')" "0 0" "after"
}

@test "amd-intel: a monitor with the render node and /dev/kfd open and no memory is a client and is left alone" {
	rocm_worker job
	start_holder mon --as rocm-smi --client --open "$AMD_RENDER" --open kfd
	job=$(rpid job) mon=$(rpid mon)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 2048
	amd_used 2048
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 31 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$mon" "$(fd_of mon "$AMD_RENDER")" amdgpu "$AMD_PCI" 32 --vram-mib 0
	start_driver "$job"

	run --separate-stderr gs status --json
	assert_eq "$(jqo ".processes[] | select(.pid == $mon) | \"\(.role) \(.memory_mib) \(.maps_gpu)\"")" "client null false" "monitor"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict (stderr: $stderr)"
	assert_dead "$job"
	assert_alive "$mon"
	assert_match "$(jqo ".plan.left_alone[] | select(.pid == $mon) | .reason")" "^client holding no GPU memory" "monitor left alone"
}

@test "amd-intel: a DRM client shared by a parent and its child counts once" {
	start_holder xe --open "$INTEL_RENDER" --fork-child
	parent=$(rpid xe) child=$(rpid xe child)
	fd=$(fd_of xe "$INTEL_RENDER")
	# fork: the same drm_file, so the same client id and figures in both.
	mkdrm fdinfo "$GS_HOST" "$parent" "$fd" xe "$INTEL_PCI" 41 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$child" "$fd" xe "$INTEL_PCI" 41 --vram-mib 2048

	run --separate-stderr gs status --json -g "$INTEL_PCI"
	assert_status 0
	assert_eq "$(jqo '.gpus[0].memory_used_mib')" 2048 "Intel used: one client"
	assert_eq "$(jqo '[.processes[].memory_mib // 0] | add')" 2048 "the processes' memory"
	assert_eq "$(jqo '[.processes[] | .role] | join(" ")')" "compute compute" "both hold the GPU"
	assert_alive "$parent" "$child"
}

@test "amd-intel: amdgpu of Linux 5.14-5.18 (its own fdinfo keys, no drm- ones): memory read from them, no warning" {
	rocm_worker job --fork-child
	job=$(rpid job) child=$(rpid job child)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 3072
	amd_used 3072
	# pdev, pasid, "vram mem: N kB": the child shares the parent's open
	# file, so its VM and PASID: one client, counted once.
	fd=$(fd_of job "$AMD_RENDER")
	mkdrm fdinfo "$GS_HOST" "$job" "$fd" amdgpu "$AMD_PCI" 51 --vram-mib 3072 --amdgpu-5.14
	mkdrm fdinfo "$GS_HOST" "$child" "$fd" amdgpu "$AMD_PCI" 51 --vram-mib 3072 --amdgpu-5.14
	start_driver "$job"

	run --separate-stderr gs status --json -g 3
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | \"\(.memory_mib) \(.role)\"")" "3072 compute" "worker"
	assert_eq "$(jqo '"\(.gpus[0].memory_used_mib) \(.gpus[0].memory_source) \(.gpus[0].unowned_mib)"')" "3072 sysfs 0" "GPU"
	assert_eq "$(jqo '.warnings | length')" 0 "no warning: the old keys are read"
	[ -z "$stderr" ] || { echo "stderr: $stderr"; false; }

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 0
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 3072 0" "GPU 3"
	assert_dead "$job" "$child"
}

@test "amd-intel: an amdgpu client with drm- keys but no memory keys: memory from KFD and sysfs, and said so" {
	rocm_worker job
	job=$(rpid job)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 3072
	amd_used 3072
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 52 --no-mem-keys
	start_driver "$job"

	run --separate-stderr gs status --json -g 3
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | \"\(.memory_mib) \(.memory_source) \(.role)\"")" \
		"3072 kfd compute" "worker"
	assert_eq "$(jqo '"\(.gpus[0].memory_used_mib) \(.gpus[0].memory_source)"')" "3072 sysfs" "GPU"
	assert_match "$(jqo '.warnings | join(";")')" "GPU 3 \\(amdgpu\\): DRM fdinfo gives no memory figure.*process memory from KFD, GPU memory from sysfs" "warning"
	assert_match "$stderr" "gpuslate: warning: GPU 3 \\(amdgpu\\): DRM fdinfo gives no memory figure" "said on stderr"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 0
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 3072 0" "GPU 3"
	assert_dead "$job"
}

@test "amd-intel: an AMD/Intel host without NVIDIA needs no NVML; a host without any GPU driver is 'no GPUs' (exit 3)" {
	export GPUSLATE_NVML_LIB=$BATS_TEST_TMPDIR/nonexistent/libnvidia-ml.so.1
	export GPUSLATE_NVIDIA_PROCFS=$BATS_TEST_TMPDIR/no-driver
	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo '"\(.gpu_source) \([.gpus[] | .vendor] | join(","))"')" "drm intel,amd" "GPUs"
	[ -z "$stderr" ] || { echo "stderr: $stderr"; false; }

	rm -rf "$GS_HOST/sys/class/drm" "$GS_HOST/sys/class/kfd"
	run --separate-stderr gs status
	assert_status 3
	assert_match "$stderr" "^gpuslate: no NVIDIA GPU driver: "
}

@test "amd-intel: a holder whose memory nobody reports is never taken for the driver's own buffers (unverified, not clean)" {
	# A render-node client of an amdgpu without memory keys, no KFD context:
	# nothing says how much of the used figure is its.
	start_holder gfx --open "$AMD_RENDER"
	gfx=$(rpid gfx)
	amd_used 1024
	mkdrm fdinfo "$GS_HOST" "$gfx" "$(fd_of gfx "$AMD_RENDER")" amdgpu "$AMD_PCI" 61 --no-mem-keys
	start_driver

	run --separate-stderr gs status --json -g 3
	assert_status 0
	assert_eq "$(jqo '"\(.gpus[0].memory_basis) \(.gpus[0].memory_used_mib) \(.gpus[0].unowned_mib)"')" "v1 1304 null" "GPU 3"
	assert_match "$stderr" "GPU 3 \\(amdgpu\\): DRM fdinfo gives no memory figure.*nowhere: memory not verified" "said so"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 3
	assert_eq "$(jqo .verdict)" unverified "verdict"
	assert_dead "$gfx"
}

@test "amd-intel: a GPU monitor that holds memory of its own (xpu-smi, amd-smi) is a client by its name and left alone" {
	rocm_worker job
	# amd-smi with a mapped render node and 64 MiB of its own.
	start_holder mon --as amd-smi --open "$AMD_RENDER"
	job=$(rpid job) mon=$(rpid mon)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 2048
	amd_used $((2048 + 64))
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 71 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$mon" "$(fd_of mon "$AMD_RENDER")" amdgpu "$AMD_PCI" 72 --vram-mib 64

	run --separate-stderr gs status --json -g 3
	assert_eq "$(jqo ".processes[] | select(.pid == $mon) | \"\(.role) \(.memory_mib)\"")" "client 64" "monitor"
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | .role")" compute "worker"

	# Only the worker is a target; the monitor's 64 MiB stay, and say so.
	run --separate-stderr gs reclaim -n -g 3 --json
	assert_eq "$(jqo '[.plan.targets[].pid] | join(",")')" "$job" "targets"
	assert_match "$(jqo ".plan.left_alone[] | select(.pid == $mon) | .reason")" "^GPU monitor, a client by its name" "monitor left alone"
	assert_alive "$job" "$mon"
}

@test "amd-intel: a process that only takes a monitor's name (nvtop) and holds VRAM is a compute holder, a target" {
	# --forge: comm and argv[0] say nvtop, the executable is gs-holder.
	start_holder fake --forge nvtop --open "$AMD_RENDER"
	fake=$(rpid fake)
	amd_used 512
	mkdrm fdinfo "$GS_HOST" "$fake" "$(fd_of fake "$AMD_RENDER")" amdgpu "$AMD_PCI" 73 --vram-mib 512
	assert_eq "$(cat "/proc/$fake/comm")" nvtop "its comm"

	run --separate-stderr gs status --json -g 3
	assert_eq "$(jqo ".processes[] | select(.pid == $fake) | \"\(.role) \(.memory_mib)\"")" "compute 512" "the name-taker"
	run --separate-stderr gs reclaim -n -g 3 --json
	assert_eq "$(jqo '[.plan.targets[].pid] | join(",")')" "$fake" "targets"
	assert_alive "$fake"
}

@test "amd-intel: reclaim of an Intel holder polls its clients' fdinfo and ends clean once the memory is gone" {
	start_holder nv --gpu 0 --mib 2048
	start_holder xe --as train --open "$INTEL_RENDER"
	xe=$(rpid xe) nv=$(rpid nv)
	mkdrm fdinfo "$GS_HOST" "$xe" "$(fd_of xe "$INTEL_RENDER")" xe "$INTEL_PCI" 81 --vram-mib 1024 --gtt-mib 64

	run --separate-stderr gs reclaim -y -g "$INTEL_PCI" --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.index) \(.clean) \(.memory_before_mib) \(.memory_after_mib) \(.baseline_mib)"')" \
		"2 true 1024 0 16" "GPU 2"
	# Released is measured, not assumed: the figure went from 1024 MiB to 0.
	[ "$(jqo '.gpus[0].released_after_s')" != null ]
	assert_dead "$xe"
	assert_alive "$nv"

	# The same in text: no 'memory not verified' line any more.
	start_holder xe2 --as train --open "$INTEL_RENDER"
	xe2=$(rpid xe2)
	mkdrm fdinfo "$GS_HOST" "$xe2" "$(fd_of xe2 "$INTEL_RENDER")" xe "$INTEL_PCI" 82 --vram-mib 512
	run --separate-stderr gs reclaim -y -g 2
	assert_status 0
	assert_match "$output" "^Verdict: clean" "verdict"
	assert_no_match "$output$stderr" "not verified" "no unverified line"
	assert_dead "$xe2"
}

@test "amd-intel: an Intel client left alone keeps its fdinfo memory: selection-gone (exit 6), naming it, as for NVIDIA" {
	start_holder mine --as train --open "$INTEL_RENDER"
	start_holder theirs --as serve --open "$INTEL_RENDER"
	mine=$(rpid mine) theirs=$(rpid theirs)
	mkdrm fdinfo "$GS_HOST" "$mine" "$(fd_of mine "$INTEL_RENDER")" xe "$INTEL_PCI" 91 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$theirs" "$(fd_of theirs "$INTEL_RENDER")" xe "$INTEL_PCI" 92 --vram-mib 512

	run --separate-stderr gs reclaim -y -g 2 --match train --json
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib) \(.baseline_mib)"')" \
		"true 2560 512 528" "GPU 2"
	assert_eq "$(jqo '[.gpus[0].left_alone_holders[] | "\(.pid):\(.memory_mib)"] | join(",")')" "$theirs:512" "left alone"
	assert_dead "$mine"
	assert_alive "$theirs"
}

@test "amd-intel: an Intel client shared by a parent and its forked child counts once while polled; reclaim of both ends clean" {
	start_holder xe --as train --client --open "$INTEL_RENDER" --fork-child
	parent=$(rpid xe) child=$(rpid xe child)
	fd=$(fd_of xe "$INTEL_RENDER")
	# fork: the same drm_file, so the same client id and figures in both.
	mkdrm fdinfo "$GS_HOST" "$parent" "$fd" xe "$INTEL_PCI" 95 --vram-mib 1024
	mkdrm fdinfo "$GS_HOST" "$child" "$fd" xe "$INTEL_PCI" 95 --vram-mib 1024

	run --separate-stderr gs reclaim -y -g 2 --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict (stderr: $stderr)"
	assert_eq "$(jqo '[.plan.targets[].pid] | sort | join(",")')" "$(printf '%s\n' "$parent" "$child" | sort | paste -sd,)" "targets"
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 1024 0" "GPU 2: one client"
	assert_dead "$parent" "$child"
}

@test "amd-intel: an Intel fd without usage stats leaves the memory unverified (exit 3), and says why" {
	start_holder xe --as train --open "$INTEL_RENDER"
	xe=$(rpid xe)
	# No fixture: the fake node's real fdinfo has no drm- keys, as on a
	# kernel or driver without usage stats.

	run --separate-stderr gs status --json -g 2
	assert_status 0
	assert_eq "$(jqo '"\(.gpus[0].memory_used_mib) \(.gpus[0].memory_source)"')" "null null" "no figure"

	run --separate-stderr gs reclaim -y -g 2
	assert_status 3
	assert_match "$output" "^Verdict: unverified" "verdict"
	assert_match "$output" "^GPU 2: memory not verified: Intel's used memory is its clients' fdinfo, and a client there has no usage stats \\(holders only\\)\$" "reason"
	assert_dead "$xe"
}

@test "amd-intel: a ROCm job on one AMD GPU, which KFD lists with 0 bytes on the other, is no holder of that other GPU" {
	# Two AMD GPUs: GPU 3 (card3, renderD130, gpu_id 51887) and GPU 4
	# (card4, renderD131, gpu_id 51888); the Intel GPU is 2 (renderD132).
	rm -rf "$GS_HOST"
	mkdrm host "$GS_HOST" --nvidia 2 --amd 2
	mkdir -p "$GS_HOST/fdinfo"
	rocm_worker job
	job=$(rpid job)
	# kfd_init_apertures() gives a process a process-device entry, so a
	# vram_<gpu_id> file, for every GPU at open, whatever
	# ROCR_VISIBLE_DEVICES hides: the job's other GPU shows 0 bytes.
	mkdrm kfd-proc "$GS_HOST" "$job" 51887 2048
	mkdrm kfd-proc "$GS_HOST" "$job" 51888 0
	mkdrm vram-used "$GS_HOST" 3 $((280 + 2048))
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 11 --vram-mib 2048

	run --separate-stderr gs status --json
	assert_status 0
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | .gpus | join(\",\")")" 3 "the job's GPUs"

	run --separate-stderr gs reclaim -n -g 4 --json
	assert_eq "$(jqo '[.plan.targets[].pid] | join(",")')" "" "targets on GPU 4 (stderr: $stderr)"
	assert_alive "$job"
}

@test "amd-intel: a desktop's rootless Xorg on the AMD card (run as its user, as Xorg.wrap does on KMS drivers) is left alone" {
	[ "$(id -u)" = 0 ] || skip "needs root (to drop to nobody)"
	command -v setpriv >/dev/null || skip "setpriv (util-linux) is not installed"
	id nobody >/dev/null 2>&1 || skip "no user nobody"
	# nobody must reach the holder, the nodes and its ready file: only
	# bats's own directories are opened (as faults.bats does).
	open_test_dirs
	chmod o+w "$BATS_TEST_TMPDIR"
	chmod -R o+rwX "$GS_HOST/dev"
	install -m 0755 "$GS_HOLDER" "$GS_BIN/Xorg"
	setpriv --reuid=nobody --regid=nogroup --clear-groups test -x "$GS_BIN/Xorg" -a -w "$BATS_TEST_TMPDIR" ||
		skip "user nobody cannot reach the build or the test directory"
	# Xorg (the root-owned binary, run by the desktop's user) drives the
	# AMD card: its card and render nodes open and mapped (glamor).
	launch x setpriv --reuid=nobody --regid=nogroup --clear-groups "$GS_BIN/Xorg" \
		--ready-file "$BATS_TEST_TMPDIR/x.ready" --open dri/card3 --open "$AMD_RENDER"
	rocm_worker job
	x=$(rpid x) job=$(rpid job)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 2048
	amd_used $((2048 + 64))
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 11 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$x" "$(fd_of x "$AMD_RENDER")" amdgpu "$AMD_PCI" 12 --vram-mib 64

	run --separate-stderr gs reclaim -n -g 3 --json
	assert_eq "$(jqo '[.plan.targets[].pid] | join(",")')" "$job" "targets (stderr: $stderr)"
	assert_match "$(jqo ".plan.left_alone[] | select(.pid == $x) | .reason")" . "Xorg left alone"
	assert_alive "$x" "$job"
}

# Issue 25: a device-wide figure (amdgpu's mem_info_vram_used) is known
# whatever a client's fdinfo says; a client without usage stats only has an
# unknown share of its own, as an NVIDIA client has.

@test "amd-intel: a monitor whose fdinfo has no usage stats leaves the AMD figure known: reclaim is clean, with figures, as status says" {
	rocm_worker job
	start_holder mon --as rocm-smi --client --open "$AMD_RENDER"
	job=$(rpid job) mon=$(rpid mon)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 8192
	amd_used 8192
	# An amdgpu before 5.19: the job's fdinfo has amdgpu's old keys; the
	# monitor's has no fixture at all: the fake node's own fdinfo, no keys.
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 101 --vram-mib 8192 --amdgpu-5.14
	start_driver "$job"

	run --separate-stderr gs status --json -g 3
	assert_status 0
	assert_eq "$(jqo '.gpus[0].memory_used_mib')" 8192 "status: AMD used"
	status_used=$(jqo '.gpus[0].memory_used_mib')
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | \"\(.role) \(.memory_mib)\"")" "compute 8192" "job"
	assert_eq "$(jqo ".processes[] | select(.pid == $mon) | \"\(.role) \(.memory_mib)\"")" "client null" "monitor"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 0
	assert_eq "$(jqo .verdict)" clean "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 8192 0" "GPU 3"
	assert_eq "$(jqo '.gpus[0].memory_before_mib')" "$status_used" "status and reclaim read the same figure"
	assert_dead "$job"
	assert_alive "$mon"
	assert_match "$(jqo ".plan.left_alone[] | select(.pid == $mon) | .reason")" "^client" "monitor left alone"
}

@test "amd-intel: an AMD monitor left alone that keeps memory of its own (with stats): selection-gone (exit 6), naming it" {
	rocm_worker job
	start_holder mon --as amd-smi --client --open "$AMD_RENDER"
	job=$(rpid job) mon=$(rpid mon)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 2048
	amd_used $((2048 + 64))
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 111 --vram-mib 2048
	mkdrm fdinfo "$GS_HOST" "$mon" "$(fd_of mon "$AMD_RENDER")" amdgpu "$AMD_PCI" 112 --vram-mib 64
	# The driver's teardown leaves the monitor's 64 MiB beside its own.
	bg driver bash "$GS_FAKES/mkdrm.sh" release "$GS_HOST" "$AMD_RENDER" 3 $((280 + 64)) "$job"

	run --separate-stderr gs reclaim -y -g 3 --json
	assert_status 6
	assert_eq "$(jqo .verdict)" selection-gone "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "true 2112 64" "GPU 3"
	assert_eq "$(jqo '[.gpus[0].left_alone_holders[] | "\(.pid):\(.memory_mib)"] | join(",")')" "$mon:64" "left alone"
	assert_dead "$job"
	assert_alive "$mon"
}

@test "amd-intel: a ROCm target whose memory stays after it is gone is not clean, beside a monitor without stats" {
	rocm_worker job
	start_holder mon --as rocm-smi --client --open "$AMD_RENDER"
	job=$(rpid job) mon=$(rpid mon)
	mkdrm kfd-proc "$GS_HOST" "$job" "$AMD_GPU_ID" 4096
	amd_used 4096
	mkdrm fdinfo "$GS_HOST" "$job" "$(fd_of job "$AMD_RENDER")" amdgpu "$AMD_PCI" 121 --no-mem-keys
	# No simulated teardown: the driver keeps the 4 GiB.

	run --separate-stderr gs reclaim -y -g 3 --timeout 1 --json
	assert_status 1
	assert_eq "$(jqo .verdict)" not-clean "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.clean) \(.memory_before_mib) \(.memory_after_mib)"')" "false 4096 4096" "GPU 3"
	assert_dead "$job"
	assert_alive "$mon"
}

@test "amd-intel: Intel has no device-wide figure: a monitor without usage stats beside a job leaves it unverified (exit 3)" {
	start_holder xe --as train --open "$INTEL_RENDER"
	start_holder mon --as xpu-smi --client --open "$INTEL_RENDER"
	xe=$(rpid xe) mon=$(rpid mon)
	mkdrm fdinfo "$GS_HOST" "$xe" "$(fd_of xe "$INTEL_RENDER")" xe "$INTEL_PCI" 131 --vram-mib 1024

	run --separate-stderr gs reclaim -y -g 2 --json
	assert_status 3
	assert_eq "$(jqo .verdict)" unverified "verdict (stderr: $stderr)"
	assert_eq "$(jqo '.gpus[0] | "\(.memory_before_mib) \(.memory_after_mib)"')" "null null" "no figure"
	assert_dead "$xe"
	assert_alive "$mon"
}

# A target whose fdinfo has no usage stats must not have its
# memory taken for the driver's own buffers (snapshot.c
# unknown_share_is_a_clients -> estimate_drm_reserved).
@test "amd-intel: --include-clients stops an AMD client without stats whose VRAM stays: not clean" {
	start_holder mon --as rocm-smi --client --open "$AMD_RENDER"
	mon=$(rpid mon)
	# The client holds 4 GiB (a buffer it never maps); its fd has no
	# drm- keys. No teardown: the 4 GiB stay after it is gone.
	amd_used 4096
	run --separate-stderr gs reclaim -y -g 3 --include-clients --timeout 1 --json
	assert_dead "$mon"
	# Its 4 GiB are still held: not-clean (exit 1) or unverified (exit 3,
	# as before ebc8822), never clean.
	assert_match "$status $(jqo .verdict)" "^(1 not-clean|3 unverified)\$" "verdict (reserved $(jqo '.gpus[0].memory_reserved_mib') MiB)"
}

# A ROCm process that maps /dev/kfd with the render node open (not
# mapped), not in KFD's list (another PID namespace's numbering, a context
# made after the list was read) and without usage stats: a compute holder
# (snapshot.c add_drm_gpus), so the default target; its share is unknown.
rocm_kfd_only() {
	local name=$1
	launch "$name" python3 -c '
import ctypes, os, sys, time
dev, rf = sys.argv[1], sys.argv[2]
libc = ctypes.CDLL(None, use_errno=True)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
r = os.open(dev + "/dri/renderD130", os.O_RDWR)
k = os.open(dev + "/kfd", os.O_RDWR)
p = libc.mmap(None, 4096, 1, 1, k, 0)
assert p not in (None, ctypes.c_void_p(-1).value), ctypes.get_errno()
open(rf + ".tmp", "w").write("pid=%d\n" % os.getpid())
os.rename(rf + ".tmp", rf)
while True:
    time.sleep(60)
' "$GPUSLATE_DEV_ROOT" "$BATS_TEST_TMPDIR/$name.ready"
}

@test "amd-intel: a ROCm target that maps only /dev/kfd, unlisted by KFD, without stats, whose VRAM stays: not clean" {
	rocm_kfd_only job
	job=$(rpid job)
	amd_used 4096
	run --separate-stderr gs status --json -g 3
	assert_eq "$(jqo ".processes[] | select(.pid == $job) | \"\(.role) \(.memory_mib)\"")" "compute null" "a target, share unknown"
	run --separate-stderr gs reclaim -y -g 3 --timeout 1 --json
	assert_dead "$job"
	# Its 4 GiB are still held: not-clean (exit 1) or unverified (exit 3,
	# as before ebc8822), never clean.
	assert_match "$status $(jqo .verdict)" "^(1 not-clean|3 unverified)\$" "verdict (reserved $(jqo '.gpus[0].memory_reserved_mib') MiB)"
}

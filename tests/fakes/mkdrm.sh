#!/bin/sh
# mkdrm.sh: a simulated AMD/Intel GPU host for tests (docs/amd-intel.md
# section 5). Prints nothing on success.
#
#   mkdrm.sh host DIR [--nvidia N] [--amd N] [--intel N] [--intel-driver xe|i915]
#                     [--no-kfd] [--amd-used-mib N]
#       DIR/sys   a /sys look-alike (--sys-root): class/drm/card<N> for a BMC
#                 display (ast), N NVIDIA cards (nvidia-drm), the AMD and
#                 Intel cards; class/kfd/kfd/{topology,proc} for the AMD ones
#       DIR/dev   plain files for dri/card<N>, dri/renderD<M>, kfd, and (with
#                 --nvidia) the NVIDIA nodes and fake NVML state of mkhost.sh
#   mkdrm.sh fdinfo DIR PID FD DRIVER PDEV CLIENT_ID [--vram-mib N] [--gtt-mib N]
#                     [--legacy | --no-mem-keys | --amdgpu-5.14]
#       DIR/fdinfo/PID/FD: what the kernel's /proc/PID/fdinfo/FD would say of
#       that DRM fd (GPUSLATE_FDINFO_SHADOW=DIR/fdinfo). pos, flags, mnt_id
#       and ino are copied from the real fdinfo, so the fixture only holds for
#       that very open file. DRIVER amdgpu, xe or i915. --legacy: amdgpu's
#       drm-memory-* keys only (kernels before the standard keys); --no-mem-keys:
#       client keys, no memory; --amdgpu-5.14: the non-standard amdgpu text of
#       Linux 5.14-5.18 (no drm- keys at all; its PASID 32768 + CLIENT_ID).
#   mkdrm.sh kfd-proc DIR PID GPU_ID MIB
#       DIR/sys/class/kfd/kfd/proc/PID/vram_GPU_ID: a KFD process's VRAM
#   mkdrm.sh vram-used DIR CARD MIB
#       the amdgpu card<CARD>'s mem_info_vram_used
#   mkdrm.sh release DIR NODE CARD MIB [KFD_PID]...
#       the simulated driver's teardown: waits until the last process that
#       holds NODE (e.g. dri/renderD129, opened by gs-holder --open, which
#       keeps a shared flock on DIR/dev/NODE.lock that forked children
#       inherit) is gone, then sets card<CARD>'s mem_info_vram_used to MIB
#       and removes the KFD process entries of the KFD_PIDs, as amdgpu frees
#       a context's memory when its last file reference goes.
#
# Identities are deterministic so tests can hard-code them: the BMC is card0
# at 0000:03:00.0; NVIDIA GPU i is card<1+i> at mkhost.sh's bus; AMD GPU i
# (an MI300X) follows at 0000:c<1+i>:00.0 with KFD gpu_id 51887+i and
# unique_id 1f9de0957d13794<i>; Intel GPU i at 0000:<83+i>:00.0. Render nodes
# are renderD<128+k> in card order, the BMC having none.
set -eu

here=$(cd "$(dirname "$0")" && pwd)

usage() {
	sed -n '2,/^set -eu/p' "$0" | sed 's/^# \{0,1\}//; /^set -eu/d' >&2
	exit 2
}

is_uint() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	*) return 0 ;;
	esac
}

need_uint() {
	is_uint "$2" || { echo "mkdrm.sh: $1 must be a number, not '$2'" >&2; exit 2; }
}

# put FILE TEXT: write TEXT and a newline, creating directories.
put() {
	mkdir -p "$(dirname "$1")"
	printf '%s\n' "$2" >"$1"
}

# card K DRIVER PCI VENDOR DEVICE CLASS RENDER: card<K> bound to DRIVER at
# PCI, with render node renderD<RENDER> (RENDER empty: none). Sets $dev to
# its device directory.
card() {
	c_dir="$sys/class/drm/card$1"
	dev="$c_dir/device"
	c_id=$(printf '%s:%s' "$4" "$5" | tr 'a-f' 'A-F')
	put "$c_dir/dev" "226:$1"
	put "$dev/uevent" "DRIVER=$2
PCI_CLASS=$6
PCI_ID=$c_id
PCI_SUBSYS_ID=$c_id
PCI_SLOT_NAME=$3
MODALIAS=pci:v0000${4}d0000${5}sv0000${4}sd0000${5}"
	put "$dev/vendor" "0x$4"
	put "$dev/device" "0x$5"
	put "$dev/drm/card$1/dev" "226:$1"
	: >"$root_dev/dri/card$1"
	if [ -n "$7" ]; then
		put "$dev/drm/renderD$7/dev" "226:$7"
		ln -s "card$1/device/drm/renderD$7" "$sys/class/drm/renderD$7"
		: >"$root_dev/dri/renderD$7"
	fi
}

cmd_host() {
	[ $# -ge 1 ] || usage
	dir=$1
	shift
	nvidia=0 amd=1 intel=1 intel_driver=xe kfd=1 used_mib=280
	while [ $# -gt 0 ]; do
		case $1 in
		--no-kfd) kfd=0; shift; continue ;;
		esac
		[ $# -ge 2 ] || usage
		case $1 in
		--nvidia) nvidia=$2 ;;
		--amd) amd=$2 ;;
		--intel) intel=$2 ;;
		--intel-driver) intel_driver=$2 ;;
		--amd-used-mib) used_mib=$2 ;;
		*) usage ;;
		esac
		shift 2
	done
	need_uint --nvidia "$nvidia"
	need_uint --amd "$amd"
	need_uint --intel "$intel"
	need_uint --amd-used-mib "$used_mib"
	case $intel_driver in xe | i915) ;; *) usage ;; esac
	if [ "$amd" -gt 8 ] || [ "$intel" -gt 8 ] || [ "$nvidia" -gt 8 ]; then
		echo "mkdrm.sh: at most 8 GPUs of each vendor" >&2
		exit 2
	fi

	sys="$dir/sys"
	root_dev="$dir/dev"
	mkdir -p "$sys/class/drm" "$root_dev/dri"
	if [ "$nvidia" -gt 0 ]; then
		"$here/mkhost.sh" "$dir" "$nvidia"
	fi

	# A server's BMC display (ASPEED): a DRM card, never a GPU of ours.
	card 0 ast 0000:03:00.0 1a03 2000 30000 ""
	k=1
	render=128
	set -- 18 2a 3a 5d 9a ab ba db # mkhost.sh's buses
	i=0
	while [ "$i" -lt "$nvidia" ]; do
		eval "bus=\${$((i + 1))}"
		card "$k" nvidia "0000:$bus:00.0" 10de 2335 30200 "$render"
		k=$((k + 1)) render=$((render + 1)) i=$((i + 1))
	done

	if [ "$amd" -gt 0 ] && [ "$kfd" -eq 1 ]; then
		: >"$root_dev/kfd"
		topo="$sys/class/kfd/kfd/topology"
		mkdir -p "$sys/class/kfd/kfd/proc"
		put "$topo/generation_id" 1
		put "$topo/nodes/0/gpu_id" 0
		put "$topo/nodes/0/properties" "cpu_cores_count 96
simd_count 0
vendor_id 0
device_id 0
location_id 0
domain 0
drm_render_minor 0"
	fi
	i=0
	while [ "$i" -lt "$amd" ]; do
		bus=c$((1 + i))
		card "$k" amdgpu "0000:$bus:00.0" 1002 74a1 120000 "$render"
		put "$dev/unique_id" "1f9de0957d13794$i"
		put "$dev/product_name" "AMD Instinct MI300X OAM"
		put "$dev/mem_info_vram_total" 205822885888
		put "$dev/mem_info_vram_used" $((used_mib * 1048576))
		put "$dev/mem_info_vis_vram_total" 205822885888
		if [ "$kfd" -eq 1 ]; then
			node="$topo/nodes/$((1 + i))"
			put "$node/gpu_id" $((51887 + i))
			put "$node/properties" "cpu_cores_count 0
simd_count 1216
gfx_target_version 90402
vendor_id 4098
device_id 29857
location_id $((0xc100 + i * 256))
domain 0
drm_render_minor $render
num_xcc 8
unique_id $(printf '%d' "0x1f9de0957d13794$i")"
		fi
		k=$((k + 1)) render=$((render + 1)) i=$((i + 1))
	done

	i=0
	while [ "$i" -lt "$intel" ]; do
		if [ "$intel_driver" = xe ]; then
			card "$k" xe "0000:$(printf %02x $((0x83 + i))):00.0" 8086 e211 30000 "$render"
			put "$dev/tile0/physical_vram_size_bytes" 25769803776
		else
			card "$k" i915 "0000:$(printf %02x $((0x83 + i))):00.0" 8086 56c0 38000 "$render"
		fi
		k=$((k + 1)) render=$((render + 1)) i=$((i + 1))
	done
}

# A size as drm_print_memory_stats prints it: the largest unit that loses
# nothing (so MiB for our whole-MiB figures), bare bytes for 0.
size() {
	if [ "$1" -eq 0 ]; then echo 0; else echo "$1 MiB"; fi
}

cmd_fdinfo() {
	[ $# -ge 6 ] || usage
	dir=$1 pid=$2 fd=$3 driver=$4 pdev=$5 id=$6
	shift 6
	vram=0 gtt=0 style=standard
	while [ $# -gt 0 ]; do
		case $1 in
		--legacy) style=legacy; shift; continue ;;
		--no-mem-keys) style=nomem; shift; continue ;;
		--amdgpu-5.14) style=amdgpu514; shift; continue ;;
		esac
		[ $# -ge 2 ] || usage
		case $1 in
		--vram-mib) vram=$2 ;;
		--gtt-mib) gtt=$2 ;;
		*) usage ;;
		esac
		shift 2
	done
	need_uint PID "$pid"
	need_uint FD "$fd"
	need_uint CLIENT_ID "$id"
	need_uint --vram-mib "$vram"
	need_uint --gtt-mib "$gtt"
	case $driver in amdgpu | xe | i915) ;; *) usage ;; esac
	real=/proc/$pid/fdinfo/$fd
	[ -r "$real" ] || { echo "mkdrm.sh: no $real" >&2; exit 1; }
	out="$dir/fdinfo/$pid/$fd"
	mkdir -p "$dir/fdinfo/$pid"
	{
		grep -E '^(pos|flags|mnt_id|ino):' "$real"
		if [ "$style" = amdgpu514 ]; then
			printf 'pdev:\t%s\npasid:\t%s\n' "$pdev" $((32768 + id % 32768))
			printf 'vram mem:\t%s kB\ngtt mem:\t%s kB\ncpu mem:\t0 kB\n' $((vram * 1024)) $((gtt * 1024))
			printf 'gfx0:\t0.00%%\n'
		else
			printf 'drm-driver:\t%s\ndrm-client-id:\t%s\ndrm-pdev:\t%s\n' "$driver" "$id" "$pdev"
			if [ "$driver" = amdgpu ]; then
				printf 'pasid:\t%s\n' $((32768 + id % 32768))
			fi
			case $driver:$style in
			*:nomem) ;;
			amdgpu:legacy)
				printf 'drm-memory-vram:\t%s KiB\n' $((vram * 1024))
				printf 'drm-memory-gtt: \t%s KiB\n' $((gtt * 1024))
				printf 'drm-memory-cpu: \t0 KiB\n' ;;
			amdgpu:*)
				for r in vram:$vram gtt:$gtt cpu:0; do
					n=${r%%:*} v=${r#*:}
					printf 'drm-total-%s:\t%s\ndrm-shared-%s:\t0\n' "$n" "$(size "$v")" "$n"
					printf 'drm-resident-%s:\t%s\ndrm-purgeable-%s:\t0\n' "$n" "$(size "$v")" "$n"
				done
				printf 'drm-memory-vram:\t%s KiB\n' $((vram * 1024))
				printf 'drm-memory-gtt: \t%s KiB\n' $((gtt * 1024))
				printf 'drm-memory-cpu: \t0 KiB\n'
				printf 'amd-evicted-vram:\t0 KiB\namd-requested-vram:\t%s KiB\n' $((vram * 1024))
				printf 'amd-requested-gtt:\t%s KiB\n' $((gtt * 1024)) ;;
			xe:*)
				for r in system:0 gtt:$gtt vram0:$vram stolen:0; do
					n=${r%%:*} v=${r#*:}
					printf 'drm-total-%s:\t%s\ndrm-shared-%s:\t0\ndrm-active-%s:\t0\n' "$n" "$(size "$v")" "$n" "$n"
					printf 'drm-resident-%s:\t%s\ndrm-purgeable-%s:\t0\n' "$n" "$(size "$v")" "$n"
				done
				printf 'drm-cycles-ccs:\t0\ndrm-total-cycles-ccs:\t7655183225\ndrm-engine-capacity-ccs:\t4\n' ;;
			i915:*)
				for r in system0:$gtt local0:$vram stolen-local0:0; do
					n=${r%%:*} v=${r#*:}
					printf 'drm-total-%s:\t%s\ndrm-shared-%s:\t0\ndrm-active-%s:\t0\n' "$n" "$(size "$v")" "$n" "$n"
					printf 'drm-resident-%s:\t%s\ndrm-purgeable-%s:\t0\n' "$n" "$(size "$v")" "$n"
				done
				printf 'drm-engine-compute:\t0 ns\n' ;;
			esac
		fi
	} >"$out.tmp"
	mv "$out.tmp" "$out"
}

cmd_kfd_proc() {
	[ $# -eq 4 ] || usage
	dir=$1 pid=$2 gpu_id=$3 mib=$4
	need_uint PID "$pid"
	need_uint GPU_ID "$gpu_id"
	need_uint MIB "$mib"
	p="$dir/sys/class/kfd/kfd/proc/$pid"
	[ -d "$dir/sys/class/kfd/kfd/proc" ] || { echo "mkdrm.sh: no KFD under $dir/sys" >&2; exit 1; }
	put "$p/pasid" $((32768 + pid % 32768))
	put "$p/vram_$gpu_id.tmp" $((mib * 1048576))
	mv "$p/vram_$gpu_id.tmp" "$p/vram_$gpu_id"
	put "$p/sdma_$gpu_id" 0
}

cmd_vram_used() {
	[ $# -eq 3 ] || usage
	dir=$1 k=$2 mib=$3
	need_uint CARD "$k"
	need_uint MIB "$mib"
	f="$dir/sys/class/drm/card$k/device/mem_info_vram_used"
	[ -f "$f" ] || { echo "mkdrm.sh: card$k is not an amdgpu card" >&2; exit 1; }
	put "$f.tmp" $((mib * 1048576))
	mv "$f.tmp" "$f"
}

cmd_release() {
	[ $# -ge 4 ] || usage
	dir=$1 node=$2 k=$3 mib=$4
	shift 4
	need_uint CARD "$k"
	need_uint MIB "$mib"
	flock -x "$dir/dev/$node.lock" true
	cmd_vram_used "$dir" "$k" "$mib"
	for pid in "$@"; do
		need_uint KFD_PID "$pid"
		rm -rf "$dir/sys/class/kfd/kfd/proc/$pid"
	done
}

[ $# -ge 1 ] || usage
sub=$1
shift
case $sub in
host) cmd_host "$@" ;;
fdinfo) cmd_fdinfo "$@" ;;
kfd-proc) cmd_kfd_proc "$@" ;;
vram-used) cmd_vram_used "$@" ;;
release) cmd_release "$@" ;;
*) usage ;;
esac

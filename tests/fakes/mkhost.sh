#!/bin/sh
# mkhost.sh DIR NGPUS [--name NAME] [--total-mib N] [--reserved-mib N]
#
# Creates a simulated GPU host (docs/testing.md):
#   DIR/dev      plain files standing for the device nodes (--dev-root)
#   DIR/nvml     the fake NVML state (FAKE_NVML_STATE): gpus, ctx/
#   DIR/driver   a /proc/driver/nvidia look-alike (GPUSLATE_NVIDIA_PROCFS)
# Identities are deterministic so tests can hard-code them. Prints nothing
# on success.
set -eu

DRIVER_VERSION=580.159.04

usage() {
	echo "usage: mkhost.sh DIR NGPUS [--name NAME] [--total-mib N] [--reserved-mib N]" >&2
	exit 2
}

is_uint() {
	case $1 in
	'' | *[!0-9]*) return 1 ;;
	*) return 0 ;;
	esac
}

[ $# -ge 2 ] || usage
dir=$1
ngpus=$2
shift 2
name="NVIDIA H200"
total=143771
reserved=615
while [ $# -gt 0 ]; do
	[ $# -ge 2 ] || usage
	case $1 in
	--name) name=$2 ;;
	--total-mib) total=$2 ;;
	--reserved-mib) reserved=$2 ;;
	*) usage ;;
	esac
	shift 2
done
if ! is_uint "$ngpus" || ! is_uint "$total" || ! is_uint "$reserved"; then
	usage
fi
[ -n "$name" ] || usage
# Bus numbers come from a fixed table (an 8-GPU HGX board, then 0xe0 up), so
# at most 40 GPUs; the real driver allows 0-247 minors, tests need few.
if [ "$ngpus" -lt 1 ] || [ "$ngpus" -gt 40 ]; then
	echo "mkhost.sh: NGPUS must be 1..40" >&2
	exit 2
fi
[ "$reserved" -le "$total" ] || { echo "mkhost.sh: reserved exceeds total" >&2; exit 2; }

mkdir -p "$dir/dev" "$dir/nvml/ctx" "$dir/driver/gpus"
: >"$dir/dev/nvidiactl"
: >"$dir/dev/nvidia-uvm"
: >"$dir/dev/nvidia-uvm-tools"

# The PCI buses of the GPUs on an HGX H100/H200 8-GPU board.
set -- 18 2a 3a 5d 9a ab ba db
gpus="$dir/nvml/gpus"
{
	echo "# minor uuid total_mib reserved_mib pci_bus_id name"
} >"$gpus.tmp"
i=0
while [ "$i" -lt "$ngpus" ]; do
	if [ "$i" -lt 8 ]; then
		eval "bus=\${$((i + 1))}"
	else
		bus=$(printf '%02x' $((0xe0 + i - 8)))
	fi
	uuid=$(printf 'GPU-a2983c1e-0000-4000-8000-%012x' "$i")
	bus_up=$(printf '%s' "$bus" | tr 'a-f' 'A-F')
	: >"$dir/dev/nvidia$i"
	echo "$i $uuid $total $reserved 00000000:$bus_up:00.0 $name" >>"$gpus.tmp"

	# Same layout as the driver's nv-procfs.c: "Key:" padding, a tab, a space.
	gdir="$dir/driver/gpus/0000:$bus:00.0"
	mkdir -p "$gdir"
	{
		printf 'Model: \t\t %s\n' "$name"
		printf 'IRQ:   \t\t %d\n' $((60 + i))
		printf 'GPU UUID: \t %s\n' "$uuid"
		printf 'Video BIOS: \t %s\n' "96.00.a5.00.01"
		printf 'Bus Type: \t %s\n' "PCIe"
		printf 'DMA Size: \t %s\n' "52 bits"
		printf 'DMA Mask: \t %s\n' "0xfffffffffffff"
		printf 'Bus Location: \t 0000:%s:00.0\n' "$bus"
		printf 'Device Minor: \t %d\n' "$i"
		printf 'GPU Firmware: \t %s\n' "$DRIVER_VERSION"
		printf 'GPU Excluded:\t %s\n' "No"
	} >"$gdir/information"
	i=$((i + 1))
done
mv "$gpus.tmp" "$gpus"

cat >"$dir/driver/version" <<EOF
NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  $DRIVER_VERSION  Release Build  (dvs-builder@U22-I3-AE18-23-3)  Thu Nov 20 01:08:24 UTC 2025
GCC version:  gcc version 12.2.0 (Debian 12.2.0-14+deb12u1)
EOF

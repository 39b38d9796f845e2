#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot Debian's own kernel under QEMU (TCG), load usb4verbs.ko with
# soft_cable=1 and run plans (tests/vm/plans/<name>.sh, in the order given)
# in the guest. A plan may have a host-side <name>.stage, sourced here to put
# what it needs into the image (copy_bin, copy_libs, copy_tree, add_mod), to
# build a module (build_kmod) or to add QEMU devices (qemu_args).
# Pass/fail comes from markers on the serial console.
#
#   run-vm.sh --src DIR --build DIR --out DIR --plans "a b ..." [--timeout SECS]
#
# Exit: 0 pass, 1 fail, 77 skip (no qemu / kernel image / headers / busybox).
# Environment: U4V_VM_KVER picks the kernel (default: the newest one that
# has both /boot/vmlinuz-<ver> and /lib/modules/<ver>/build); U4V_VM_LOCK
# names a lock file held while QEMU runs (one VM at a time on a shared host);
# U4V_VM_KROOT boots the kernel of another Debian root instead (its
# /boot/vmlinuz-<ver> and modules; modules are built in that root, with its
# compiler: tools/roots/kroot.sh makes one). Userspace is the host's.
set -u
set -o pipefail

SRC= BUILD= OUT= PLANS= TMO=270
while [ $# -gt 0 ]; do
	case "$1" in
	--src) SRC=$2; shift 2 ;;
	--build) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--plans) PLANS=$2; shift 2 ;;
	--timeout) TMO=$2; shift 2 ;;
	*) echo "unknown argument $1" >&2; exit 2 ;;
	esac
done
[ -n "$SRC" ] && [ -n "$BUILD" ] && [ -n "$OUT" ] && [ -n "$PLANS" ] ||
	{ echo "usage: $0 --src DIR --build DIR --out DIR --plans \"a b\"" >&2; exit 2; }
for p in $PLANS; do
	[ -e "$SRC/tests/vm/plans/$p.sh" ] || { echo "no plan $p" >&2; exit 2; }
done

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }
T0=$(date +%s)
say() { echo "[vm +$(( $(date +%s) - T0 ))s] $*"; }

QEMU=$(command -v qemu-system-x86_64) || skip "qemu-system-x86_64 not installed (apt: qemu-system-x86)"
BUSYBOX=
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then BUSYBOX=$b; break; fi
done
[ -n "$BUSYBOX" ] || skip "no static busybox (apt: busybox-static)"

KROOT=${U4V_VM_KROOT:-}
if [ -n "$KROOT" ]; then
	[ "$(id -u)" -eq 0 ] || skip "U4V_VM_KROOT needs root (modules are built in that root)"
	[ -d "$KROOT" ] || skip "U4V_VM_KROOT=$KROOT is not a directory"
fi
KVER=${U4V_VM_KVER:-}
if [ -z "$KVER" ]; then
	for d in $(ls -d "$KROOT"/lib/modules/*/ 2>/dev/null | sort -V -r); do
		v=$(basename "$d")
		if [ -e "$KROOT/boot/vmlinuz-$v" ] && [ -e "$KROOT/lib/modules/$v/build/Makefile" ]; then
			KVER=$v; break
		fi
	done
fi
[ -n "$KVER" ] || skip "no kernel with both $KROOT/boot/vmlinuz-<ver> and headers (apt: linux-image-amd64 linux-headers-amd64)"
KIMG=$KROOT/boot/vmlinuz-$KVER
[ -r "$KIMG" ] || skip "$KIMG not readable"
KDIR=/lib/modules/$KVER/build
say "kernel $KVER, qemu $QEMU, busybox $BUSYBOX, plans $PLANS"

rm -rf "$OUT"
mkdir -p "$OUT/kmod" "$OUT/root"
ROOT=$OUT/root

# 1. The module, built out of tree in a copy (keeps the source tree clean).
# W=1 and, where installed, sparse (C=1): both must stay silent.
CHECK=
KMAKE=(make)
if [ -z "$KROOT" ]; then
	command -v sparse >/dev/null && CHECK=C=1
else # in the kernel's own root, with its compiler; $OUT at the same path
	[ -x "$KROOT/usr/bin/sparse" ] && CHECK=C=1
	KMAKE=("$SRC/tools/roots/in-root.sh" --bind "$OUT" "$KROOT" make)
fi
build_kmod() { # dir src-dir [make args]: one module source tree, built in dir
	local dir=$1 src=$2
	shift 2
	mkdir -p "$dir"
	cp "$src"/*.c "$src"/*.h "$src"/Kbuild "$dir/"
	[ -d "$src/include" ] && cp -r "$src/include" "$dir/"
	if ! "${KMAKE[@]}" -C "$KDIR" M="$dir" W=1 $CHECK "$@" modules >"$dir.log" 2>&1; then
		cat "$dir.log"; fail "module build ($src)"
	fi
	if grep -E 'warning:|error:' "$dir.log"; then fail "module build ($src) has warnings"; fi
}
build_kmod "$OUT/kmod" "$SRC/kernel"
KO=$OUT/kmod/usb4verbs.ko
say "module built"
# QEMU devices a plan's stage file asks for (qemu_args ...)
QEMU_EXTRA=()
qemu_args() { QEMU_EXTRA+=("$@"); }

# 2. Userspace: busybox, tools, their libraries, providers.
mkdir -p "$ROOT"/{bin,sbin,etc,proc,sys,dev,tmp,run,lib,lib64,usr/bin,usr/lib,etc/libibverbs.d}
cp "$BUSYBOX" "$ROOT/bin/busybox"
LIBDIR=/usr/lib/x86_64-linux-gnu
PROVDIR=$LIBDIR/libibverbs
copy_bin() { # path -> /usr/bin in the image, plus its libraries
	local f=$1 dst=${2:-/usr/bin}
	[ -e "$f" ] || return 1
	mkdir -p "$ROOT$dst"
	cp -L "$f" "$ROOT$dst/"
	copy_libs "$f"
}
copy_libs() {
	local lib
	for lib in $(ldd "$1" 2>/dev/null | grep -oE '/[^ ]+\.so[^ ]*'); do
		[ -e "$ROOT$lib" ] && continue
		mkdir -p "$ROOT$(dirname "$lib")"
		cp -L "$lib" "$ROOT$lib"
	done
}
copy_tree() { # a directory (or file), as is, at the same path in the image
	mkdir -p "$ROOT$(dirname "$1")"
	cp -a "$1" "$ROOT$(dirname "$1")/"
}
TOOLS="ibv_devinfo ibv_devices ibv_rc_pingpong ibv_ud_pingpong ibv_srq_pingpong
ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw rdma ip"
for t in $TOOLS; do
	p=$(command -v "$t") || { echo "note: $t not installed"; continue; }
	copy_bin "$p"
done
[ -x "$BUILD/tests/vm/u4v_ktest" ] && copy_bin "$BUILD/tests/vm/u4v_ktest"
mkdir -p "$ROOT$PROVDIR"
if [ -e "$PROVDIR/librxe-rdmav34.so" ]; then
	cp -L "$PROVDIR"/librxe-rdmav*.so "$ROOT$PROVDIR/"
	copy_libs "$PROVDIR/librxe-rdmav34.so"
	echo "driver rxe" >"$ROOT/etc/libibverbs.d/rxe.driver"
fi
PROV=$(ls "$BUILD"/providers/usb4verbs/libusb4verbs-rdmav*.so 2>/dev/null | head -1)
if [ -n "$PROV" ]; then
	cp -L "$PROV" "$ROOT$PROVDIR/"
	copy_libs "$PROV"
	echo "driver usb4verbs" >"$ROOT/etc/libibverbs.d/usb4verbs.driver"
else
	echo "note: provider not built: ibv tools will not see usb4v devices"
fi
echo "root:x:0:0:root:/root:/bin/sh" >"$ROOT/etc/passwd"
echo "root:x:0:" >"$ROOT/etc/group"
printf '127.0.0.1 localhost\n' >"$ROOT/etc/hosts"

# 3. Kernel modules in dependency order.
MODS=$OUT/modlist
: >"$MODS"
add_mod() {
	local line f
	modprobe -d "${KROOT:-/}" -S "$KVER" --show-depends "$1" 2>/dev/null | while read -r line; do
		f=$(echo "$line" | awk '/^insmod/ {print $2}')
		[ -n "$f" ] || continue
		f=$KROOT${f#"$KROOT"}
		grep -qxF "$f" "$MODS" || echo "$f" >>"$MODS"
	done
}
for m in crc32_generic ib_uverbs rdma_rxe veth; do add_mod $m; done
for m in $(modinfo -F depends "$KO" | tr ',' ' '); do add_mod "$m"; done
# What the plans need besides the basics.
for p in $PLANS; do
	if [ -e "$SRC/tests/vm/plans/$p.stage" ]; then
		. "$SRC/tests/vm/plans/$p.stage" || fail "staging for plan $p"
	fi
done
mkdir -p "$ROOT/lib/modules"
: >"$ROOT/lib/modules/order"
while read -r f; do # busybox insmod takes modules uncompressed
	b=$(basename "$f")
	case $b in
	*.ko.xz) xz -dc "$f" >"$ROOT/lib/modules/${b%.xz}" ;;
	*.ko.zst) zstd -qdc "$f" >"$ROOT/lib/modules/${b%.zst}" ;;
	*) cp "$f" "$ROOT/lib/modules/" ;;
	esac || fail "staging $f"
	echo "${b%.ko*}.ko" >>"$ROOT/lib/modules/order"
done <"$MODS"
cp "$KO" "$ROOT/lib/modules/usb4verbs.ko"
say "image staged ($(wc -l <"$MODS") kernel modules)"

# 4. /init, its helpers and the plans: one marker per step, all bounded.
cp "$SRC/tests/vm/guest-init.sh" "$ROOT/init"
chmod +x "$ROOT/init"
mkdir -p "$ROOT/etc/u4v/plans"
cp "$SRC/tests/vm/guest-lib.sh" "$ROOT/etc/u4v/"
for p in $PLANS; do cp "$SRC/tests/vm/plans/$p.sh" "$ROOT/etc/u4v/plans/"; done
echo "$PLANS" >"$ROOT/etc/u4v/plan-list"
# guest-side budget: start no new tool pair after this many seconds of uptime
echo $(( TMO > 80 ? TMO - 70 : 10 )) >"$ROOT/etc/u4v-budget"

(cd "$ROOT" && find . | cpio -o -H newc --quiet | gzip -1) >"$OUT/initrd.gz" || fail "cpio"
say "initramfs $(du -h "$OUT/initrd.gz" | cut -f1)"

# 5. Boot. Never leave qemu behind: timeout kills it, -no-reboot ends it.
LOG=$OUT/serial.log
if [ -n "${U4V_VM_LOCK:-}" ]; then
	exec 9>"$U4V_VM_LOCK"
	say "waiting for $U4V_VM_LOCK"
	flock -w 1800 9 || fail "$U4V_VM_LOCK held for 30 minutes"
fi
# A kernel that dies before /init runs (no U4V-BEGIN: e.g. 6.12's boot-time
# text patching hit an int3 under TCG, "Modules linked in:" empty) is the
# emulator's failure, not ours: it boots once more, and says so.
# Debian 13's 6.12 patches its text with int3 while the other vCPU runs,
# and under multi-threaded TCG it died of "Oops: int3" at times (boot or
# later, no module of ours loaded): its vCPUs share one host thread.
ACCEL=tcg
[ -n "$KROOT" ] && ACCEL=tcg,thread=single
for boot in 1 2; do
	say "booting ($ACCEL)"
	timeout -k 5 "$TMO" "$QEMU" -accel $ACCEL -smp 2 -m 2048 -nographic -no-reboot \
		-kernel "$KIMG" -initrd "$OUT/initrd.gz" \
		-append "console=ttyS0 panic=-1 oops=panic quiet loglevel=4 no_timer_check rdinit=/init" \
		-nic none -monitor none -serial "file:$LOG" "${QEMU_EXTRA[@]}" \
		</dev/null >"$OUT/qemu.out" 2>&1
	RC=$?
	grep -q 'U4V-BEGIN' "$LOG" || [ $boot = 2 ] && break
	mv "$LOG" "$OUT/serial-died-before-init.log"
	say "the kernel died before /init (log: $OUT/serial-died-before-init.log): once more"
	tail -30 "$OUT/serial-died-before-init.log"
done
[ -n "${U4V_VM_LOCK:-}" ] && exec 9>&-
say "qemu exited rc=$RC"
[ $RC -eq 124 ] && echo "VM timed out after ${TMO}s"

# 6. Verdict from the serial log.
grep -E '^(U4V-|KTEST|PERF)' "$LOG" | sed 's/\r$//' >"$OUT/markers.txt"
cat "$OUT/markers.txt"
"$SRC/tests/vm/report.sh" "$LOG" | tee "$OUT/report.txt"
grep -q '^U4V-DONE' "$LOG" || { tail -40 "$LOG"; fail "VM did not finish"; }
if grep -q '^U4V-STEP .* FAIL' "$LOG"; then fail "steps failed (log: $LOG)"; fi
for p in $PLANS; do
	grep -q "^U4V-PLAN $p\b" "$OUT/markers.txt" || fail "plan $p did not run"
done
if case " $PLANS " in *" tools "*) true ;; *) false ;; esac &&
	grep -q '^U4V-STEP ibv_devinfo PASS' "$LOG" &&
	[ "$(grep -cE '^PERF-RATIO .* ratio [0-9]+\.[0-9]+$' "$OUT/report.txt")" -ne 4 ]; then
	fail "usb4verbs/rxe ratio lines missing"
fi
say "all steps passed"
exit 0

#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The Debian packages on one Debian release, as a user of that release gets
# them (needs root; see tools/roots/lib.sh for the roots and their cache):
#   1. in a root with only what "apt-get build-dep ./" installs (README),
#      unpack the source package that `dpkg-source -b` makes of the tracked
#      tree and build the binary packages from it as an ordinary user, with
#      README's "dpkg-buildpackage -us -uc -b";
#   2. install them with apt into a separate pristine root, with what they
#      depend on, what usb4verbs-tools recommends (ibverbs-utils, perftest)
#      and linux-headers-amd64: DKMS builds the module for that kernel, and
#      its log must hold no warning in our files;
#   3. there, as an ordinary user: usb4v-sim up, ibv_devinfo, an
#      ib_write_bw pair and an ibv_rc_pingpong -c pair (payload checked);
#   4. leave an idle cable, a stale one, and another user's cable that a
#      running program uses; purge the packages: nothing of theirs may be
#      left (files, DKMS tree, module, idle and stale cables), and the used
#      cable must still be there with its program alive.
#
# With --lintian, also (after 1, in the build root) lintian -EvIL +pedantic
# of that release over the source and binary packages: no error or warning
# that debian/*lintian-overrides does not justify.
#
#   tools/roots/packages.sh [--lintian] SUITE [OUTDIR]
# SUITE: bookworm or trixie. OUTDIR receives the .dsc, .debs and logs.
# Exit status: 0 pass, 1 fail, 77 no root/archive/cache to run with.
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"
roots_start --lintian "$@"
lint=$ROOTS_FLAG
step() { roots_log "== $suite: $*"; }

ver=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)

# ---- 1. build from the source package ----
# The build root: what README's "apt-get build-dep ./" installs (the
# Build-Depends and build-essential), from the minimal root.
recipe_build() { # dir suite
	local dir=$1 suite=$2
	root_extract "$ROOTS_BASE" "$dir"
	mkdir -p "$dir/root/src/debian"
	cp "$top/debian/control" "$dir/root/src/debian/"
	root_apt "$dir" "$suite" update
	root_apt "$dir" "$suite" --no-install-recommends build-dep /root/src/
	rm -rf "$dir/root/src"
}
step "build root (apt-get build-dep)"
build=$ROOTS_WORK/build-$suite
ROOTS_BASE=$(roots_minbase "$suite") &&
	t=$(root_tarball "$suite" build "$(roots_hash "$(declare -f recipe_build)" "$ROOTS_BASE" "$(cat "$top/debian/control")")" recipe_build) || {
	echo "SKIP: no $suite root cached, and no debootstrap or Debian's archive to make one"
	exit 77
}
root_extract "$t" "$build"
in_root "$build" useradd -m builder
roots_copy_tree "$top" "$build/home/builder/usb4verbs"
chroot "$build" chown -R builder: /home/builder/usb4verbs
step "dpkg-source -b, dpkg-source -x, dpkg-buildpackage"
if ! in_root "$build" --user builder bash -c '
	set -e
	cd ~
	dpkg-source -b usb4verbs
	rm -rf usb4verbs
	dpkg-source -x usb4verbs_*.dsc pkg
	cd pkg
	export DEB_BUILD_OPTIONS=parallel=$(nproc)
	dpkg-buildpackage -us -uc -b' >"$out/build.log" 2>&1; then
	tail -40 "$out/build.log" >&2
	roots_die "$suite: building the packages from the source package failed"
fi
cp "$build"/home/builder/usb4verbs_* "$build"/home/builder/*.deb "$out/"
debs=()
for p in libusb4verbs usb4verbs-tools usb4verbs-dkms; do
	f=$(ls "$out/${p}_${ver}"_*.deb 2>/dev/null) ||
		roots_die "$suite: $p was not built"
	debs+=("$f")
done
if [ $lint = 1 ]; then
	step "lintian -EvIL +pedantic (in the build root)"
	if root_apt "$build" "$suite" --no-install-recommends install lintian \
		>"$out/lintian-install.log" 2>&1; then
		in_root "$build" --user builder bash -c 'cd ~ &&
			lintian -EvIL +pedantic --show-overrides --color never \
			--fail-on error,warning *.dsc *.changes' >"$out/lintian.log" 2>&1 ||
			fail "lintian: $(grep -E '^[EW]:' "$out/lintian.log" | head -10 | tr '\n' ' ')"
		grep -E '^[EWIPXO]:' "$out/lintian.log" | sed "s/^/[roots] $suite lintian: /" >&2 || true
	else
		tail -20 "$out/lintian-install.log" >&2
		fail "installing lintian"
	fi
fi
roots_remove "$build"
"$top/tools/check-package.sh" --debs "$out" >&2 || fail "package contents"

# ---- 2. install into a pristine root ----
step "pristine root: apt install the packages and linux-headers-amd64"
root=$ROOTS_WORK/pristine-$suite
root_extract "$ROOTS_BASE" "$root"
mkdir -p "$root/root/debs"
cp "${debs[@]}" "$root/root/debs/"
before=$ROOTS_WORK/files-before-$suite
(cd "$root" && find . -xdev -path ./proc -prune -o -path ./root/debs -prune \
	-o -print | sort) >"$before"
# What usb4verbs-tools recommends (the tools its users run), but not what
# dkms recommends for a machine that boots (a kernel image and initramfs).
read -r -a recs < <(dpkg-deb -f "${debs[1]}" Recommends | tr -d ',')
# The root's package lists are those of the cached minimal root; the .debs
# come from the cache when they are there (offline). Should the archive have
# moved on since, update the lists and try again.
install=(--no-install-recommends install "${debs[@]/#$out/\/root\/debs}"
	"${recs[@]}" linux-headers-amd64)
if ! root_apt "$root" "$suite" "${install[@]}" >"$out/install.log" 2>&1 &&
	! { roots_online && root_apt "$root" "$suite" update &&
		root_apt "$root" "$suite" "${install[@]}"; } >>"$out/install.log" 2>&1; then
	tail -30 "$out/install.log" >&2
	for f in "$root"/var/lib/dkms/usb4verbs/*/build/make.log; do
		[ -e "$f" ] && cp "$f" "$out/dkms-make.log" && tail -30 "$f" >&2
	done
	roots_die "$suite: apt could not install the packages"
fi
grep -E '^(Setting up|Building|Installing|.*dkms)' "$out/install.log" | tail -12 >&2 || true
for p in ibverbs-utils perftest libibverbs1; do
	in_root "$root" dpkg-query -W "$p" >/dev/null 2>&1 || fail "$p was not installed"
done

# DKMS built the module for the headers' kernel, without warnings of ours.
kver=$(ls "$root/usr/src" | sed -n 's/^linux-headers-\(.*-amd64\)$/\1/p' | head -1)
log=$(ls "$root"/var/lib/dkms/usb4verbs/"$ver"/"$kver"/*/log/make.log \
	"$root"/var/lib/dkms/usb4verbs/"$ver"/build/make.log 2>/dev/null | head -1 || true)
ko=$(find "$root/lib/modules/$kver" -name 'usb4verbs.ko*' 2>/dev/null | head -1 || true)
if [ -z "$ko" ]; then
	fail "DKMS did not install usb4verbs.ko for $kver"
	[ -n "$log" ] && tail -20 "$log" >&2
elif [ -n "$log" ]; then
	cp "$log" "$out/dkms-make.log"
	n=$(grep -cE 'usb4verbs[a-z_]*\.[ch]:[0-9]+:[0-9]+: warning' "$log" || true)
	roots_log "RESULT: $suite DKMS build for $kver: ${ko#"$root"}, $n warnings in our files"
	[ "$n" -eq 0 ] || fail "$n compiler warnings in the DKMS build"
fi

# ---- 3. as an ordinary user ----
step "as an ordinary user: up, ibv_devinfo, ib_write_bw, ibv_rc_pingpong -c"
in_root "$root" useradd -m alice
in_root "$root" useradd -m bob
# the pair driver and what it sources, in the tree's layout
mkdir -p "$root/opt/u4v-e2e/tests/e2e" "$root/opt/u4v-e2e/tools"
cp "$top/tests/e2e/lib.sh" "$top/tests/e2e/run_pair.sh" "$root/opt/u4v-e2e/tests/e2e/"
cp "$top/tools/cable-lib.sh" "$root/opt/u4v-e2e/tools/"
as() { # user cmd...: in a network namespace of its own (fixed TCP ports)
	local u=$1
	shift
	in_root "$root" --user "$u" --netns env USB4V_SIM=/usr/bin/usb4v-sim "$@"
}
read -r d0 _ < <(as alice usb4v-sim up --name first) || fail "usb4v-sim up"
as alice usb4v-sim exec --name first -- ibv_devinfo -d "${d0:-none}" >"$out/devinfo.txt" 2>&1
grep -q PORT_ACTIVE "$out/devinfo.txt" || fail "ibv_devinfo: $(head -c 300 "$out/devinfo.txt")"
as alice usb4v-sim down --name first || fail "usb4v-sim down"
perf_row='^[ \t]*[0-9]+[ \t]+[0-9]+[ \t]+[0-9.]+[ \t]+[0-9.]+'
pair() { # name port expect -- server ::: client
	local name=$1 port=$2 re=$3
	shift 3
	if as alice bash /opt/u4v-e2e/tests/e2e/run_pair.sh --name "$name" --port "$port" \
		--timeout 60 --expect "$re" "$@" >"$out/$name.log" 2>&1; then
		grep RESULT "$out/$name.log" | sed "s/^/[roots] $suite /" >&2
	else
		tail -20 "$out/$name.log" >&2
		fail "$name"
	fi
}
pair write_bw 18801 "$perf_row" -- ib_write_bw -d @D0@ -p @PORT@ -F -n 500 \
	::: ib_write_bw -d @D1@ -p @PORT@ -F -n 500 127.0.0.1
pair rc_pingpong 18802 "[0-9]+ iters in [0-9.]+ seconds" -- \
	ibv_rc_pingpong -d @D0@ -p @PORT@ -g 3 -n 200 -c \
	::: ibv_rc_pingpong -d @D1@ -p @PORT@ -g 3 -n 200 -c 127.0.0.1

# ---- 4. purge ----
step "purge, with an idle, a stale and another user's busy cable left"
as alice usb4v-sim up --name idle >/dev/null || fail "up idle"
as alice usb4v-sim up --name stale >/dev/null || fail "up stale"
alice=$(chroot "$root" id -u alice) bob=$(chroot "$root" id -u bob)
rm -f "/dev/shm/usb4v-sim-$alice-stale"
read -r b0 _ < <(as bob usb4v-sim up --name busy) || fail "up busy"
# bob's server waits for a client that never comes; its own process group
setsid bash -c 'echo $$ >"$1"; shift; exec "$@"' busy "$ROOTS_WORK/busy.pgid" \
	timeout --foreground 300 bash -c '. "$0"; in_root "$1" --user bob --netns \
	usb4v-sim exec --name busy -- ib_write_bw -d "$2" -p 18803' \
	"$here/lib.sh" "$root" "${b0:-none}" >/dev/null 2>&1 &
for ((i = 0; i < 100; i++)); do # until the server has the device open
	busy=$(cat "$ROOTS_WORK/busy.pgid" 2>/dev/null) && [ -n "$busy" ] &&
		pgrep -g "$busy" | sed 's|.*|/proc/&/maps|' |
		xargs -r grep -qs "usb4v-sim-$bob-busy" && break
	sleep 0.2
done
busy=$(cat "$ROOTS_WORK/busy.pgid")
if ! root_apt "$root" "$suite" purge usb4verbs-tools libusb4verbs usb4verbs-dkms \
	>"$out/purge.log" 2>&1; then
	tail -20 "$out/purge.log" >&2
	fail "apt purge failed"
fi
grep 'gc:' "$out/purge.log" | sed "s/^/[roots] $suite purge: /" >&2 || true
after=$ROOTS_WORK/files-after-$suite
# what the packages' dependencies brought is theirs; ours must be gone
(cd "$root" && find . -xdev -path ./proc -prune -o -path ./root/debs -prune \
	-o -print | sort) >"$after"
left=$( (comm -13 "$before" "$after"; ls -d /dev/shm/* 2>/dev/null) |
	grep -Ei 'usb4v|libusb4verbs' |
	grep -v -e "^/dev/shm/usb4v-sim-$bob-busy\$" -e "^\./tmp/usb4v-sim-$bob" || true)
[ -z "$left" ] || fail "left after purge: $(echo "$left" | head -20 | tr '\n' ' ')"
[ -e "/dev/shm/usb4v-sim-$bob-busy" ] ||
	fail "purge removed another user's cable that a program uses"
pgrep -g "$busy" -f "ib_write_bw -d" >/dev/null ||
	fail "the program using bob's cable did not survive the purge"
kill -TERM -- "-$busy" 2>/dev/null
wait 2>/dev/null

if [ $ROOTS_FAILS -eq 0 ]; then
	roots_log "PASS: $suite: source package built, installed, used as a user, purged"
	exit 0
fi
roots_log "$suite: $ROOTS_FAILS failures (logs: $out)"
exit 1

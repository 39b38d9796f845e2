# SPDX-License-Identifier: MIT
# shellcheck shell=bash
#
# Debian roots made with debootstrap, for testing on releases this machine
# does not run (sourced by tools/roots/*.sh; needs root).
#
# A root is built from a recipe once and kept as a tarball in the cache,
# $U4V_CACHE_DIR (default ~/.cache/usb4verbs), named
# <suite>-<kind>-<recipe hash>-<ISO week>.tar.zst: a changed recipe or a
# new week makes a new one, which needs Debian's archive. Without the
# archive the newest tarball of the same recipe is used, older week or not;
# without any, root_tarball() fails and the caller skips. Downloaded .debs
# are kept per suite in the cache too (bound to /var/cache/apt/archives).
# The archive: $U4V_DEBIAN_MIRROR, else the Debian archive this machine's
# apt sources name, else deb.debian.org.
#
# Every chroot runs in its own mount namespace (unshare) with /proc, /sys,
# /dev, /dev/pts and /dev/shm bound, unmounted by a trap when it ends;
# nothing is deleted while something is mounted below it.

set -euo pipefail
shopt -s inherit_errexit

# The first .../debian archive of the host's apt sources (deb822 or not).
roots_host_mirror() {
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list \
		/etc/apt/sources.list.d/*.sources 2>/dev/null | grep -v '^[[:space:]]*#' |
		grep -oE '(https?|ftp)://[^ ]*/debian/?( |$)' | head -1 | tr -d ' '
}
ROOTS_MIRROR=${U4V_DEBIAN_MIRROR:-$(roots_host_mirror || true)}
ROOTS_MIRROR=${ROOTS_MIRROR:-http://deb.debian.org/debian}
ROOTS_MIRROR=${ROOTS_MIRROR%/}
ROOTS_CACHE=${U4V_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/usb4verbs}
ROOTS_WORK=
ROOTS_ONLINE=

roots_log() { printf '[roots] %s\n' "$*" >&2; }
roots_die() {
	printf '[roots] FAIL: %s\n' "$*" >&2
	exit 1
}
# A failed check of the calling script, which goes on (counted; $suite is
# the release it checks).
ROOTS_FAILS=0
fail() {
	roots_log "FAIL (${suite:-}): $*"
	ROOTS_FAILS=$((ROOTS_FAILS + 1))
}

# Re-run the calling script (path, args) in a mount namespace of its own
# with a private, empty /dev/shm that the roots share: their cables never
# meet the host's, and go when the script ends.
roots_private_shm() {
	if [ -z "${U4V_ROOTS_NS:-}" ]; then
		roots_can_run
		exec unshare --mount --propagation private env U4V_ROOTS_NS=1 "$@"
	fi
	mount -t tmpfs -o size=6g,mode=1777 tmpfs /dev/shm
}

# What every root needs here: root, zstd, and mount namespaces (not there
# inside a chroot, whose / is no mount point). Skips (77) without.
roots_can_run() {
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
	command -v zstd >/dev/null || { echo "SKIP: no zstd (apt: zstd)"; exit 77; }
	unshare --mount --propagation private true 2>/dev/null || {
		echo "SKIP: no private mount namespace here (a chroot?)"
		exit 77
	}
}

# Scratch space on disk (roots are too big for a tmpfs /tmp), removed at exit.
roots_init() {
	roots_can_run
	mkdir -p "$ROOTS_CACHE/roots"
	ROOTS_WORK=$(mktemp -d "${U4V_ROOTS_WORK:-/var/tmp}/u4v-roots.XXXXXX")
	trap roots_cleanup EXIT
	trap 'exit 130' INT TERM
}

# The start of a script run as NAME [FLAG] SUITE [OUTDIR]: as root, in a
# private /dev/shm (roots_private_shm runs it again there); ROOTS_FLAG 1 if
# FLAG came first, else 0; suite; roots_init; out, made (default
# $ROOTS_WORK/out).
# shellcheck disable=SC2034 # the caller's variables
roots_start() { # FLAG args...
	local f=$1
	shift
	[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }
	roots_private_shm "$0" "$@"
	ROOTS_FLAG=0
	if [ "${1:-}" = "$f" ]; then
		ROOTS_FLAG=1
		shift
	fi
	suite=${1:?suite}
	roots_init
	out=${2:-$ROOTS_WORK/out}
	mkdir -p "$out"
}

roots_mounted_below() { # dir: prints mount points at or below it
	awk -v d="$1" '$5 == d || index($5, d "/") == 1 {print $5}' \
		/proc/self/mountinfo
}

roots_remove() { # dir: rm -rf, refusing while anything is mounted below
	local d
	d=$(realpath -m "$1")
	[ -e "$d" ] || return 0
	if [ -n "$(roots_mounted_below "$d")" ]; then
		roots_log "not removing $d: mounts below it: $(roots_mounted_below "$d" | tr '\n' ' ')"
		return 1
	fi
	rm -rf --one-file-system "$d"
}

roots_cleanup() {
	[ -n "$ROOTS_WORK" ] && roots_remove "$ROOTS_WORK"
	return 0
}

# Whether roots can be made: debootstrap is there and Debian's archive
# answers (checked once).
roots_online() {
	if [ -z "$ROOTS_ONLINE" ]; then
		ROOTS_ONLINE=no
		command -v debootstrap >/dev/null || return 1
		local host=${ROOTS_MIRROR#*://}
		host=${host%%/*}
		if timeout 10 bash -c "exec 3<>/dev/tcp/$host/80" 2>/dev/null; then
			ROOTS_ONLINE=yes
		fi
	fi
	[ "$ROOTS_ONLINE" = yes ]
}

# The part of in_root() that runs in the new mount namespace.
# shellcheck disable=SC2016 # expanded by that shell
ROOTS_INNER='
set -eu
root=$1 apt=$2 user=$3 binds=$4 netns=$5
shift 5
# a network namespace of its own: only a loopback, so the TCP ports of the
# tools inside never meet those of another run
if [ -n "$netns" ]; then ip link set lo up; fi
mounted=()
undo() {
	local i
	for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
		umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}"
	done
}
trap undo EXIT
bind() { # src dst
	mkdir -p "$2"
	mount --bind "$1" "$2"
	mounted+=("$2")
}
mkdir -p "$root/proc"
mount -t proc proc "$root/proc"
mounted+=("$root/proc")
for d in sys dev dev/pts dev/shm; do
	bind "/$d" "$root/$d"
done
if [ -n "$apt" ]; then bind "$apt" "$root/var/cache/apt/archives"; fi
for d in $binds; do bind "$d" "$root$d"; done
cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
env=(env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
	LANG=C.UTF-8 TERM=dumb DEBIAN_FRONTEND=noninteractive)
if [ -n "$user" ]; then
	chroot "$root" runuser -u "$user" -- "${env[@]}" HOME="/home/$user" "$@"
else
	chroot "$root" "${env[@]}" HOME=/root "$@"
fi
'

# in_root ROOT [--user NAME] [--apt-cache SUITE] [--bind DIR]... [--netns]
# CMD...: run CMD in ROOT (stdin: /dev/null); --bind shows the host's DIR (a
# path without blanks) at the same path inside; --netns gives it a network
# namespace with only a loopback (for tests; apt needs the host's).
in_root() {
	local root=$1 user= apt= binds= netns=
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		--user) user=$2; shift 2 ;;
		--netns) netns=--net; shift ;;
		--bind) binds+=" $(realpath "$2")"; shift 2 ;;
		--apt-cache)
			apt=$ROOTS_CACHE/apt-$2
			mkdir -p "$apt/partial"
			shift 2
			;;
		*) break ;;
		esac
	done
	unshare --mount ${netns:+"$netns"} --propagation private \
		bash -c "$ROOTS_INNER" in_root "$root" "$apt" "$user" "$binds" "$netns" "$@" </dev/null
}

# apt-get in ROOT of SUITE (downloads kept in the cache, one user at a time).
root_apt() { # root suite apt-get-args...
	local root=$1 suite=$2
	shift 2
	(
		flock 8
		in_root "$root" --apt-cache "$suite" apt-get -q -y "$@"
	) 8>"$ROOTS_CACHE/apt-$suite.lock"
}

roots_week() { date -u +%G-W%V; }

# The tarball of SUITE/KIND built by RECIPE (a function: recipe ROOT SUITE),
# whose inputs hash to KEY; built when missing and the archive answers.
# Prints its path; fails when there is none to use.
root_tarball() { # suite kind key recipe
	local suite=$1 kind=$2 key=$3 recipe=$4
	local base="$ROOTS_CACHE/roots/$suite-$kind-$key"
	local want="$base-$(roots_week).tar.zst" t
	exec 9>"$base.lock"
	flock 9
	if [ ! -s "$want" ] && roots_online; then
		local dir="$ROOTS_WORK/make-$suite-$kind"
		roots_log "building the $suite $kind root (cache: $want)"
		roots_remove "$dir"
		mkdir -p "$dir"
		# in the background, so that set -e holds inside the recipe
		"$recipe" "$dir" "$suite" >"$ROOTS_WORK/make-$suite-$kind.log" 2>&1 &
		if ! wait $!; then
			tail -30 "$ROOTS_WORK/make-$suite-$kind.log" >&2
			roots_die "building the $suite $kind root failed"
		fi
		tar -C "$dir" --numeric-owner -cf - . | zstd -q -T0 -o "$want.tmp" ||
			roots_die "writing $want.tmp"
		mv "$want.tmp" "$want"
		# the first root_extract of it in this run takes the tree itself
		mkdir -p "$ROOTS_WORK/made"
		mv "$dir" "$ROOTS_WORK/made/$(basename "$want")"
		# keep one older tarball of this recipe as the offline fallback
		ls -1t "$base"-*.tar.zst 2>/dev/null | tail -n +3 | xargs -r rm -f
	fi
	exec 9>&-
	t=$(ls -1t "$base"-*.tar.zst 2>/dev/null | head -1)
	[ -n "$t" ] || return 1
	[ "$t" = "$want" ] || roots_log "offline: using $(basename "$t")"
	echo "$t"
}

root_extract() { # tarball dest
	local made
	made=$ROOTS_WORK/made/$(basename "$1")
	if [ -d "$made" ] && [ -z "$(roots_mounted_below "$made")" ] &&
		{ [ ! -e "$2" ] || rmdir "$2" 2>/dev/null; }; then
		mv "$made" "$2" # made by this run: the same tree, not unpacked again
	else
		mkdir -p "$2"
		zstd -q -dc "$1" | tar -C "$2" --numeric-owner -xf -
	fi
	# a throw-away root: dpkg need not sync every file it unpacks
	echo force-unsafe-io >"$2/etc/dpkg/dpkg.cfg.d/90u4v-unsafe-io"
}

# ---- recipes (their text is part of the cache key) ----

# minbase: debootstrap's smallest root. The archive on this network may be
# a snapshot whose unstable Release file has expired: do not insist there.
recipe_minbase() { # dir suite
	debootstrap --variant=minbase "$2" "$1" "$ROOTS_MIRROR"
	if [ "$2" = sid ] || [ "$2" = unstable ]; then
		echo 'Acquire::Check-Valid-Until "false";' \
			>"$1/etc/apt/apt.conf.d/90u4v-snapshot"
	fi
	rm -f "$1"/var/cache/apt/archives/*.deb
}

roots_hash() { # strings...: a short hash of the recipe inputs
	printf '%s\n' "$@" | sha256sum | cut -c1-12
}

# The minimal root of SUITE (tarball path), made when missing.
roots_minbase() { # suite
	root_tarball "$1" minbase \
		"$(roots_hash "$(declare -f recipe_minbase)" "$ROOTS_MIRROR")" \
		recipe_minbase
}

# The tracked tree (what a clone has), copied to DEST.
roots_copy_tree() { # src dest
	mkdir -p "$2"
	git -C "$1" ls-files -z | (cd "$1" && xargs -0 cp --parents -t "$2")
}

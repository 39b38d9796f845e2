#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Records, for each rdma-core release, the layouts and signatures the
# usb4verbs provider shares with libibverbs, and groups releases whose
# records are equal. The facts behind providers/usb4verbs/abi.h and
# providers/usb4verbs/pabi.cmake come from this (see docs/PABI.md).
#
#   tools/pabi/scan.sh [-o OUTDIR] SOURCE...
#
# SOURCE is GITDIR@TAG (e.g. the rdma-core mirror that `git clone` or the
# project's fetch tool gives, @v44.0) or a directory holding an unpacked
# rdma-core tree (e.g. Debian's rdma-core_65.0.orig.tar.gz). Each is
# configured with CMake (nothing is built but one generated header) and
# tools/pabi/probe.c is compiled against its libibverbs headers. Needs
# cmake, a C compiler and python3. Nothing of rdma-core is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=
if [ "${1:-}" = -o ]; then
	out=$2
	shift 2
fi
[ $# -ge 1 ] || { sed -n '4,16p' "$0" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
[ -n "$out" ] || out=$work/out
mkdir -p "$out"

# Normalised text of one top-level declaration block of a header: the
# struct from "struct NAME {" to "};", comments and spacing squeezed.
decl() { # header struct-name
	awk -v s="struct $2 {" 'index($0, s) == 1 {on = 1} on {print} on && /^};/ {exit}' "$1" |
		sed -e 's://.*$::' | tr '\n\t' '  ' |
		sed -e 's:/\*[^*]*\*\+\([^/*][^*]*\*\+\)*/::g' -e 's/  */ /g'
}

# The member declarations of verbs_context_ops, one a line: "name decl".
ops() { # driver.h
	decl "$1" verbs_context_ops | sed -e 's/^[^{]*{//' -e 's/};.*$//' |
		tr ';' '\n' | sed -e 's/^ *//' -e 's/ *$//' | grep -v '^$' |
		while IFS= read -r d; do
			n=$(sed -n 's/^[^(]*( *\* *\([a-z_0-9]*\) *).*/\1/p' <<<"$d")
			printf '%s %s\n' "$n" "$d"
		done
}

probe() { # src-dir label
	local src=$1 label=$2 b=$work/b-$2 drv
	drv=$src/libibverbs/driver.h
	cmake -S "$src" -B "$b" -DNO_PYVERBS=1 -DNO_MAN_PAGES=1 \
		-DENABLE_RESOLVE_NEIGH=0 -DENABLE_STATIC=0 >"$work/cmake-$label.log" 2>&1 || {
		tail -20 "$work/cmake-$label.log" >&2
		echo "scan: cmake failed for $label" >&2
		return 1
	}
	mkdir -p "$b/include/kernel-abi"
	(cd "$src/kernel-headers" &&
		python3 "$src/buildlib/make_abi_structs.py" rdma/ib_user_verbs.h \
			"$b/include/kernel-abi/ib_user_verbs.h")
	ops "$drv" | awk '{printf "SLOT(%s);\n", $1}' >"$work/slots.inc"
	rm -f "$work/probe"
	cc -std=gnu11 -w -I"$work" -I"$b/include" -I"$src" \
		-include "$b/include/config.h" "$here/probe.c" -o "$work/probe" \
		2>"$work/cc-$label.log" || true
	{
		printf 'pabi %s\n' "$(sed -n 's/^set(IBVERBS_PABI_VERSION "\([0-9]*\)")/\1/p' "$src/CMakeLists.txt")"
		if [ -x "$work/probe" ]; then
			"$work/probe"
		else # a member the provider relies on is missing
			grep -m1 'error:' "$work/cc-$label.log" | sed 's/^[^ ]* error: /probe-error /'
		fi
		ops "$drv" | while read -r n d; do
			printf 'op.%s %s\n' "$n" "$(printf '%s' "$d" | sha1sum | cut -c1-12)"
		done
		for s in verbs_match_ent verbs_sysfs_dev verbs_device_ops verbs_device verbs_mr verbs_qp; do
			printf 'decl.%s %s\n' "$s" "$(decl "$drv" "$s" | sha1sum | cut -c1-12)"
		done
		for f in _verbs_init_and_alloc_context verbs_set_ops verbs_uninit_context; do
			printf 'proto.%s %s\n' "$f" "$(awk -v f="$f(" 'index($0, f) {on = 1} on {print} on && /;/ {exit}' "$drv" |
				tr '\n\t' '  ' | sed 's/  */ /g' | sha1sum | cut -c1-12)"
		done
	} >"$out/$label.facts"
}

version() { # src-dir
	sed -n 's/^set(PACKAGE_VERSION "\([0-9.]*\)")/\1/p' "$1/CMakeLists.txt"
}

labels=()
for s in "$@"; do
	if [[ $s == *@* ]]; then
		git=${s%@*} tag=${s##*@}
		src=$work/src-$tag
		mkdir -p "$src"
		git -C "$git" archive "$tag" | tar -x -C "$src"
	else
		src=$(cd "$s" && pwd)
	fi
	label=$(version "$src")
	echo "scan: rdma-core $label ($s)" >&2
	probe "$src" "$label"
	labels+=("$label")
done

# Releases in a row whose facts are equal form one class.
prev= first=
for l in "${labels[@]}"; do
	if [ -n "$prev" ] && cmp -s "$out/$prev.facts" "$out/$l.facts"; then
		prev=$l
		continue
	fi
	[ -n "$prev" ] && echo "class $first..$prev pabi $(awk '$1=="pabi"{print $2}' "$out/$first.facts")"
	if [ -n "$prev" ]; then
		{ diff "$out/$prev.facts" "$out/$l.facts" || true; } | sed -n 's/^[<>] /  /p' | sort -k1,1 -s |
			awk -v a="$prev" -v b="$l" '{k=$1; v[k]=v[k] " " $2} END {for (k in v) printf "  %s:%s (%s -> %s)\n", k, v[k], a, b}' | sort
	fi
	first=$l prev=$l
done
echo "class $first..$prev pabi $(awk '$1=="pabi"{print $2}' "$out/$first.facts")"

/* SPDX-License-Identifier: MIT */
/*
 * usb4v-sim: bring software cables up and down, and run unmodified verbs
 * programs on them. See usb4v-sim(1).
 *
 * Exit status: 0 success; 1 runtime failure; 2 misuse (bad command, option
 * or value, no such cable, name taken). `exec` becomes the command, so its
 * status is the command's (127: not found, 126: not executable).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <usb4verbs/sim.h>

#include "cable_dir.h"
#include "gc.h"
#include "locate.h"

#ifndef USB4V_VERSION
#define USB4V_VERSION "0.0.0"
#endif

#define EXIT_MISUSE 2

static const char *prog = "usb4v-sim";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: %s COMMAND [OPTIONS]\n"
		"\n"
		"Software USB4 cables for the usb4verbs RDMA device.\n"
		"\n"
		"Commands:\n"
		"  up   [--name NAME] [CABLE OPTIONS]   create a cable, print its two devices\n"
		"  down [--name NAME]                   remove a cable and everything it left\n"
		"  set  [--name NAME] [LIVE OPTIONS]    reconfigure a live cable\n"
		"  stat [--name NAME]                   print configuration and counters\n"
		"  list                                 list cables\n"
		"  exec [--name NAME] [--end 0|1] -- CMD [ARGS...]\n"
		"                                       run CMD with the cable's devices visible;\n"
		"                                       --end: only that end's, named as end 0's\n"
		"  gc   [--idle] [--all-users]          remove stale cables (--idle: and unused ones)\n"
		"\n"
		"NAME defaults to \"default\"; [A-Za-z0-9_.-], at most 32 characters.\n"
		"\n"
		"Live options (up and set):\n"
		"  --rate GBITS        line rate per direction in Gbit/s (default 20, 0 = unthrottled)\n"
		"  --ring-rate GBITS   what one ring pair moves per direction (default 0 = as the wire)\n"
		"  --latency USEC      one-way latency in microseconds (default 1)\n"
		"  --drop P            probability a frame is lost\n"
		"  --dup P             probability a frame is delivered twice\n"
		"  --reorder P         probability a frame arrives after the next one\n"
		"  --crc P             probability a frame arrives with a CRC error\n"
		"  --stranded P        probability a frame completes without waking the receiver\n"
		"  --ack-drop P        probability an ACK/NAK frame is lost\n"
		"Cable options (up only):\n"
		"  --e2e on|off        end-to-end flow control (default on)\n"
		"  --ring-depth N      descriptors per ring, power of two 16..4096 (default 256)\n"
		"  --channels N        cross-cable channel budget (default 16)\n"
		"  --seed N            fault generator seed\n"
		"Probabilities are per frame, in [0,1], applied to both directions.\n"
		"\n"
		"Environment: USB4V_SIM_DIR, XDG_RUNTIME_DIR, USB4V_PROVIDER_PATH, USB4V_SHIM_PATH.\n"
		"Exit status: 0 ok, 1 failure, 2 misuse; exec: the command's.\n"
		"See usb4v-sim(1) and usb4verbs(7).\n",
		prog);
}

__attribute__((format(printf, 1, 2), noreturn)) static void misuse(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	exit(EXIT_MISUSE);
}

__attribute__((format(printf, 2, 3), noreturn)) void fail(int code, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

/* ---- options ---- */

enum opt_id {
	O_NAME,
	O_RATE,
	O_RING_RATE,
	O_LATENCY,
	O_DROP,
	O_DUP,
	O_REORDER,
	O_CRC,
	O_STRANDED,
	O_ACK_DROP,
	O_E2E,
	O_RING_DEPTH,
	O_CHANNELS,
	O_SEED,
	O_END,
	O_COUNT
};

static const char *const opt_names[O_COUNT] = {
	[O_NAME] = "name",	   [O_RATE] = "rate",
	[O_RING_RATE] = "ring-rate",
	[O_LATENCY] = "latency",   [O_DROP] = "drop",
	[O_DUP] = "dup",	   [O_REORDER] = "reorder",
	[O_CRC] = "crc",	   [O_STRANDED] = "stranded",
	[O_ACK_DROP] = "ack-drop", [O_E2E] = "e2e",
	[O_RING_DEPTH] = "ring-depth", [O_CHANNELS] = "channels",
	[O_SEED] = "seed",	   [O_END] = "end",
};

#define M(o) (1u << (o))
#define LIVE_OPTS                                                              \
	(M(O_RATE) | M(O_RING_RATE) | M(O_LATENCY) | M(O_DROP) | M(O_DUP) |  \
	 M(O_REORDER) | M(O_CRC) | M(O_STRANDED) | M(O_ACK_DROP))
#define CREATE_OPTS (M(O_E2E) | M(O_RING_DEPTH) | M(O_CHANNELS) | M(O_SEED))

struct opts {
	unsigned given;
	const char *val[O_COUNT];
	/* exec: index of the first word after "--" */
	int cmd_index;
};

/*
 * Parse argv[first..] as --opt VALUE / --opt=VALUE pairs allowed by mask.
 * With stop_at_dashdash, "--" ends the options (exec).
 */
static void parse_opts(const char *cmd, int argc, char **argv, int first,
		       unsigned allowed, bool stop_at_dashdash, struct opts *o)
{
	memset(o, 0, sizeof(*o));
	o->cmd_index = -1;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i], *eq, *val;
		size_t len;
		int id = -1;

		if (!strcmp(a, "--")) {
			if (stop_at_dashdash) {
				o->cmd_index = i + 1;
				return;
			}
			misuse("%s: unexpected '--'", cmd);
		}
		if (strncmp(a, "--", 2) || !a[2]) {
			if (stop_at_dashdash)
				misuse("%s: missing '--' before the command ('%s')",
				       cmd, a);
			misuse("%s: unexpected argument '%s'", cmd, a);
		}
		a += 2;
		eq = strchr(a, '=');
		len = eq ? (size_t)(eq - a) : strlen(a);
		for (int k = 0; k < O_COUNT; k++)
			if (strlen(opt_names[k]) == len &&
			    !strncmp(opt_names[k], a, len))
				id = k;
		if (id < 0)
			misuse("%s: unknown option '--%.*s'", cmd, (int)len, a);
		if (!(allowed & M(id))) {
			if (!strcmp(cmd, "set") && (CREATE_OPTS & M(id)))
				misuse("set: --%s cannot be changed on a live cable "
				       "(bring it down and up again)",
				       opt_names[id]);
			misuse("%s: option '--%s' does not apply to this command",
			       cmd, opt_names[id]);
		}
		if (eq) {
			val = eq + 1;
		} else {
			if (i + 1 >= argc)
				misuse("%s: option '--%s' needs a value", cmd,
				       opt_names[id]);
			val = argv[++i];
		}
		if (o->given & M(id))
			misuse("%s: option '--%s' given twice", cmd,
			       opt_names[id]);
		o->given |= M(id);
		o->val[id] = val;
	}
	if (stop_at_dashdash)
		misuse("%s: missing '--' before the command", cmd);
}

static double parse_double(const char *opt, const char *s, double lo, double hi,
			   const char *what)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		misuse("--%s: '%s' is not a number", opt, s);
	if (v < lo || v > hi)
		misuse("--%s: %s must be %s (got '%s')", opt, what,
		       hi == 1.0 && lo == 0.0 ? "in [0,1]" : "non-negative and in range",
		       s);
	return v;
}

static uint64_t parse_uint(const char *opt, const char *s, uint64_t lo,
			   uint64_t hi)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-' || *s == '+' || *s == ' ')
		misuse("--%s: '%s' is not a non-negative integer", opt, s);
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end || errno)
		misuse("--%s: '%s' is not a non-negative integer", opt, s);
	if (v < lo || v > hi)
		misuse("--%s: %llu is out of range %llu..%llu", opt, v,
		       (unsigned long long)lo, (unsigned long long)hi);
	return v;
}

static const char *opt_name_value(const struct opts *o)
{
	const char *name = o->given & M(O_NAME) ? o->val[O_NAME] : "default";

	if (!cable_name_valid(name))
		misuse("invalid cable name '%s' (use 1..%d of [A-Za-z0-9_.-])",
		       name, CABLE_NAME_MAX);
	return name;
}

/* Apply the given options to cfg (validating every value). */
static void apply_opts(const struct opts *o, struct u4l_sim_config *cfg)
{
	static const int fault_opt[] = {O_DROP,	    O_DUP,	O_REORDER,
					O_CRC,	    O_STRANDED, O_ACK_DROP};

	if (o->given & M(O_RATE)) {
		double g = parse_double("rate", o->val[O_RATE], 0, 1e6,
					"the rate in Gbit/s");
		cfg->rate_bps = (uint64_t)llround(g * 1e9);
	}
	if (o->given & M(O_RING_RATE)) {
		double g = parse_double("ring-rate", o->val[O_RING_RATE], 0,
					1e6, "the ring rate in Gbit/s");
		cfg->ring_rate_bps = (uint64_t)llround(g * 1e9);
	}
	if (o->given & M(O_LATENCY)) {
		double us = parse_double("latency", o->val[O_LATENCY], 0,
					 (double)UINT32_MAX / 1000.0,
					 "the latency in microseconds");
		cfg->latency_ns = (uint32_t)llround(us * 1000.0);
	}
	for (size_t i = 0; i < sizeof(fault_opt) / sizeof(fault_opt[0]); i++) {
		int id = fault_opt[i];
		double p;

		if (!(o->given & M(id)))
			continue;
		p = parse_double(opt_names[id], o->val[id], 0.0, 1.0,
				 "a probability");
		for (int d = 0; d < 2; d++) {
			struct u4l_sim_faults *f = &cfg->faults[d];
			switch (id) {
			case O_DROP: f->drop = p; break;
			case O_DUP: f->dup = p; break;
			case O_REORDER: f->reorder = p; break;
			case O_CRC: f->crc = p; break;
			case O_STRANDED: f->stranded = p; break;
			case O_ACK_DROP: f->drop_ctrl = p; break;
			}
		}
	}
	if (o->given & M(O_E2E)) {
		const char *v = o->val[O_E2E];
		if (!strcmp(v, "on") || !strcmp(v, "1") || !strcmp(v, "yes"))
			cfg->e2e = 1;
		else if (!strcmp(v, "off") || !strcmp(v, "0") || !strcmp(v, "no"))
			cfg->e2e = 0;
		else
			misuse("--e2e: expected 'on' or 'off', got '%s'", v);
	}
	if (o->given & M(O_RING_DEPTH)) {
		uint64_t d = parse_uint("ring-depth", o->val[O_RING_DEPTH], 16,
					4096);
		if (d & (d - 1))
			misuse("--ring-depth: %llu is not a power of two",
			       (unsigned long long)d);
		cfg->ring_depth = (uint32_t)d;
	}
	if (o->given & M(O_CHANNELS))
		cfg->max_channels = (uint32_t)parse_uint(
			"channels", o->val[O_CHANNELS], 0, 1024);
	if (o->given & M(O_SEED))
		cfg->seed = parse_uint("seed", o->val[O_SEED], 0, UINT64_MAX);
}

/* ---- helpers ---- */

static void resolve_state(struct state_dir *st)
{
	int ret = state_dir_resolve(st);

	if (ret == -EINVAL)
		fail(EXIT_MISUSE, "USB4V_SIM_DIR must be an absolute path");
	if (ret)
		fail(1, "state directory path: %s", strerror(-ret));
}

static void lock_state(struct state_dir *st)
{
	const char *why = "";
	int ret = state_dir_lock(st, &why);

	if (ret)
		fail(1, "%s %s: %s", why, st->path, strerror(-ret));
}

static void need_cable(const struct state_dir *st, const char *name,
		       struct cable_info *info)
{
	int ret = cable_lookup(st, name, info);

	if (ret == -ENOENT || ret == -ENOTDIR)
		fail(EXIT_MISUSE, "no such cable '%s' (in %s; see '%s list')",
		     name, st->path, prog);
	if (ret)
		fail(1, "cable '%s': %s", name, strerror(-ret));
}

static void need_segment(const struct cable_info *info,
			 struct u4l_sim_config *cfg)
{
	int ret = u4l_sim_read_config(info->shm, cfg);

	if (ret == -ENOENT)
		fail(EXIT_MISUSE,
		     "cable '%s' is stale: its segment %s is gone "
		     "(run '%s down --name %s')",
		     info->name, info->shm, prog, info->name);
	if (ret)
		fail(1, "cable '%s': reading %s: %s", info->name, info->shm,
		     strerror(-ret));
}

/* ---- up / down / set ---- */

static int cmd_up(int argc, char **argv)
{
	struct state_dir st;
	struct cable_info info = {0};
	struct u4l_sim_config cfg;
	struct opts o;
	char d0[32], d1[32], dir[CABLE_PATH_MAX];
	struct stat sb;
	const char *name;
	int ret;

	parse_opts("up", argc, argv, 2, M(O_NAME) | LIVE_OPTS | CREATE_OPTS,
		   false, &o);
	name = opt_name_value(&o);
	u4l_sim_config_default(&cfg);
	apply_opts(&o, &cfg);

	resolve_state(&st);
	snprintf(info.name, sizeof(info.name), "%s", name);
	cable_shm_name(name, info.shm, sizeof(info.shm));
	if (cable_dir_path(&st, name, dir, sizeof(dir)))
		fail(1, "state directory path too long");

	lock_state(&st);
	if (!lstat(dir, &sb)) {
		state_dir_unlock(&st, false);
		fail(EXIT_MISUSE, "cable name '%s' is taken (see '%s list')",
		     name, prog);
	}
	ret = cable_next_index(&st, &info.index);
	if (ret) {
		state_dir_unlock(&st, true);
		fail(1, "no free cable index: %s", strerror(-ret));
	}
	ret = cable_assign(&info);
	if (ret) {
		state_dir_unlock(&st, true);
		fail(1, "choosing the cable's addresses: %s", strerror(-ret));
	}
	ret = u4l_sim_create(info.shm, &cfg);
	if (ret == -EEXIST) {
		state_dir_unlock(&st, true);
		fail(EXIT_MISUSE,
		     "cable name '%s' is taken: segment %s exists without a "
		     "cable directory (left by a crash? '%s down --name %s' "
		     "removes it)",
		     name, info.shm, prog, name);
	}
	if (ret == -EINVAL) {
		state_dir_unlock(&st, true);
		fail(EXIT_MISUSE, "the cable rejected this configuration "
				  "(invalid value)");
	}
	if (ret) {
		state_dir_unlock(&st, true);
		fail(1, "creating segment %s: %s", info.shm, strerror(-ret));
	}
	ret = cable_build(&st, &info);
	if (ret) {
		u4l_sim_destroy(info.shm);
		state_dir_unlock(&st, true);
		fail(1, "creating %s: %s", dir, strerror(-ret));
	}
	state_dir_unlock(&st, false);

	cable_dev_name(info.index, 0, d0, sizeof(d0));
	cable_dev_name(info.index, 1, d1, sizeof(d1));
	printf("%s %s\n", d0, d1);
	return 0;
}

static int cmd_down(int argc, char **argv)
{
	struct state_dir st;
	struct cable_info info;
	struct opts o;
	char shm[CABLE_SHM_MAX];
	const char *name;
	int seg, dir;

	parse_opts("down", argc, argv, 2, M(O_NAME), false, &o);
	name = opt_name_value(&o);
	resolve_state(&st);
	lock_state(&st);

	cable_shm_name(name, shm, sizeof(shm));
	if (!cable_lookup(&st, name, &info) && strcmp(info.shm, shm)) {
		/* made by another uid under a shared USB4V_SIM_DIR? trust it */
		snprintf(shm, sizeof(shm), "%s", info.shm);
	}
	seg = u4l_sim_destroy(shm);
	dir = cable_remove(&st, name);
	state_dir_unlock(&st, true);

	if (seg == -ENOENT && dir == -ENOENT)
		fail(EXIT_MISUSE, "no such cable '%s' (see '%s list')", name,
		     prog);
	if (seg && seg != -ENOENT)
		fail(1, "removing segment %s: %s", shm, strerror(-seg));
	if (dir && dir != -ENOENT)
		fail(1, "removing cable directory of '%s': %s", name,
		     strerror(-dir));
	return 0;
}

static int cmd_set(int argc, char **argv)
{
	struct state_dir st;
	struct cable_info info;
	struct u4l_sim_config cfg;
	struct opts o;
	const char *name;
	int ret;

	parse_opts("set", argc, argv, 2, M(O_NAME) | LIVE_OPTS, false, &o);
	name = opt_name_value(&o);
	if (!(o.given & LIVE_OPTS))
		misuse("set: nothing to change (give --rate, --ring-rate, "
		       "--latency or a fault option)");
	resolve_state(&st);
	need_cable(&st, name, &info);
	need_segment(&info, &cfg);
	apply_opts(&o, &cfg);
	ret = u4l_sim_reconfigure(info.shm, &cfg);
	if (ret == -EINVAL)
		fail(EXIT_MISUSE, "the cable rejected this configuration");
	if (ret)
		fail(1, "reconfiguring '%s': %s", name, strerror(-ret));
	return 0;
}

/* ---- stat / list ---- */

static const struct {
	const char *name;
	size_t off;
} counter_fields[] = {
#define C(f) {#f, offsetof(struct u4l_counters, f)}
	C(tx_frames),	     C(tx_bytes),	 C(rx_frames),
	C(rx_bytes),	     C(fault_drop),	 C(fault_dup),
	C(fault_reorder),    C(fault_crc),	 C(fault_stranded),
	C(rx_overflow),	     C(retransmits),	 C(dup_acks),
	C(stranded_rescues), C(rnr_naks_sent),	 C(rnr_naks_rcvd),
	C(seq_naks_sent),    C(seq_naks_rcvd),	 C(dup_frames_rcvd),
	C(crc_discards),     C(bad_frames),	 C(ooo_frames),
	C(lanes_opened),     C(lanes_short),	 C(lane_waits),
	C(lane_late),
#undef C
};
_Static_assert(sizeof(counter_fields) / sizeof(counter_fields[0]) ==
		       sizeof(struct u4l_counters) / sizeof(uint64_t),
	       "every u4l_counters field is printed");

static void print_config(const struct u4l_sim_config *cfg)
{
	printf("config:\n");
	if (cfg->rate_bps)
		printf("  rate             %g Gbit/s per direction\n",
		       (double)cfg->rate_bps / 1e9);
	else
		printf("  rate             unthrottled\n");
	if (cfg->ring_rate_bps)
		printf("  ring_rate        %g Gbit/s per ring pair and "
		       "direction\n",
		       (double)cfg->ring_rate_bps / 1e9);
	else
		printf("  ring_rate        as the wire\n");
	printf("  latency          %g us\n", cfg->latency_ns / 1000.0);
	printf("  ring_depth       %u\n", cfg->ring_depth);
	printf("  channels         %u\n", cfg->max_channels);
	printf("  e2e              %s\n", cfg->e2e ? "on" : "off");
	printf("  seed             %llu\n", (unsigned long long)cfg->seed);
	for (int d = 0; d < 2; d++) {
		const struct u4l_sim_faults *f = &cfg->faults[d];
		printf("  faults end%d->end%d drop=%g dup=%g reorder=%g crc=%g "
		       "stranded=%g ack_drop=%g\n",
		       d, 1 - d, f->drop, f->dup, f->reorder, f->crc,
		       f->stranded, f->drop_ctrl);
	}
}

static void print_addresses(const struct cable_info *info)
{
	char dev[32], a[16];

	printf("addresses:\n");
	for (unsigned end = 0; end < 2; end++) {
		cable_dev_name(info->index, end, dev, sizeof(dev));
		if (!info->addr[end]) {
			printf("  %-16s none (made by an older usb4v-sim)\n", dev);
			continue;
		}
		cable_addr_string(info->addr[end], a, sizeof(a));
		printf("  %-16s %-15s GID ::ffff:%s\n", dev, a, a);
	}
}

static int cmd_stat(int argc, char **argv)
{
	struct state_dir st;
	struct cable_info info;
	struct u4l_sim_config cfg;
	struct u4l_counters c[2];
	struct opts o;
	char d0[32], d1[32];
	const char *name;
	int ret;

	parse_opts("stat", argc, argv, 2, M(O_NAME), false, &o);
	name = opt_name_value(&o);
	resolve_state(&st);
	need_cable(&st, name, &info);
	need_segment(&info, &cfg);
	ret = u4l_sim_stat(info.shm, c);
	if (ret)
		fail(1, "reading counters of '%s': %s", name, strerror(-ret));

	cable_dev_name(info.index, 0, d0, sizeof(d0));
	cable_dev_name(info.index, 1, d1, sizeof(d1));
	printf("cable %s: %s (end 0) <-> %s (end 1), segment %s\n", info.name,
	       d0, d1, info.shm);
	print_addresses(&info);
	print_config(&cfg);
	printf("counters:          %20s %20s\n", d0, d1);
	for (size_t i = 0; i < sizeof(counter_fields) / sizeof(counter_fields[0]);
	     i++) {
		uint64_t a, b;
		memcpy(&a, (const char *)&c[0] + counter_fields[i].off, sizeof(a));
		memcpy(&b, (const char *)&c[1] + counter_fields[i].off, sizeof(b));
		printf("  %-16s %20llu %20llu\n", counter_fields[i].name,
		       (unsigned long long)a, (unsigned long long)b);
	}
	return 0;
}

static void list_one(const struct cable_info *info, void *arg)
{
	struct u4l_sim_config cfg;
	char d0[32], d1[32];
	int *count = arg;

	cable_dev_name(info->index, 0, d0, sizeof(d0));
	cable_dev_name(info->index, 1, d1, sizeof(d1));
	if (!*count)
		printf("%-32s %-12s %-12s %s\n", "NAME", "END0", "END1", "SEGMENT");
	(*count)++;
	printf("%-32s %-12s %-12s %s%s\n", info->name, d0, d1, info->shm,
	       u4l_sim_read_config(info->shm, &cfg) ? " (stale: segment missing)"
						    : "");
}

static int cmd_list(int argc, char **argv)
{
	struct state_dir st;
	struct opts o;
	int count = 0, ret;

	parse_opts("list", argc, argv, 2, 0, false, &o);
	resolve_state(&st);
	ret = cable_list(&st, list_one, &count);
	if (ret < 0)
		fail(1, "reading %s: %s", st.path, strerror(-ret));
	return 0;
}

/* ---- exec ---- */

__attribute__((format(printf, 2, 3))) static void ret_asprintf(char **out,
								 const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(out, fmt, ap);
	va_end(ap);
	if (n < 0)
		fail(1, "out of memory");
}

/* RDMAV_DRIVERS: the provider first, then what was already there. */
static void env_add_provider(char *provider)
{
	const char *old = getenv("RDMAV_DRIVERS");
	char *val = provider;

	if (old && *old)
		ret_asprintf(&val, "%s:%s", provider, old);
	if (setenv("RDMAV_DRIVERS", val, 1))
		fail(1, "setenv: %s", strerror(errno));
}

/*
 * LD_PRELOAD: the shim first (after a sanitizer runtime, which insists on
 * coming first; interposition chains through it either way), unless it is
 * there already.
 */
static void env_add_shim(char *shim)
{
	const char *old = getenv("LD_PRELOAD");
	char *val = shim;

	if (old && *old && !strstr(old, shim)) {
		size_t first = strcspn(old, ": ");
		char head[PATH_MAX];

		snprintf(head, sizeof(head), "%.*s", (int)first, old);
		if (strstr(head, "san.so") || strstr(head, "san-"))
			ret_asprintf(&val, "%.*s:%s%s", (int)first, old, shim,
				     old + first);
		else
			ret_asprintf(&val, "%s:%s", shim, old);
	} else if (old && *old) {
		val = (char *)old;
	}
	if (setenv("LD_PRELOAD", val, 1))
		fail(1, "setenv: %s", strerror(errno));
}

/* The provider and the shim this exec loads, or a clear failure. */
static void find_provider_and_shim(char *provider, char *shim)
{
	if (!u4vs_find_provider(provider, PATH_MAX))
		fail(1,
		     "cannot find the usb4verbs provider (" PROVIDER_BASE
		     "%s) next to %s or under " U4V_INSTALL_LIBDIR
		     "/{usb4verbs,libibverbs}; set USB4V_PROVIDER_PATH",
		     U4V_PROVIDER_SUFFIX, prog);
	if (!u4vs_find_shim(shim, PATH_MAX))
		fail(1,
		     "cannot find " SHIM_FILE
		     " next to %s or under " U4V_INSTALL_LIBDIR
		     "/usb4verbs; set USB4V_SHIM_PATH",
		     prog);
}

static int cmd_exec(int argc, char **argv)
{
	struct state_dir st;
	struct cable_info info;
	struct u4l_sim_config cfg;
	struct opts o;
	char sysfs[CABLE_PATH_MAX], provider[PATH_MAX], shim[PATH_MAX];
	const char *name;
	int end = CABLE_BOTH_ENDS, e;
	struct stat sb;

	parse_opts("exec", argc, argv, 2, M(O_NAME) | M(O_END), true, &o);
	name = opt_name_value(&o);
	if (o.given & M(O_END))
		end = (int)parse_uint("end", o.val[O_END], 0, 1);
	if (o.cmd_index >= argc)
		misuse("exec: no command after '--'");
	resolve_state(&st);
	need_cable(&st, name, &info);
	need_segment(&info, &cfg);
	if (cable_sysfs_path(&st, name, end, sysfs, sizeof(sysfs)) ||
	    stat(sysfs, &sb) || !S_ISDIR(sb.st_mode))
		fail(1, "cable '%s' has no sysfs tree at %s", name, sysfs);
	if (strlen(sysfs) > 200)
		fail(1, "state directory path %s is too long for libibverbs "
			"(set USB4V_SIM_DIR to a shorter path)", st.path);
	find_provider_and_shim(provider, shim);

	if (setenv("SYSFS_PATH", sysfs, 1) || setenv("USB4V_SIM_CABLE", name, 1))
		fail(1, "setenv: %s", strerror(errno));
	env_add_provider(provider);
	env_add_shim(shim);

	fflush(NULL);
	execvp(argv[o.cmd_index], &argv[o.cmd_index]);
	e = errno;
	fprintf(stderr, "%s: exec %s: %s\n", prog, argv[o.cmd_index],
		strerror(e));
	return e == ENOENT ? 127 : 126;
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return EXIT_MISUSE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(cmd, "--version")) {
		printf("usb4v-sim %s\n", USB4V_VERSION);
		return 0;
	}
	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
	}
	if (!strcmp(cmd, "up"))
		return cmd_up(argc, argv);
	if (!strcmp(cmd, "down"))
		return cmd_down(argc, argv);
	if (!strcmp(cmd, "set"))
		return cmd_set(argc, argv);
	if (!strcmp(cmd, "stat"))
		return cmd_stat(argc, argv);
	if (!strcmp(cmd, "list"))
		return cmd_list(argc, argv);
	if (!strcmp(cmd, "exec"))
		return cmd_exec(argc, argv);
	if (!strcmp(cmd, "gc"))
		return usb4v_sim_gc(prog, argc, argv);
	misuse("unknown command '%s'", cmd);
}

// SPDX-License-Identifier: MIT
/*
 * soak: a long verified run over a faulty software cable.
 *
 *   soak [--messages N] [--qps Q] [--drop P] [--stranded P] [--seed S]
 *        [--max-len BYTES]
 *
 * Defaults: 1,000,000 messages of mixed sizes (24 B .. 64 KiB, log-uniform)
 * and opcodes (SEND, SEND_WITH_IMM, RDMA WRITE, RDMA WRITE_WITH_IMM, RDMA
 * READ, FETCH_AND_ADD) across 4 RC QPs, 1e-3 frame drop and 1/280 stranded
 * frames in both directions. Every message carries a sequence number and a
 * checksum that the target verifies (tests/common/u4vt_traffic.h). Prints
 * the counts and exits 0 only with zero lost, duplicated, corrupt or failed
 * completions.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <usb4verbs/engine.h>
#include <usb4verbs/sim.h>

#include "u4vt.h"
#include "u4vt_traffic.h"

static int open_end(const char *shm, uint32_t end, struct u4v_ctx **ctx,
		    struct u4v_pd **pd)
{
	struct u4v_ctx_attr attr = { 0 };
	struct u4l_dev *link;
	int ret = u4l_sim_open(shm, end, &link);

	if (ret)
		return -ret;
	attr.link = link;
	attr.node_guid = 0x5000 + end;
	attr.async_event_fd = -1;
	if ((ret = u4v_ctx_open(&attr, ctx)))
		return ret;
	return u4v_alloc_pd(*ctx, pd);
}

struct soak_opts {
	struct tr_cfg tc;
	double drop, stranded; /* fault rates, both directions */
};

/* 0, or 2 after a usage message. */
static int parse_args(int argc, char **argv, struct soak_opts *o)
{
	struct tr_cfg *tc = &o->tc;
	int i;

	tr_cfg_default(tc);
	tc->nqp = 4;
	tc->messages = 1000000;
	tc->max_len = 65536;
	tc->window = 32;
	tc->timeout = 12;
	tc->timeout_ms = 3600 * 1000;
	tc->seed = 1;
	o->drop = 1e-3;
	o->stranded = 1.0 / 280;
	for (i = 1; i < argc; i += 2) { /* every option takes a value */
		const char *v = i + 1 < argc ? argv[i + 1] : "0";

		if (!strcmp(argv[i], "--messages"))
			tc->messages = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--qps"))
			tc->nqp = atoi(v);
		else if (!strcmp(argv[i], "--drop"))
			o->drop = atof(v);
		else if (!strcmp(argv[i], "--stranded"))
			o->stranded = atof(v);
		else if (!strcmp(argv[i], "--seed"))
			tc->seed = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--max-len"))
			tc->max_len = (uint32_t)strtoul(v, NULL, 0);
		else {
			fprintf(stderr, "usage: %s [--messages N] [--qps Q] "
				"[--drop P] [--stranded P] [--seed S] "
				"[--max-len B]\n", argv[0]);
			return 2;
		}
	}
	tc->progress_report = tc->messages >= 100000 ? 100000 : 0;
	return 0;
}

/* The faulty cable: 0 or a negative errno. */
static int make_cable(const char *shm, const struct soak_opts *o)
{
	struct u4l_sim_config sc;
	int d;

	u4vt_cable_config(&sc);
	sc.seed = o->tc.seed;
	for (d = 0; d < 2; d++) {
		sc.faults[d].drop = o->drop;
		sc.faults[d].stranded = o->stranded;
	}
	u4l_sim_destroy(shm);
	return u4l_sim_create(shm, &sc);
}

static void print_result(int ret, const struct tr_result *r,
			 const struct u4l_counters c[2])
{
	printf("soak: %s in %.1f s: %llu completed, %llu received, %llu "
	       "verified, %.1f MiB\n", ret ? "FAILED" : "ok", r->secs,
	       (unsigned long long)r->completed,
	       (unsigned long long)r->received,
	       (unsigned long long)r->verified, r->bytes / 1048576.0);
	printf("soak: lost %llu, duplicated %llu, corrupt %llu, misordered "
	       "%llu, error completions %llu%s\n", (unsigned long long)r->lost,
	       (unsigned long long)r->dup, (unsigned long long)r->corrupt,
	       (unsigned long long)r->misordered,
	       (unsigned long long)r->bad_status,
	       r->timed_out ? ", TIMED OUT" : "");
	printf("soak: frames %llu, dropped %llu, stranded %llu (rescued "
	       "%llu), retransmits %llu, seq NAKs %llu, duplicate frames "
	       "%llu\n",
	       (unsigned long long)(c[0].tx_frames + c[1].tx_frames),
	       (unsigned long long)(c[0].fault_drop + c[1].fault_drop),
	       (unsigned long long)(c[0].fault_stranded + c[1].fault_stranded),
	       (unsigned long long)(c[0].stranded_rescues +
				    c[1].stranded_rescues),
	       (unsigned long long)(c[0].retransmits + c[1].retransmits),
	       (unsigned long long)(c[0].seq_naks_sent + c[1].seq_naks_sent),
	       (unsigned long long)(c[0].dup_frames_rcvd +
				    c[1].dup_frames_rcvd));
	if (r->msg[0])
		printf("soak: first problem: %s\n", r->msg);
}

int main(int argc, char **argv)
{
	struct soak_opts o;
	struct u4l_counters c[2];
	struct tr_result r;
	struct u4v_ctx *ca, *cb;
	struct u4v_pd *pa, *pb;
	char shm[64];
	int ret;

	if ((ret = parse_args(argc, argv, &o)))
		return ret;
	snprintf(shm, sizeof(shm), "/u4v-soak-%d", (int)getpid());
	if ((ret = make_cable(shm, &o))) {
		fprintf(stderr, "soak: cable: %s\n", strerror(-ret));
		return 1;
	}
	if ((ret = open_end(shm, 0, &ca, &pa)) ||
	    (ret = open_end(shm, 1, &cb, &pb))) {
		fprintf(stderr, "soak: context: %s\n", strerror(ret));
		u4l_sim_destroy(shm);
		return 1;
	}
	printf("soak: %llu messages, %d QPs, 24..%u B, drop %g, stranded %g, "
	       "seed %llu\n", (unsigned long long)o.tc.messages, o.tc.nqp,
	       o.tc.max_len, o.drop, o.stranded,
	       (unsigned long long)o.tc.seed);
	fflush(stdout);
	ret = tr_run(&o.tc, ca, pa, cb, pb, &r);
	u4l_sim_stat(shm, c);
	print_result(ret, &r, c);
	u4v_dealloc_pd(pa);
	u4v_dealloc_pd(pb);
	u4v_ctx_close(ca);
	u4v_ctx_close(cb);
	u4l_sim_destroy(shm);
	return ret ? 1 : 0;
}

/* SPDX-License-Identifier: MIT */
/*
 * Software cable: the shared segment. Creation, validation and mapping,
 * the control-plane lock, live reconfiguration, counters snapshot, the
 * fault PRNG, and releasing the memory of freed channels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sim_int.h"

void u4l_sim_config_default(struct u4l_sim_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->rate_bps = 20000000000ull;
	cfg->latency_ns = 1000;
	cfg->ring_depth = 256;
	cfg->max_channels = 16;
	cfg->e2e = 1;
	cfg->seed = 0x5eed;
}

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

void sim_geom_init(struct sim_geom *g, uint32_t depth, uint32_t max_channels)
{
	uint64_t meta =
	    (uint64_t)depth * (2 * sizeof(struct sim_desc) +
			       sizeof(struct sim_meta) + sizeof(uint64_t));

	memset(g, 0, sizeof(*g)); /* padding too: geometries are memcmp()ed */
	g->depth = depth;
	g->max_channels = max_channels;
	g->nslots = max_channels + SIM_LOOP_CHANNELS;
	g->dir_size = round_up(meta, SIM_PAGE) + SIM_PAGE /* held */ +
		      2ull * depth * U4L_FRAME_MAX;
	g->chan_off = round_up(sizeof(struct sim_seg), SIM_PAGE);
	g->chan_stride = SIM_PAGE + 2 * g->dir_size;
	g->seg_size = g->chan_off + (uint64_t)g->nslots * g->chan_stride;
}

static bool prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0;
} /* NaN fails */

static int validate_live(const struct u4l_sim_config *cfg)
{
	for (int e = 0; e < 2; e++) {
		const struct u4l_sim_faults *f = &cfg->faults[e];
		if (!prob_ok(f->drop) || !prob_ok(f->dup) ||
		    !prob_ok(f->reorder) || !prob_ok(f->crc) ||
		    !prob_ok(f->stranded) || !prob_ok(f->drop_ctrl))
			return -EINVAL;
	}
	return 0;
}

static bool geometry_ok(uint32_t depth, uint32_t max_channels)
{
	return depth >= SIM_MIN_DEPTH && depth <= SIM_MAX_DEPTH &&
	       !(depth & (depth - 1)) && max_channels <= SIM_MAX_CHANNELS;
}

static int validate_cfg(const struct u4l_sim_config *cfg)
{
	if (!geometry_ok(cfg->ring_depth, cfg->max_channels))
		return -EINVAL;
	return validate_live(cfg);
}

static void wire_seed(struct sim_seg *s, uint64_t seed)
{
	__atomic_store_n(&s->wire[0].prng, seed, __ATOMIC_RELAXED);
	__atomic_store_n(&s->wire[1].prng, seed ^ 0xa5a5a5a5deadbeefull,
			 __ATOMIC_RELAXED);
}

uint64_t sim_rand(struct sim_seg *s, uint32_t end)
{
	uint64_t z = __atomic_add_fetch(
	    &s->wire[end & 1].prng, 0x9e3779b97f4a7c15ull, __ATOMIC_RELAXED);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int u4l_sim_create(const char *shm_name, const struct u4l_sim_config *cfg)
{
	struct u4l_sim_config def;
	struct sim_geom g;
	struct sim_seg *s;
	int fd, rc;

	if (!shm_name)
		return -EINVAL;
	if (!cfg) {
		u4l_sim_config_default(&def);
		cfg = &def;
	}
	rc = validate_cfg(cfg);
	if (rc)
		return rc;
	sim_geom_init(&g, cfg->ring_depth, cfg->max_channels);

	fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)g.seg_size) < 0) {
		rc = -errno;
		goto fail;
	}
	s = mmap(NULL, g.chan_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	memset(s, 0, g.chan_off);
	s->version = SIM_VERSION;
	s->hdr_size = sizeof(struct sim_seg);
	s->seg_size = g.seg_size;
	s->chan_off = g.chan_off;
	s->chan_stride = g.chan_stride;
	s->dir_size = g.dir_size;
	s->ring_depth = g.depth;
	s->max_channels = g.max_channels;
	s->nslots = g.nslots;
	s->cfg = *cfg;
	s->cfg.e2e = !!cfg->e2e;
	wire_seed(s, cfg->seed);
	/* Published last: an opener racing with us sees a bad magic. */
	__atomic_store_n(&s->magic, SIM_MAGIC, __ATOMIC_RELEASE);
	munmap(s, g.chan_off);
	close(fd);
	return 0;
fail:
	close(fd);
	shm_unlink(shm_name);
	return rc;
}

int u4l_sim_destroy(const char *shm_name)
{
	if (!shm_name)
		return -EINVAL;
	return shm_unlink(shm_name) < 0 ? -errno : 0;
}

/*
 * Read the header once into private memory and check it: bad magic is
 * -EINVAL, another layout version -EPROTO, inconsistent geometry -EINVAL.
 */
static int check_header(struct sim_seg *s, uint64_t file_size,
			struct sim_geom *g)
{
	uint32_t version = SIM_ONCE(s->version), hdr = SIM_ONCE(s->hdr_size);
	uint32_t depth = SIM_ONCE(s->ring_depth);
	uint32_t max_channels = SIM_ONCE(s->max_channels);

	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != SIM_MAGIC)
		return -EINVAL;
	if (version != SIM_VERSION || hdr != sizeof(struct sim_seg))
		return -EPROTO;
	if (!geometry_ok(depth, max_channels))
		return -EINVAL;
	sim_geom_init(g, depth, max_channels);
	if (SIM_ONCE(s->nslots) != g->nslots ||
	    SIM_ONCE(s->chan_off) != g->chan_off ||
	    SIM_ONCE(s->chan_stride) != g->chan_stride ||
	    SIM_ONCE(s->dir_size) != g->dir_size ||
	    SIM_ONCE(s->seg_size) != g->seg_size || file_size != g->seg_size)
		return -EINVAL;
	return 0;
}

/*
 * Open and validate a segment. whole=false maps the header only (config,
 * counters, contexts). Never trusts the file: the geometry in m->g is what
 * was validated, and nothing reads the header's copy again.
 */
int sim_map(const char *shm_name, bool whole, struct sim_map *m)
{
	uint64_t hdr_len = round_up(sizeof(struct sim_seg), SIM_PAGE);
	struct sim_geom again;
	struct sim_seg *s;
	struct stat st;
	int fd, rc = 0;

	if (!shm_name)
		return -EINVAL;
	fd = shm_open(shm_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		rc = -errno;
		goto out_fd;
	}
	if ((uint64_t)st.st_size < hdr_len) {
		rc = -EINVAL;
		goto out_fd;
	}
	s = mmap(NULL, hdr_len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		rc = -errno;
		goto out_fd;
	}
	rc = check_header(s, (uint64_t)st.st_size, &m->g);
	if (rc)
		goto out_map;
	if (whole) {
		munmap(s, hdr_len);
		s = mmap(NULL, m->g.seg_size, PROT_READ | PROT_WRITE,
			 MAP_SHARED, fd, 0);
		if (s == MAP_FAILED) {
			rc = -errno;
			goto out_fd;
		}
		hdr_len = m->g.seg_size;
		/* The file may have been replaced in between. */
		rc = check_header(s, (uint64_t)st.st_size, &again);
		if (!rc && memcmp(&again, &m->g, sizeof(again)))
			rc = -EINVAL;
		if (rc)
			goto out_map;
	}
	m->fd = fd;
	m->seg = s;
	m->len = hdr_len;
	return 0;
out_map:
	munmap(s, hdr_len);
out_fd:
	close(fd);
	return rc;
}

void sim_unmap(struct sim_map *m)
{
	munmap(m->seg, m->len);
	close(m->fd);
}

/* The largest pid Linux hands out (PID_MAX_LIMIT): larger is garbage. */
#define SIM_PID_MAX 4194304u

/* Does process (or thread) id pid exist? One kill(0); garbage is dead. */
bool sim_pid_alive(uint32_t pid)
{
	if (!pid || pid > SIM_PID_MAX)
		return false;
	if (pid == (uint32_t)getpid())
		return true;
	return !(kill((pid_t)pid, 0) < 0 && errno == ESRCH);
}

/* Real time for lock waits, whatever clock the link runs on. */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * The control-plane lock: the holder's tid in a shared word. Not a
 * process-shared pthread mutex, whose state a peer can garble into one
 * that blocks forever or makes glibc abort. A holder that no longer
 * exists (killed, or a scribbled word) is replaced: control-plane updates
 * are small and re-validated by readers. One held by a live other for
 * SIM_LOCK_WAIT_NS fails the operation.
 */
int sim_lock(struct sim_seg *s)
{
	uint32_t me = (uint32_t)gettid(), owner;
	uint64_t deadline = 0, now;
	unsigned int tries = 0;

	for (;;) {
		owner = 0;
		if (__atomic_compare_exchange_n(&s->lock, &owner, me, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		if (owner != me && !sim_pid_alive(owner) &&
		    __atomic_compare_exchange_n(&s->lock, &owner, me, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
		if (++tries < 64) {
			sched_yield();
			continue;
		}
		now = mono_ns();
		if (!deadline)
			deadline = now + SIM_LOCK_WAIT_NS;
		else if (now >= deadline)
			return -ETIMEDOUT;
		usleep(50);
	}
}

void sim_unlock(struct sim_seg *s)
{
	uint32_t me = (uint32_t)gettid();

	/* not ours any more (replaced, or scribbled): leave it */
	__atomic_compare_exchange_n(&s->lock, &me, 0, false, __ATOMIC_RELEASE,
				    __ATOMIC_RELAXED);
}

int u4l_sim_reconfigure(const char *shm_name, const struct u4l_sim_config *cfg)
{
	struct sim_map m;
	struct sim_seg *s;
	int rc;

	if (!cfg)
		return -EINVAL;
	rc = validate_live(cfg);
	if (rc)
		return rc;
	rc = sim_map(shm_name, false, &m);
	if (rc)
		return rc;
	s = m.seg;
	rc = sim_lock(s);
	if (!rc) {
		uint32_t seq = __atomic_load_n(&s->cfg_seq, __ATOMIC_RELAXED);
		seq |= 1; /* odd: readers retry (also repairs a dead writer) */
		__atomic_store_n(&s->cfg_seq, seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		s->cfg.rate_bps = cfg->rate_bps;
		s->cfg.ring_rate_bps = cfg->ring_rate_bps;
		s->cfg.latency_ns = cfg->latency_ns;
		s->cfg.e2e = !!cfg->e2e;
		memcpy(s->cfg.faults, cfg->faults, sizeof(s->cfg.faults));
		if (s->cfg.seed != cfg->seed) {
			s->cfg.seed = cfg->seed;
			wire_seed(s, cfg->seed);
		}
		__atomic_store_n(&s->cfg_seq, seq + 1, __ATOMIC_RELEASE);
		sim_unlock(s);
	}
	sim_unmap(&m);
	return rc;
}

/* Reads the config through the seqlock (bounded: a dead writer is survivable).
 */
static void read_cfg(struct sim_seg *s, struct u4l_sim_config *out,
		     uint32_t *seqp)
{
	uint32_t s1 = 0;
	for (int tries = 0; tries < 1000; tries++) {
		s1 = __atomic_load_n(&s->cfg_seq, __ATOMIC_ACQUIRE);
		if (s1 & 1)
			continue;
		memcpy(out, (const void *)&s->cfg, sizeof(*out));
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&s->cfg_seq, __ATOMIC_RELAXED) == s1)
			break;
	}
	if (s1 & 1)
		memcpy(out, (const void *)&s->cfg, sizeof(*out));
	*seqp = s1;
}

int u4l_sim_read_config(const char *shm_name, struct u4l_sim_config *cfg)
{
	struct sim_map m;
	uint32_t seq;
	int rc;

	if (!cfg)
		return -EINVAL;
	rc = sim_map(shm_name, false, &m);
	if (rc)
		return rc;
	read_cfg(m.seg, cfg, &seq);
	cfg->ring_depth = m.g.depth;
	cfg->max_channels = m.g.max_channels;
	sim_unmap(&m);
	return 0;
}

static bool faults_any(const struct u4l_sim_faults *f)
{
	return f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->crc > 0 ||
	       f->stranded > 0 || f->drop_ctrl > 0;
}

/* A probability from the segment: anything out of [0, 1] means none. */
static double prob_checked(double p)
{
	return prob_ok(p) ? p : 0.0;
}

void sim_snap_refresh(struct sim_seg *s, struct sim_snap *snap)
{
	struct u4l_sim_config c;
	uint32_t seq = __atomic_load_n(&s->cfg_seq, __ATOMIC_ACQUIRE);

	if (seq == snap->seq)
		return;
	read_cfg(s, &c, &seq); /* a private copy: checked here */
	snap->rate_bps = c.rate_bps;
	snap->ring_rate_bps = c.ring_rate_bps;
	snap->latency_ns = c.latency_ns;
	snap->e2e = !!c.e2e;
	for (int e = 0; e < 2; e++) {
		struct u4l_sim_faults *f = &snap->faults[e];

		f->drop = prob_checked(c.faults[e].drop);
		f->dup = prob_checked(c.faults[e].dup);
		f->reorder = prob_checked(c.faults[e].reorder);
		f->crc = prob_checked(c.faults[e].crc);
		f->stranded = prob_checked(c.faults[e].stranded);
		f->drop_ctrl = prob_checked(c.faults[e].drop_ctrl);
		snap->any_fault[e] = faults_any(f);
	}
	snap->seq = seq;
}

int u4l_sim_stat(const char *shm_name, struct u4l_counters out[2])
{
	struct sim_map m;
	struct sim_seg *s;
	int rc;

	if (!out)
		return -EINVAL;
	rc = sim_map(shm_name, false, &m);
	if (rc)
		return rc;
	s = m.seg;
	for (int e = 0; e < 2; e++) {
		const uint64_t *src = (const uint64_t *)&s->counters[e];
		uint64_t *dst = (uint64_t *)&out[e];
		for (size_t i = 0; i < sizeof(out[e]) / sizeof(uint64_t); i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
	sim_unmap(&m);
	return 0;
}

/* Give the pages of [off, off+len) back to the system (reads become zero). */
void sim_punch(struct sim_map *m, uint64_t off, uint64_t len)
{
	if (fallocate(m->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) == 0)
		return;
	if (madvise((char *)m->seg + off, len, MADV_REMOVE) == 0)
		return;
	memset((char *)m->seg + off, 0, len); /* last resort: zero it */
}

/* A channel's unit of its budget goes back (segment lock held). */
static void budget_put(struct sim_seg *s, bool loop)
{
	uint32_t *used = loop ? &s->loop_used : &s->cross_used;
	uint32_t n = SIM_ONCE(*used);

	if (n)
		__atomic_store_n(used, n - 1, __ATOMIC_RELAXED);
}

/* Free channel slot idx (segment lock held). Both contexts are woken. */
void sim_chan_free_locked(struct sim_map *m, uint32_t idx)
{
	struct sim_seg *s = m->seg;
	struct sim_chan_ent *e = &s->chans[idx];
	uint32_t gs = SIM_ONCE(e->gs);
	uint32_t a = SIM_ONCE(e->ctx[0]), b = SIM_ONCE(e->ctx[1]);

	if (!(gs & SIM_CHAN_ACTIVE))
		return;
	/* New generation, inactive: every handle on it turns dead. */
	__atomic_store_n(&e->gs, (gs & ~SIM_CHAN_ACTIVE) + 2, __ATOMIC_RELEASE);
	/* an orphan's budget was given back when it was orphaned */
	if (!SIM_ONCE(e->orphan))
		budget_put(s, SIM_ONCE(e->loop));
	__atomic_store_n(&e->accept_pending, 0, __ATOMIC_RELAXED);
	/* Give the rings back; page 0 (control) is reset on reuse. */
	sim_punch(m, sim_slot_off(&m->g, idx) + SIM_PAGE,
		  m->g.chan_stride - SIM_PAGE);
	if (a < U4L_MAX_CTX)
		sim_wake_ctx(s, a);
	if (b < U4L_MAX_CTX && b != a)
		sim_wake_ctx(s, b);
}

/* Free every channel of context ctx (segment lock held). */
void sim_ctx_chans_free_locked(struct sim_map *m, uint32_t ctx)
{
	struct sim_seg *s = m->seg;

	for (uint32_t i = 0; i < m->g.nslots; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		uint32_t a = SIM_ONCE(e->ctx[0]), b = SIM_ONCE(e->ctx[1]);

		if (!(SIM_ONCE(e->gs) & SIM_CHAN_ACTIVE) ||
		    (a != ctx && b != ctx))
			continue;
		uint32_t other = a == ctx ? b : a;
		if (other != ctx && other < U4L_MAX_CTX &&
		    !SIM_ONCE(e->orphan) &&
		    __atomic_load_n(&s->ctx[other].state, __ATOMIC_RELAXED) ==
			SIM_CTX_ALIVE) {
			/* the survivor may still read what reached it */
			__atomic_store_n(&e->accept_pending, 0,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&e->orphan, 1, __ATOMIC_RELEASE);
			/* the tunnel is gone: its budget can serve others */
			budget_put(s, SIM_ONCE(e->loop));
			sim_wake_ctx(s, other);
			continue;
		}
		sim_chan_free_locked(m, i);
	}
}

/* Detach context ctx (< U4L_MAX_CTX) and free its channels (lock held). */
void sim_ctx_free_locked(struct sim_map *m, uint32_t ctx)
{
	struct sim_ctx_slot *x = &m->seg->ctx[ctx];

	sim_ctx_chans_free_locked(m, ctx);
	__atomic_store_n(&x->pid, 0, __ATOMIC_RELAXED);
	__atomic_add_fetch(&x->gen, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&x->state, SIM_CTX_FREE, __ATOMIC_RELEASE);
	sim_wake_ctx(m->seg, ctx);
}

/* SPDX-License-Identifier: MIT */
/*
 * Software cable: the shared segment. Creation, validation and mapping,
 * the control-plane mutex, live reconfiguration, counters snapshot, the
 * fault PRNG, and releasing the memory of freed channels.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
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

uint64_t sim_dir_size(uint32_t depth)
{
	uint64_t meta =
	    (uint64_t)depth * (2 * sizeof(struct sim_desc) +
			       sizeof(struct sim_meta) + sizeof(uint64_t));
	return round_up(meta, SIM_PAGE) + SIM_PAGE /* held */ +
	       2ull * depth * U4L_FRAME_MAX;
}

void sim_layout(uint32_t depth, uint32_t max_channels, uint64_t *chan_off,
		uint64_t *chan_stride, uint64_t *dir_size, uint64_t *seg_size)
{
	*dir_size = sim_dir_size(depth);
	*chan_off = round_up(sizeof(struct sim_seg), SIM_PAGE);
	*chan_stride = SIM_PAGE + 2 * *dir_size;
	*seg_size = *chan_off +
		    (uint64_t)(max_channels + SIM_LOOP_CHANNELS) * *chan_stride;
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

static int validate_cfg(const struct u4l_sim_config *cfg)
{
	uint32_t d = cfg->ring_depth;
	if (d < SIM_MIN_DEPTH || d > SIM_MAX_DEPTH || (d & (d - 1)))
		return -EINVAL;
	if (cfg->max_channels > SIM_MAX_CHANNELS)
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
	uint64_t chan_off, stride, dir_size, seg_size;
	pthread_mutexattr_t ma;
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
	sim_layout(cfg->ring_depth, cfg->max_channels, &chan_off, &stride,
		   &dir_size, &seg_size);

	fd = shm_open(shm_name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)seg_size) < 0) {
		rc = -errno;
		goto fail;
	}
	s = mmap(NULL, chan_off, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (s == MAP_FAILED) {
		rc = -errno;
		goto fail;
	}
	memset(s, 0, chan_off);
	s->version = SIM_VERSION;
	s->hdr_size = sizeof(struct sim_seg);
	s->seg_size = seg_size;
	s->chan_off = chan_off;
	s->chan_stride = stride;
	s->dir_size = dir_size;
	s->ring_depth = cfg->ring_depth;
	s->max_channels = cfg->max_channels;
	s->nslots = cfg->max_channels + SIM_LOOP_CHANNELS;
	s->cfg = *cfg;
	s->cfg.e2e = !!cfg->e2e;
	wire_seed(s, cfg->seed);

	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	rc = -pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	if (rc) {
		munmap(s, chan_off);
		goto fail;
	}
	/* Published last: an opener racing with us sees a bad magic. */
	__atomic_store_n(&s->magic, SIM_MAGIC, __ATOMIC_RELEASE);
	munmap(s, chan_off);
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
 * Open and validate a segment. whole=false maps the header only (config,
 * counters, contexts). Never trusts the file: bad magic is -EINVAL, another
 * layout version -EPROTO, inconsistent geometry -EINVAL.
 */
int sim_map(const char *shm_name, bool whole, int *fdp, struct sim_seg **segp,
	    size_t *lenp)
{
	uint64_t chan_off, stride, dir_size, seg_size, hdr_len;
	struct sim_seg *s;
	struct stat st;
	int fd, rc = 0;

	if (!shm_name)
		return -EINVAL;
	fd = shm_open(shm_name, O_RDWR | O_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	hdr_len = round_up(sizeof(struct sim_seg), SIM_PAGE);
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
	if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != SIM_MAGIC) {
		rc = -EINVAL;
		goto out_map;
	}
	if (s->version != SIM_VERSION ||
	    s->hdr_size != sizeof(struct sim_seg)) {
		rc = -EPROTO;
		goto out_map;
	}
	uint32_t d = s->ring_depth;
	if (d < SIM_MIN_DEPTH || d > SIM_MAX_DEPTH || (d & (d - 1)) ||
	    s->max_channels > SIM_MAX_CHANNELS ||
	    s->nslots != s->max_channels + SIM_LOOP_CHANNELS) {
		rc = -EINVAL;
		goto out_map;
	}
	sim_layout(d, s->max_channels, &chan_off, &stride, &dir_size,
		   &seg_size);
	if (s->chan_off != chan_off || s->chan_stride != stride ||
	    s->dir_size != dir_size || s->seg_size != seg_size ||
	    (uint64_t)st.st_size != seg_size) {
		rc = -EINVAL;
		goto out_map;
	}
	if (whole) {
		munmap(s, hdr_len);
		s = mmap(NULL, seg_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd,
			 0);
		if (s == MAP_FAILED) {
			rc = -errno;
			goto out_fd;
		}
		hdr_len = seg_size;
		/* Re-check: the file may have been replaced in between. */
		if (__atomic_load_n(&s->magic, __ATOMIC_ACQUIRE) != SIM_MAGIC ||
		    s->seg_size != seg_size || s->ring_depth != d) {
			rc = -EINVAL;
			goto out_map;
		}
	}
	*fdp = fd;
	*segp = s;
	*lenp = hdr_len;
	return 0;
out_map:
	munmap(s, hdr_len);
out_fd:
	close(fd);
	return rc;
}

int sim_lock(struct sim_seg *s)
{
	int rc = pthread_mutex_lock(&s->lock);
	if (rc == EOWNERDEAD) {
		/*
		 * A process died holding the lock. Control-plane updates are
		 * small and re-validated by readers; carry on.
		 */
		pthread_mutex_consistent(&s->lock);
		rc = 0;
	}
	return -rc;
}

void sim_unlock(struct sim_seg *s)
{
	pthread_mutex_unlock(&s->lock);
}

int u4l_sim_reconfigure(const char *shm_name, const struct u4l_sim_config *cfg)
{
	struct sim_seg *s;
	size_t len;
	int fd, rc;

	if (!cfg)
		return -EINVAL;
	rc = validate_live(cfg);
	if (rc)
		return rc;
	rc = sim_map(shm_name, false, &fd, &s, &len);
	if (rc)
		return rc;
	rc = sim_lock(s);
	if (!rc) {
		uint32_t seq = __atomic_load_n(&s->cfg_seq, __ATOMIC_RELAXED);
		seq |= 1; /* odd: readers retry (also repairs a dead writer) */
		__atomic_store_n(&s->cfg_seq, seq, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		s->cfg.rate_bps = cfg->rate_bps;
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
	munmap(s, len);
	close(fd);
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
	struct sim_seg *s;
	uint32_t seq;
	size_t len;
	int fd, rc;

	if (!cfg)
		return -EINVAL;
	rc = sim_map(shm_name, false, &fd, &s, &len);
	if (rc)
		return rc;
	read_cfg(s, cfg, &seq);
	cfg->ring_depth = s->ring_depth;
	cfg->max_channels = s->max_channels;
	munmap(s, len);
	close(fd);
	return 0;
}

static bool faults_any(const struct u4l_sim_faults *f)
{
	return f->drop > 0 || f->dup > 0 || f->reorder > 0 || f->crc > 0 ||
	       f->stranded > 0 || f->drop_ctrl > 0;
}

void sim_snap_refresh(struct sim_seg *s, struct sim_snap *snap)
{
	struct u4l_sim_config c;
	uint32_t seq = __atomic_load_n(&s->cfg_seq, __ATOMIC_ACQUIRE);

	if (seq == snap->seq)
		return;
	read_cfg(s, &c, &seq);
	snap->rate_bps = c.rate_bps;
	snap->latency_ns = c.latency_ns;
	snap->e2e = !!c.e2e;
	for (int e = 0; e < 2; e++) {
		snap->faults[e] = c.faults[e];
		snap->any_fault[e] = faults_any(&c.faults[e]);
	}
	snap->seq = seq;
}

int u4l_sim_stat(const char *shm_name, struct u4l_counters out[2])
{
	struct sim_seg *s;
	size_t len;
	int fd, rc;

	if (!out)
		return -EINVAL;
	rc = sim_map(shm_name, false, &fd, &s, &len);
	if (rc)
		return rc;
	for (int e = 0; e < 2; e++) {
		const uint64_t *src = (const uint64_t *)&s->counters[e];
		uint64_t *dst = (uint64_t *)&out[e];
		for (size_t i = 0; i < sizeof(out[e]) / sizeof(uint64_t); i++)
			dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
	}
	munmap(s, len);
	close(fd);
	return 0;
}

/* Give the pages of [off, off+len) back to the system (reads become zero). */
void sim_punch(int fd, struct sim_seg *s, uint64_t off, uint64_t len)
{
	if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		      (off_t)off, (off_t)len) == 0)
		return;
	if (madvise((char *)s + off, len, MADV_REMOVE) == 0)
		return;
	memset((char *)s + off, 0, len); /* last resort: at least zero it */
}

/* Free channel slot idx (segment lock held). Both contexts are woken. */
void sim_chan_free_locked(int fd, struct sim_seg *s, uint32_t idx)
{
	struct sim_chan_ent *e = &s->chans[idx];
	uint32_t gs = __atomic_load_n(&e->gs, __ATOMIC_RELAXED);
	uint32_t a = e->ctx[0], b = e->ctx[1];

	if (!(gs & SIM_CHAN_ACTIVE))
		return;
	/* New generation, inactive: every handle on it turns dead. */
	__atomic_store_n(&e->gs, (gs & ~SIM_CHAN_ACTIVE) + 2, __ATOMIC_RELEASE);
	if (e->orphan) {
		/* its budget was given back when it was orphaned */
	} else if (e->loop) {
		if (s->loop_used)
			s->loop_used--;
	} else if (s->cross_used) {
		s->cross_used--;
	}
	__atomic_store_n(&e->accept_pending, 0, __ATOMIC_RELAXED);
	/* Give the rings back; page 0 (control) is reset on reuse. */
	sim_punch(fd, s,
		  s->chan_off + (uint64_t)idx * s->chan_stride + SIM_PAGE,
		  s->chan_stride - SIM_PAGE);
	if (a < U4L_MAX_CTX)
		sim_wake_ctx(s, a);
	if (b < U4L_MAX_CTX && b != a)
		sim_wake_ctx(s, b);
}

/* Free every channel of context ctx (segment lock held). */
void sim_ctx_chans_free_locked(int fd, struct sim_seg *s, uint32_t ctx)
{
	for (uint32_t i = 0; i < s->nslots && i < SIM_NSLOTS_MAX; i++) {
		struct sim_chan_ent *e = &s->chans[i];
		if (!(__atomic_load_n(&e->gs, __ATOMIC_RELAXED) &
		      SIM_CHAN_ACTIVE))
			continue;
		if (e->ctx[0] != ctx && e->ctx[1] != ctx)
			continue;
		uint32_t other = e->ctx[0] == ctx ? e->ctx[1] : e->ctx[0];
		if (other != ctx && !e->orphan &&
		    __atomic_load_n(&s->ctx[other].state, __ATOMIC_RELAXED) ==
			SIM_CTX_ALIVE) {
			/* the survivor may still read what reached it */
			__atomic_store_n(&e->accept_pending, 0,
					 __ATOMIC_RELAXED);
			__atomic_store_n(&e->orphan, 1, __ATOMIC_RELEASE);
			/* the tunnel is gone: its budget can serve others */
			if (e->loop) {
				if (s->loop_used)
					s->loop_used--;
			} else if (s->cross_used) {
				s->cross_used--;
			}
			sim_wake_ctx(s, other);
			continue;
		}
		sim_chan_free_locked(fd, s, i);
	}
}

/* Detach context ctx and free its channels (segment lock held). */
void sim_ctx_free_locked(int fd, struct sim_seg *s, uint32_t ctx)
{
	sim_ctx_chans_free_locked(fd, s, ctx);
	s->ctx[ctx].pid = 0;
	s->ctx[ctx].gen++;
	__atomic_store_n(&s->ctx[ctx].state, SIM_CTX_FREE, __ATOMIC_RELEASE);
	sim_wake_ctx(s, ctx);
}

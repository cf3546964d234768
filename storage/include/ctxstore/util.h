/*
 * ctxstore/util.h — the engine's byte buffers, SHA-256 and failpoints, as
 * far as the PostgreSQL side uses them (util/cx_buf.h, util/cx_crypto.h and
 * util/cx_failpoint.h describe them in full).
 *
 * A cx_buf owns its bytes and its failure is sticky: after an allocation
 * failure every append is a no-op and cx_buf_ok() is false.  A cx_rd reads
 * borrowed bytes; reading past the end sets a sticky "bad" flag.
 */
#ifndef CTXSTORE_UTIL_H
#define CTXSTORE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "ctxstore/error.h"

typedef struct cx_buf
{
	uint8_t    *data;
	size_t		len;
	size_t		cap;
	bool		failed;			/* an allocation failed; contents incomplete */
} cx_buf;

void		cx_buf_init(cx_buf *b);
void		cx_buf_free(cx_buf *b);
static inline bool cx_buf_ok(const cx_buf *b) { return !b->failed; }

/*
 * The appends and loads below are inline: encoders and page builders call
 * them once per field and per value, and a call each cost more than the
 * copy.  Only growing the buffer is out of line.
 */

/* Grows b to hold extra more bytes: false (and failed) when it cannot. */
bool		cx_buf_reserve_slow(cx_buf *b, size_t extra);

/* Room for extra more bytes (len <= cap always holds, so no overflow). */
static inline bool
cx_buf_reserve(cx_buf *b, size_t extra)
{
	if (!b->failed && extra <= b->cap - b->len)
		return true;
	return cx_buf_reserve_slow(b, extra);
}

static inline void
cx_buf_put(cx_buf *b, const void *p, size_t n)
{
	if (n == 0 || !cx_buf_reserve(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
}

static inline void
cx_buf_put_u8(cx_buf *b, uint8_t v)
{
	cx_buf_put(b, &v, 1);
}

/* Little-endian stores/loads on raw memory (unaligned-safe); the compiler
 * turns the shifts into one move. */
static inline void
cx_store_u64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline uint64_t
cx_load_u64(const uint8_t *p)
{
	return (uint64_t) p[0] | (uint64_t) p[1] << 8 | (uint64_t) p[2] << 16 |
		(uint64_t) p[3] << 24 | (uint64_t) p[4] << 32 |
		(uint64_t) p[5] << 40 | (uint64_t) p[6] << 48 |
		(uint64_t) p[7] << 56;
}

static inline void
cx_buf_put_u64(cx_buf *b, uint64_t v)
{
	uint8_t		t[8];

	cx_store_u64(t, v);
	cx_buf_put(b, t, 8);
}

typedef struct cx_rd
{
	const uint8_t *p;
	size_t		len;
	size_t		pos;
	bool		bad;			/* read past the end or malformed */
} cx_rd;

void		cx_rd_init(cx_rd *r, const void *p, size_t len);
static inline size_t cx_rd_left(const cx_rd *r) { return r->len - r->pos; }

#define CX_SHA256_LEN 32
#define CX_SHA256_HEX_LEN 64	/* without the NUL */

void		cx_sha256(const void *data, size_t len, uint8_t out[CX_SHA256_LEN]);

/* Lower-case hex of the SHA-256 of data, NUL-terminated. */
void		cx_sha256_hex(const void *data, size_t len,
						  char out[CX_SHA256_HEX_LEN + 1]);

/* Replaces the armed set with spec (NULL or "" disarms all).  CX_ERR_INVALID
 * on a malformed spec, naming the bad item; the armed set is then unchanged. */
cx_code		cx_failpoint_set(const char *spec, cx_err *err);

/*
 * A byte ring of variable-size chunks that may be freed in any order: the
 * writer protocol's request ring lives in one (shared/cx_writer_shmem.c).
 * No locking here: the caller serialises every call on one ring.
 *
 * Chunks are laid out back to back from the oldest live one (tail) to the
 * newest (head); each starts with an 8-byte header (its length, whether it
 * is live) and never wraps: a chunk that would cross the end is preceded by
 * a dead padding chunk that fills the rest.  Freeing a chunk marks it dead
 * and moves the tail past every dead chunk at it, so the space a chunk
 * freed out of order is reused once the chunks before it are freed too.
 */
typedef struct cx_ring
{
	uint64_t	size;			/* bytes of data, a multiple of 8 */
	uint64_t	head;			/* bytes handed out (padding included) */
	uint64_t	tail;			/* bytes reclaimed; head - tail are in use */
	uint8_t		data[];			/* 8-byte aligned */
} cx_ring;

/* Bytes a ring of size bytes of data takes (size rounded down to 8). */
size_t		cx_ring_bytes(uint64_t size);
void		cx_ring_init(cx_ring *r, uint64_t size);
/* A chunk of len bytes: true with *off, where its bytes start in data;
 * false when they do not fit now (or ever: len > cx_ring_max_len()). */
bool		cx_ring_alloc(cx_ring *r, size_t len, uint64_t *off);
/* Frees the chunk at off (as cx_ring_alloc returned it), exactly once. */
void		cx_ring_free(cx_ring *r, uint64_t off);
/* The bytes of the chunk at off (rounded up to 8). */
size_t		cx_ring_len(const cx_ring *r, uint64_t off);
/* The longest chunk an empty ring holds. */
size_t		cx_ring_max_len(const cx_ring *r);
static inline uint64_t cx_ring_used(const cx_ring *r) { return r->head - r->tail; }

/*
 * Task pool: a few threads that run the caller's tasks, so that a caller can
 * keep several slow, independent steps (one store's seal each) in flight and
 * take each outcome as soon as it is there.  At most cx_pool_threads() tasks
 * run at once; the others wait their turn in submission order.  A task's fn
 * runs on a pool thread and must touch nothing the caller's thread uses
 * meanwhile; the pool's threads take no signals.  Submit, wait and destroy
 * are the caller's: call them from one thread.
 */
#define CX_POOL_MAX_THREADS 64

typedef struct cx_pool_task
{
	void		(*fn) (void *arg);
	void	   *arg;
	struct cx_pool_task *next;	/* the pool's while the task is submitted */
} cx_pool_task;

typedef struct cx_pool cx_pool;

/* nthreads 1..CX_POOL_MAX_THREADS (CX_ERR_INVALID otherwise); CX_ERR_LIMIT
 * or CX_ERR_IO when the system refuses a thread (none is left running). */
cx_code		cx_pool_create(int nthreads, cx_pool **out, cx_err *err);
int			cx_pool_threads(const cx_pool *p);
/* Queues t (the caller's until cx_pool_wait hands it back). */
void		cx_pool_submit(cx_pool *p, cx_pool_task *t);
/* Tasks submitted and not handed back yet. */
int			cx_pool_outstanding(cx_pool *p);
/* A finished task, in the order they finished; NULL when none finished
 * within timeout_ms (at once when nothing is outstanding). */
cx_pool_task *cx_pool_wait(cx_pool *p, long timeout_ms);
/* Runs what is queued, joins the threads and frees p (NULL: nothing). */
void		cx_pool_destroy(cx_pool *p);

#endif							/* CTXSTORE_UTIL_H */

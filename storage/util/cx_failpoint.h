/*
 * cx_failpoint.h — named failpoints for crash and fault tests.
 *
 * A failpoint is a named step of a protocol (CX_FAILPOINT("seal.after_commit",
 * err)) where a test can make the process die as under kill -9, or make the
 * step fail with an injected error.  Nothing fires unless armed; unarmed, a
 * failpoint costs one relaxed load of a global flag.
 *
 * Arming, from either source (the later one replaces the whole set):
 *   - the environment variable CTXSTORE_FAILPOINTS, read once, on the first
 *     failpoint reached (so a child process forked by a test, or a server
 *     started with it, is armed from its start);
 *   - cx_failpoint_set(spec) (the PostgreSQL side exposes it as a
 *     superuser-only GUC).
 *
 * A spec is a comma-separated list of "name=action" with action one of
 *   crash      raise(SIGKILL): the process dies at once, nothing is flushed
 *   error      the step fails with CX_ERR_IO "failpoint <name>"
 *   eacces, eperm, enospc, erofs
 *              at an errno failpoint (CX_FAILPOINT_ERRNO), the system call
 *              it stands before fails with that errno; elsewhere as error
 *   delay:MS   the process sleeps MS milliseconds (1-60000), then the step
 *              goes on as if nothing was armed: a slow step, for tests of
 *              what waits on it
 * optionally followed by "@N": fire only on the Nth time the failpoint is
 * reached (counting from when it was armed), e.g. "seal.after_fragment=crash@3".
 * Spaces around items are ignored; an empty spec disarms everything; a name
 * given twice keeps its last action.  Names are [a-z0-9_.]; a name no code
 * uses simply never fires (cx_failpoint_hits lets a test check that its
 * failpoint was reached).  A malformed CTXSTORE_FAILPOINTS makes every
 * failpoint fail with CX_ERR_INVALID naming the problem, until
 * cx_failpoint_set() replaces it: a crash test whose failpoints silently did
 * nothing would pass for the wrong reason.
 *
 * Failpoint names (each is reached after the step it names has completed):
 *
 *   append.after_wal         cx_sw_append(seal = false): the WAL entry is
 *                            durable, the rows are not in the memtable yet
 *   seal.after_fragment      seal: the generation fragment is uploaded, the
 *                            shard manifest listing it is not committed
 *   seal.after_commit        seal: the shard manifest listing the new
 *                            generation is committed, the memtable not yet
 *                            cleared
 *   claim.after_register     cx_sw_open: the shard is registered in the base
 *                            manifest (reached also when it already was); no
 *                            claim yet
 *   claim.after_commit       cx_sw_open: the claim (epoch + 1) is committed;
 *                            no fence or replay yet
 *   claim.after_fence        cx_sw_open: the fence marker is at the WAL tip,
 *                            nothing replayed yet
 *   claim.after_replay       cx_sw_open: the replayed rows are uploaded as a
 *                            generation fragment, the shard manifest listing
 *                            it is not committed
 *   drain.before_commit      cx_sw_drain_through: merged generations found, the shard
 *                            manifest without them is not committed
 *   drain.after_commit       cx_sw_drain_through: committed
 *
 * Merge failpoints (merge.*) are documented in cx_merge.h.
 *
 * Compaction (maintenance/cx_compact.c):
 *
 *   compact.after_lease      the lease is taken, nothing read
 *   compact.after_outputs    the outputs are uploaded, the base version
 *                            listing them is not committed
 *   compact.after_commit     the base version is committed, the lease not
 *                            released
 *
 * Errno failpoints (the local backend, cx_objstore_local.c):
 *
 *   local.open_upload        an upload's file is about to be created: the
 *                            open() fails with the armed errno ("error":
 *                            EIO)
 *
 * Errno failpoints elsewhere:
 *
 *   pool.thread_create       cx_pool_create: a thread is about to be
 *                            started: it is refused with the armed errno
 *                            ("error": EIO)
 *
 * Thread-safety: arming and firing are safe from any thread.
 */
#ifndef CX_FAILPOINT_H
#define CX_FAILPOINT_H

#include <stdint.h>

#include "ctxstore/util.h"

#define CX_FAILPOINT_ENV "CTXSTORE_FAILPOINTS"

/* Non-zero while anything may be armed (or the environment is unread). */
extern int	cx_failpoint_active;

/* Slow path of CX_FAILPOINT; returns CX_OK or the injected error. */
cx_code		cx_failpoint_hit(const char *name, cx_err *err);

/*
 * Evaluates to CX_OK, or to the injected error (filled into err), or does not
 * return (crash).  Use: if (CX_FAILPOINT("x.y", err) != CX_OK) return err->code;
 */
#define CX_FAILPOINT(name, err) \
	(__builtin_expect(__atomic_load_n(&cx_failpoint_active, __ATOMIC_RELAXED) != 0, 0) ? \
	 cx_failpoint_hit((name), (err)) : CX_OK)

/* Slow path of CX_FAILPOINT_ERRNO. */
int			cx_failpoint_errno_hit(const char *name);

/*
 * For a step that fails with an errno: evaluates to 0, or to the errno the
 * failpoint injects (EIO for "error"), or does not return (crash).  Use:
 * if ((e = CX_FAILPOINT_ERRNO("x.y")) != 0) { errno = e; fd = -1; } else ...
 */
#define CX_FAILPOINT_ERRNO(name) \
	(__builtin_expect(__atomic_load_n(&cx_failpoint_active, __ATOMIC_RELAXED) != 0, 0) ? \
	 cx_failpoint_errno_hit(name) : 0)


/* Times the failpoint was reached while armed (whether or not it fired on
 * that hit); 0 if it is not armed. */
uint64_t	cx_failpoint_hits(const char *name);

#endif							/* CX_FAILPOINT_H */

/*
 * cx_clock.h — the engine's one source of time: the wall clock (commit
 * times, GC's grace and retention, leases), a monotonic clock (how long ago
 * a writer last proved it is current) and sleeping (commit backoff).
 *
 * By default these are the system's clocks.  A test may install hooks that
 * replace all three at once (the deterministic simulation runs the engine
 * on a simulated clock, storage/tests/sim/); the hooks are process-wide and
 * must be installed while no other thread uses the engine.
 */
#ifndef CX_CLOCK_H
#define CX_CLOCK_H

#include <stdint.h>

typedef struct cx_clock_hooks
{
	int64_t		(*now_us) (void);	/* Unix microseconds */
	int64_t		(*mono_us) (void);	/* microseconds from any fixed point */
	void		(*sleep_us) (int64_t us);
} cx_clock_hooks;

/* Installs hooks (every member set), or the system's clocks again (NULL). */
void		cx_clock_set_hooks(const cx_clock_hooks *hooks);

int64_t		cx_clock_now_us(void);
int64_t		cx_clock_mono_us(void);
void		cx_clock_sleep_us(int64_t us);

#endif							/* CX_CLOCK_H */

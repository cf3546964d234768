/*
 * cx_clock.h — the wall clock, as the store records times: Unix epoch
 * microseconds (commit times, leases, GC's ages).
 */
#ifndef CX_CLOCK_H
#define CX_CLOCK_H

#include <stdint.h>

int64_t		cx_clock_now_us(void);

#endif							/* CX_CLOCK_H */

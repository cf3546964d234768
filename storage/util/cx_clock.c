/*
 * cx_clock.c — the wall clock (cx_clock.h).
 */
#include "util/cx_clock.h"

#include <time.h>

int64_t
cx_clock_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

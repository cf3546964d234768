/*
 * cx_clock.c — the engine's clocks and sleeping (cx_clock.h).
 */
#include <errno.h>
#include <stddef.h>
#include <time.h>

#include "util/cx_clock.h"

static int64_t
clock_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t
system_now_us(void)
{
	return clock_us(CLOCK_REALTIME);
}

static int64_t
system_mono_us(void)
{
	return clock_us(CLOCK_MONOTONIC);
}

/* Sleeps the whole time, through signals (which interrupt nanosleep),
 * leaving errno as it was. */
static void
system_sleep_us(int64_t us)
{
	struct timespec left;
	int			saved_errno = errno;

	if (us <= 0)
		return;
	left.tv_sec = us / 1000000;
	left.tv_nsec = (us % 1000000) * 1000;
	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
	errno = saved_errno;
}

static const cx_clock_hooks system_clock = {
	system_now_us, system_mono_us, system_sleep_us
};

static const cx_clock_hooks *clock_hooks = &system_clock;

void
cx_clock_set_hooks(const cx_clock_hooks *hooks)
{
	clock_hooks = hooks != NULL ? hooks : &system_clock;
}

int64_t
cx_clock_now_us(void)
{
	return clock_hooks->now_us();
}

int64_t
cx_clock_mono_us(void)
{
	return clock_hooks->mono_us();
}

void
cx_clock_sleep_us(int64_t us)
{
	clock_hooks->sleep_us(us);
}

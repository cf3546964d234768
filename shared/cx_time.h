/*
 * cx_time.h — the engine counts time in Unix microseconds (commit times,
 * manifest timestamps), PostgreSQL in microseconds since 2000-01-01: the one
 * conversion between the two.
 */
#ifndef CX_TIME_H
#define CX_TIME_H

#include "postgres.h"

#include "datatype/timestamp.h"

#define CX_UNIX_TO_PG_EPOCH_US \
	((int64) (POSTGRES_EPOCH_JDATE - UNIX_EPOCH_JDATE) * USECS_PER_DAY)

static inline TimestampTz
cx_timestamptz_from_unix_us(int64 us)
{
	return (TimestampTz) (us - CX_UNIX_TO_PG_EPOCH_US);
}

static inline int64
cx_unix_us_from_timestamptz(TimestampTz t)
{
	return (int64) t + CX_UNIX_TO_PG_EPOCH_US;
}

#endif							/* CX_TIME_H */

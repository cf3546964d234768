/*
 * cx_avro_container.h — Avro object container files read block by block,
 * each checked before libavro decodes it (cx_avro_container.c says what
 * is checked).
 */
#ifndef CX_AVRO_CONTAINER_H
#define CX_AVRO_CONTAINER_H

#include <avro.h>

#include "ctxstore/error.h"
#include "util/cx_buf.h"

#define CX_AVRO_MAGIC "Obj\x01"
#define CX_AVRO_MAGIC_LEN 4
#define CX_AVRO_SYNC_LEN 16

/*
 * The largest Avro file the engine reads (a manifest or manifest list it
 * wrote: about 200 bytes an entry, so over a million data files): anything
 * larger is refused as corrupt rather than walked.
 */
#define CX_ICE_AVRO_MAX_BYTES (256 << 20)

/* A container whose header passed: the writer schema and the next block. */
typedef struct cx_avro_file
{
	avro_schema_t schema;
	const uint8_t *sync;
	const uint8_t *next;
	const uint8_t *end;
} cx_avro_file;

/* One block whose values were all walked: count objects in data[len]. */
typedef struct cx_avro_block
{
	const uint8_t *data;
	size_t		len;
	int64_t		count;
} cx_avro_block;

/* Checks data's header, whose avro.schema must be one of the nknown schema
 * texts known (then parsed); CX_ERR_CORRUPT naming name.  cx_avro_close
 * frees f whatever the outcome. */
cx_code		cx_avro_open(const cx_buf *data, const char *name,
						 const char *const *known, int nknown,
						 cx_avro_file *f, cx_err *err);
/* The next block, checked (b->data NULL after the last). */
cx_code		cx_avro_next_block(cx_avro_file *f, const char *name,
							   cx_avro_block *b, cx_err *err);
void		cx_avro_close(cx_avro_file *f);

#endif

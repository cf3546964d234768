/*
 * cx_xml.h — just enough XML reading for object-store listing and error
 * responses (S3 ListBucketResult, Azure EnumerationResults, <Error><Code>).
 *
 * A cx_xml is a cursor over a span [p, end) of a document.  cx_xml_next()
 * finds the next element of a given name inside the span, at any depth, and
 * returns a cursor over its content; cx_xml_text() decodes that content's
 * character data (the five predefined entities, numeric character references
 * and CDATA sections).  That is all these responses need, and it is not a
 * general parser: attributes are skipped, an element must not contain
 * another element of its own name, and comments are not skipped.  Nothing is
 * ever expanded beyond the document's own bytes (no DTD, no entity
 * definitions).
 *
 * Cursors borrow the document (which need not be NUL-terminated); it must
 * outlive them.
 */
#ifndef CX_XML_H
#define CX_XML_H

#include <stdbool.h>
#include <stddef.h>

#include "ctxstore/error.h"

typedef struct cx_xml
{
	const char *p;				/* where the next search starts */
	const char *end;			/* end of the span */
} cx_xml;

/* A cursor over doc[0 .. len). */
void		cx_xml_init(cx_xml *x, const char *doc, size_t len);

/* Finds the next element called name at or after the cursor; on success
 * points *inner at its content (empty for <name/>), moves x past the element
 * and returns true.  False if there is none or it is not closed. */
bool		cx_xml_next(cx_xml *x, const char *name, cx_xml *inner);

/* Like cx_xml_next() on a copy of x: the first such element, x unmoved. */
bool		cx_xml_find(const cx_xml *x, const char *name, cx_xml *inner);

/* The decoded text of x's span as a malloc'd string (caller frees).
 * CX_ERR_CORRUPT for a bad reference or a NUL, CX_ERR_NOMEM. */
cx_code		cx_xml_text(const cx_xml *x, char **out, cx_err *err);

/* Decoded text of the first element called name in x, or NULL if absent,
 * malformed or out of memory: for optional fields such as error codes. */
char	   *cx_xml_find_text(const cx_xml *x, const char *name);

#endif							/* CX_XML_H */

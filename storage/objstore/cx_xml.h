/*
 * cx_xml.h — XML reading for object-store listing and error responses
 * (S3 ListBucketResult, Azure EnumerationResults, <Error><Code>).
 *
 * cx_xml_parse() runs libexpat over a whole response once and builds a small
 * tree of elements, each with its attributes and the decoded character data
 * directly inside it (predefined entities, numeric references and CDATA
 * sections are expat's to decode).  The responses come from the network, so
 * the parse refuses any DOCTYPE (no DTD, no entity definitions, nothing
 * expanded beyond the document's own bytes) and bounds the document's size
 * and depth.  Every error is CX_ERR_CORRUPT with a message naming what was
 * wrong and where, never the document's content.
 *
 * Element pointers borrow the tree; cx_xml_free() releases all of it.
 */
#ifndef CX_XML_H
#define CX_XML_H

#include <stddef.h>

#include "ctxstore/error.h"

typedef struct cx_xml_doc cx_xml_doc;
typedef struct cx_xml cx_xml;	/* one element */

/* Parses doc[0 .. len) (need not be NUL-terminated) into *out.
 * CX_ERR_CORRUPT for a malformed, oversized or DOCTYPE-bearing document,
 * CX_ERR_NOMEM. */
cx_code		cx_xml_parse(const char *doc, size_t len, cx_xml_doc **out, cx_err *err);
void		cx_xml_free(cx_xml_doc *doc);

/* The document element if it is called name, else NULL. */
const cx_xml *cx_xml_root(const cx_xml_doc *doc, const char *name);

/* The first element called name below x, at any depth (document order), or
 * NULL. */
const cx_xml *cx_xml_find(const cx_xml *x, const char *name);

/* The next child of parent called name after the child prev (NULL: the
 * first), or NULL: for walking repeated entries such as <Contents>. */
const cx_xml *cx_xml_next(const cx_xml *parent, const cx_xml *prev,
						  const char *name);

/* x's decoded character data (never NULL; "" for <x/>). */
const char *cx_xml_text(const cx_xml *x);

/* The value of x's attribute called name, or NULL. */
const char *cx_xml_attr(const cx_xml *x, const char *name);

/* A malloc'd copy of the text of the first element called name below x, or
 * NULL if absent or out of memory: for optional fields such as error codes. */
char	   *cx_xml_find_text(const cx_xml *x, const char *name);

/* Parses doc and returns cx_xml_find_text() of its document element, or
 * NULL if it does not parse: for one field of a small answer. */
char	   *cx_xml_doc_field(const char *doc, size_t len, const char *name);

#endif							/* CX_XML_H */

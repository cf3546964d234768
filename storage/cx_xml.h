/*
 * cx_xml.h — a small event parser for the XML that object stores answer with.
 *
 * S3 and Azure Blob answer listings, multipart/block-list requests and errors
 * with short, flat, machine-written XML documents.  Callers need a handful of
 * leaf values from them ("EnumerationResults/Blobs/Blob/Name"), correctly
 * entity-decoded, and nothing else; a DOM or a general-purpose library would
 * be more than that needs.  This parser reports each element's opening (with
 * its attributes) and closing (with its text, if it has no child elements),
 * naming the element by its path from the root.
 *
 * Supported: the XML declaration and processing instructions, comments,
 * CDATA sections, attributes in either quote, the five predefined entities
 * and numeric character references (written out as UTF-8).  A DOCTYPE is
 * refused (no entity definitions, hence no entity expansion).  Namespaces are
 * not interpreted: a prefixed name keeps its prefix.  Malformed input gives
 * CX_ERR_IO with the byte offset, since a document that does not parse is a
 * transport or server fault, not a corrupt object of ours.
 */
#ifndef CX_XML_H
#define CX_XML_H

#include <stddef.h>

#include "cx_error.h"

/* Deeper documents are refused; the services' answers are 4 or 5 deep. */
#define CX_XML_MAX_DEPTH 32
/* Attributes beyond this many on one element are refused. */
#define CX_XML_MAX_ATTRS 16

typedef enum cx_xml_kind
{
	CX_XML_OPEN,				/* start tag (also for <empty/>) */
	CX_XML_CLOSE				/* end tag (also for <empty/>) */
} cx_xml_kind;

typedef struct cx_xml_attr
{
	const char *name;
	const char *value;			/* decoded */
} cx_xml_attr;

/* Everything an event points at is valid only during the callback. */
typedef struct cx_xml_event
{
	cx_xml_kind kind;
	int			depth;			/* 1 for the root element */
	const char *name;			/* this element's name */
	const char *path;			/* names from the root, joined by '/' */
	/* CLOSE of an element without child elements: its decoded text, NUL
	 * terminated (text_len excludes the NUL; an embedded &#0; is refused,
	 * so strlen(text) == text_len).  Otherwise "" and 0. */
	const char *text;
	size_t		text_len;
	/* OPEN only; CLOSE events carry none. */
	const cx_xml_attr *attrs;
	int			nattrs;
} cx_xml_event;

/* Called for each event in document order.  Returning anything but CX_OK
 * (with err filled) stops the parse, which returns that code. */
typedef cx_code (*cx_xml_fn) (void *arg, const cx_xml_event *ev, cx_err *err);

/* Parses doc[0 .. len), which need not be NUL-terminated. */
cx_code		cx_xml_parse(const char *doc, size_t len, cx_xml_fn fn, void *arg,
						 cx_err *err);

/* The decoded value of an OPEN event's attribute, or NULL. */
const char *cx_xml_attr_value(const cx_xml_event *ev, const char *name);

#endif							/* CX_XML_H */

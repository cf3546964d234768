/*
 * cx_xml.c — service responses parsed by libexpat into a tree of elements.
 */
#include "objstore/cx_xml.h"

#include <expat.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/cx_buf.h"

/* A listing page is far smaller; a larger answer is no service's. */
#define CX_XML_MAX_DOC	(16u * 1024 * 1024)
/* The responses nest four deep; this leaves room without letting a hostile
 * document build a tall tree. */
#define CX_XML_MAX_DEPTH 32

struct cx_xml
{
	char	   *name;
	char	  **attrs;			/* name, value, ..., NULL; one allocation */
	cx_buf		text;			/* NUL-terminated once the element closes */
	cx_xml	   *parent;
	cx_xml	   *first_child;
	cx_xml	   *last_child;
	cx_xml	   *next_sibling;
	cx_xml	   *next_alloc;		/* every element, for cx_xml_free() */
};

struct cx_xml_doc
{
	cx_xml	   *root;
	cx_xml	   *all;
};

/* The parse in progress, as expat's user data. */
typedef struct build_state
{
	XML_Parser	parser;
	cx_xml_doc *doc;
	cx_xml	   *open;			/* innermost open element */
	int			depth;
	const char *refusal;		/* why a handler stopped the parser */
	bool		nomem;
} build_state;

/* Stops the parse; expat may still call a handler for the current token,
 * which then does nothing (see stopped()). */
static void
stop(build_state *st, const char *why)
{
	if (st->refusal == NULL)
		st->refusal = why;
	XML_StopParser(st->parser, XML_FALSE);
}

static void
stop_nomem(build_state *st)
{
	st->nomem = true;
	stop(st, "out of memory");
}

static bool
stopped(const build_state *st)
{
	return st->refusal != NULL;
}

/* expat's attribute list copied into one block: pointers, then strings. */
static char **
copy_attrs(const XML_Char **atts)
{
	size_t		n = 0;
	size_t		bytes = 0;
	char	  **out;
	char	   *p;

	for (; atts[n] != NULL; n++)
		bytes += strlen(atts[n]) + 1;
	out = malloc((n + 1) * sizeof(char *) + bytes);
	if (out == NULL)
		return NULL;
	p = (char *) (out + n + 1);
	for (size_t i = 0; i < n; i++)
	{
		size_t		len = strlen(atts[i]) + 1;

		out[i] = memcpy(p, atts[i], len);
		p += len;
	}
	out[n] = NULL;
	return out;
}

static cx_xml *
new_element(cx_xml_doc *doc, const XML_Char *name, const XML_Char **atts)
{
	cx_xml	   *e = calloc(1, sizeof(cx_xml));

	if (e == NULL)
		return NULL;
	cx_buf_init(&e->text);
	e->next_alloc = doc->all;
	doc->all = e;
	e->name = strdup(name);
	e->attrs = copy_attrs(atts);
	return e->name != NULL && e->attrs != NULL ? e : NULL;
}

static void XMLCALL
on_start(void *user, const XML_Char *name, const XML_Char **atts)
{
	build_state *st = user;
	cx_xml	   *e;

	if (stopped(st))
		return;
	if (++st->depth > CX_XML_MAX_DEPTH)
	{
		stop(st, "elements nest too deep");
		return;
	}
	e = new_element(st->doc, name, atts);
	if (e == NULL)
	{
		stop_nomem(st);
		return;
	}
	e->parent = st->open;
	if (st->open == NULL)
		st->doc->root = e;
	else if (st->open->last_child == NULL)
		st->open->first_child = st->open->last_child = e;
	else
		st->open->last_child = st->open->last_child->next_sibling = e;
	st->open = e;
}

static void XMLCALL
on_end(void *user, const XML_Char *name)
{
	build_state *st = user;

	(void) name;				/* expat has matched it to the start tag */
	if (stopped(st))
		return;
	cx_buf_put(&st->open->text, "", 1);
	if (!cx_buf_ok(&st->open->text))
	{
		stop_nomem(st);
		return;
	}
	st->open = st->open->parent;
	st->depth--;
}

static void XMLCALL
on_text(void *user, const XML_Char *s, int len)
{
	build_state *st = user;

	/* expat reports character data only inside the document element. */
	if (!stopped(st))
		cx_buf_put(&st->open->text, s, (size_t) len);
}

static void XMLCALL
on_doctype(void *user, const XML_Char *name, const XML_Char *sysid,
		   const XML_Char *pubid, int has_internal_subset)
{
	(void) name;
	(void) sysid;
	(void) pubid;
	(void) has_internal_subset;
	stop(user, "a DOCTYPE (no service answer has one)");
}

static void XMLCALL
on_entity_decl(void *user, const XML_Char *name, int is_param,
			   const XML_Char *value, int value_len, const XML_Char *base,
			   const XML_Char *sysid, const XML_Char *pubid,
			   const XML_Char *notation)
{
	(void) name;
	(void) is_param;
	(void) value;
	(void) value_len;
	(void) base;
	(void) sysid;
	(void) pubid;
	(void) notation;
	stop(user, "an entity declaration");
}

/* Runs expat over the whole document; CX_OK with st->doc->root set. */
static cx_code
run_parser(build_state *st, const char *doc, size_t len, cx_err *err)
{
	enum XML_Status status;

	XML_SetUserData(st->parser, st);
	XML_SetElementHandler(st->parser, on_start, on_end);
	XML_SetCharacterDataHandler(st->parser, on_text);
	XML_SetStartDoctypeDeclHandler(st->parser, on_doctype);
	/* Belt and braces: the DOCTYPE handler stops first. */
	XML_SetEntityDeclHandler(st->parser, on_entity_decl);
	status = XML_Parse(st->parser, doc, (int) len, XML_TRUE);
	if (status == XML_STATUS_OK)
		return CX_OK;
	if (st->nomem)
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory parsing an XML answer");
	if (stopped(st))
		return cx_err_set(err, CX_ERR_CORRUPT, "XML answer refused: %s at line %lu",
						  st->refusal,
						  (unsigned long) XML_GetCurrentLineNumber(st->parser));
	return cx_err_set(err, CX_ERR_CORRUPT, "malformed XML answer: %s at line %lu, column %lu",
					  XML_ErrorString(XML_GetErrorCode(st->parser)),
					  (unsigned long) XML_GetCurrentLineNumber(st->parser),
					  (unsigned long) XML_GetCurrentColumnNumber(st->parser));
}

cx_code
cx_xml_parse(const char *doc, size_t len, cx_xml_doc **out, cx_err *err)
{
	build_state st = {0};
	cx_code		rc;

	*out = NULL;
	if (len > CX_XML_MAX_DOC)
		return cx_err_set(err, CX_ERR_CORRUPT, "XML answer of %zu bytes is too large", len);
	st.doc = calloc(1, sizeof(cx_xml_doc));
	st.parser = XML_ParserCreate(NULL);
	if (st.doc == NULL || st.parser == NULL)
		rc = cx_err_set(err, CX_ERR_NOMEM, "out of memory for an XML parser");
	else
		rc = run_parser(&st, doc, len, err);
	if (st.parser != NULL)
		XML_ParserFree(st.parser);
	if (rc == CX_OK)
		*out = st.doc;
	else
		cx_xml_free(st.doc);
	return rc;
}

void
cx_xml_free(cx_xml_doc *doc)
{
	cx_xml	   *e;

	if (doc == NULL)
		return;
	while ((e = doc->all) != NULL)
	{
		doc->all = e->next_alloc;
		free(e->name);
		free(e->attrs);
		cx_buf_free(&e->text);
		free(e);
	}
	free(doc);
}

const cx_xml *
cx_xml_root(const cx_xml_doc *doc, const char *name)
{
	return strcmp(doc->root->name, name) == 0 ? doc->root : NULL;
}

const cx_xml *
cx_xml_find(const cx_xml *x, const char *name)
{
	for (const cx_xml *c = x->first_child; c != NULL; c = c->next_sibling)
	{
		const cx_xml *hit = strcmp(c->name, name) == 0 ? c : cx_xml_find(c, name);

		if (hit != NULL)
			return hit;
	}
	return NULL;
}

const cx_xml *
cx_xml_next(const cx_xml *parent, const cx_xml *prev, const char *name)
{
	const cx_xml *c = prev == NULL ? parent->first_child : prev->next_sibling;

	while (c != NULL && strcmp(c->name, name) != 0)
		c = c->next_sibling;
	return c;
}

const char *
cx_xml_text(const cx_xml *x)
{
	return (const char *) x->text.data;
}

const char *
cx_xml_attr(const cx_xml *x, const char *name)
{
	for (char **a = x->attrs; a[0] != NULL; a += 2)
		if (strcmp(a[0], name) == 0)
			return a[1];
	return NULL;
}

char *
cx_xml_find_text(const cx_xml *x, const char *name)
{
	const cx_xml *e = cx_xml_find(x, name);

	return e == NULL ? NULL : strdup(cx_xml_text(e));
}

char *
cx_xml_doc_field(const char *doc, size_t len, const char *name)
{
	cx_xml_doc *d;
	cx_err		scratch;
	char	   *value;

	if (cx_xml_parse(doc, len, &d, &scratch) != CX_OK)
		return NULL;
	value = cx_xml_find_text(d->root, name);
	cx_xml_free(d);
	return value;
}

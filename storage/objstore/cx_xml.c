/*
 * cx_xml.c — element lookup and text decoding for service responses.
 */
#include "objstore/cx_xml.h"

#include <stdlib.h>
#include <string.h>

#include "util/cx_buf.h"

void
cx_xml_init(cx_xml *x, const char *doc, size_t len)
{
	x->p = doc;
	x->end = doc + len;
}

/* Does [p, end) start with the NUL-terminated string s? */
static bool
starts_with(const char *p, const char *end, const char *s)
{
	size_t		n = strlen(s);

	return (size_t) (end - p) >= n && memcmp(p, s, n) == 0;
}

/* The next "</name>" at or after p, or NULL. */
static const char *
find_close(const char *p, const char *end, const char *name)
{
	size_t		n = strlen(name);

	for (; p + n + 3 <= end; p++)
	{
		p = memchr(p, '<', (size_t) (end - p));
		if (p == NULL || p + n + 3 > end)
			return NULL;
		if (p[1] == '/' && memcmp(p + 2, name, n) == 0 && p[2 + n] == '>')
			return p;
	}
	return NULL;
}

bool
cx_xml_next(cx_xml *x, const char *name, cx_xml *inner)
{
	size_t		n = strlen(name);
	const char *p = x->p;

	while (p < x->end && (p = memchr(p, '<', (size_t) (x->end - p))) != NULL)
	{
		const char *after = p + 1 + n;
		const char *gt;
		const char *close;

		p++;
		if (!starts_with(p, x->end, name) || after >= x->end ||
			(*after != '>' && *after != '/' && *after != ' ' &&
			 *after != '\t' && *after != '\r' && *after != '\n'))
			continue;
		/* Attributes (S3 and Azure put none we need) end at the '>'. */
		gt = memchr(after, '>', (size_t) (x->end - after));
		if (gt == NULL)
			return false;
		if (gt[-1] == '/')
		{
			inner->p = inner->end = gt + 1;
			x->p = gt + 1;
			return true;
		}
		close = find_close(gt + 1, x->end, name);
		if (close == NULL)
			return false;
		inner->p = gt + 1;
		inner->end = close;
		x->p = close + n + 3;
		return true;
	}
	return false;
}

bool
cx_xml_find(const cx_xml *x, const char *name, cx_xml *inner)
{
	cx_xml		copy = *x;

	return cx_xml_next(&copy, name, inner);
}

/* Appends code point cp as UTF-8; false if it is not a valid XML char. */
static bool
put_utf8(cx_buf *b, unsigned long cp)
{
	uint8_t		u[4];

	if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return false;
	if (cp < 0x80)
	{
		cx_buf_put_u8(b, (uint8_t) cp);
		return true;
	}
	if (cp < 0x800)
	{
		u[0] = (uint8_t) (0xC0 | (cp >> 6));
		u[1] = (uint8_t) (0x80 | (cp & 0x3F));
		cx_buf_put(b, u, 2);
		return true;
	}
	if (cp < 0x10000)
	{
		u[0] = (uint8_t) (0xE0 | (cp >> 12));
		u[1] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
		u[2] = (uint8_t) (0x80 | (cp & 0x3F));
		cx_buf_put(b, u, 3);
		return true;
	}
	u[0] = (uint8_t) (0xF0 | (cp >> 18));
	u[1] = (uint8_t) (0x80 | ((cp >> 12) & 0x3F));
	u[2] = (uint8_t) (0x80 | ((cp >> 6) & 0x3F));
	u[3] = (uint8_t) (0x80 | (cp & 0x3F));
	cx_buf_put(b, u, 4);
	return true;
}

/* Decodes the reference starting at p ('&'); returns the byte after its ';'
 * or NULL if it is malformed. */
static const char *
decode_ref(const char *p, const char *end, cx_buf *b)
{
	static const struct
	{
		const char *name;
		char		c;
	}			named[] = {
		{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''},
	};
	const char *semi = memchr(p, ';', (size_t) (end - p));
	unsigned long cp = 0;
	const char *q;
	int			base = 10;

	if (semi == NULL)
		return NULL;
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if ((size_t) (semi + 1 - p) == strlen(named[i].name) &&
			memcmp(p, named[i].name, strlen(named[i].name)) == 0)
		{
			cx_buf_put_u8(b, (uint8_t) named[i].c);
			return semi + 1;
		}
	if (p + 2 >= semi || p[1] != '#')
		return NULL;
	q = p + 2;
	if (*q == 'x')
	{
		base = 16;
		q++;
	}
	if (q == semi || semi - q > 8)
		return NULL;
	for (; q < semi; q++)
	{
		const char *digits = "0123456789abcdef";
		const char *d = memchr(digits, *q | 0x20, (size_t) base);

		if (d == NULL || *q == '\0')
			return NULL;
		cp = cp * (unsigned long) base + (unsigned long) (d - digits);
	}
	return put_utf8(b, cp) ? semi + 1 : NULL;
}

cx_code
cx_xml_text(const cx_xml *x, char **out, cx_err *err)
{
	cx_buf		b;
	const char *p = x->p;

	*out = NULL;
	cx_buf_init(&b);
	while (p < x->end)
	{
		if (*p == '&')
		{
			p = decode_ref(p, x->end, &b);
			if (p == NULL)
				break;
		}
		else if (starts_with(p, x->end, "<![CDATA["))
		{
			const char *start = p + 9;
			const char *stop = memmem(start, (size_t) (x->end - start), "]]>", 3);

			if (stop == NULL)
				break;
			cx_buf_put(&b, start, (size_t) (stop - start));
			p = stop + 3;
		}
		else if (*p == '\0')
			break;
		else
			cx_buf_put_u8(&b, (uint8_t) *p++);
	}
	/* A NUL (raw, or in a CDATA section) would truncate the string. */
	if (p != x->end || (b.len > 0 && memchr(b.data, '\0', b.len) != NULL))
	{
		cx_buf_free(&b);
		return cx_err_set(err, CX_ERR_CORRUPT, "malformed XML text");
	}
	cx_buf_put_u8(&b, 0);
	if (!cx_buf_ok(&b))
	{
		cx_buf_free(&b);
		return cx_err_set(err, CX_ERR_NOMEM, "out of memory decoding XML");
	}
	*out = (char *) cx_buf_detach(&b, NULL);
	return CX_OK;
}

char *
cx_xml_find_text(const cx_xml *x, const char *name)
{
	cx_xml		inner;
	char	   *text;
	cx_err		err;

	if (!cx_xml_find(x, name, &inner) || cx_xml_text(&inner, &text, &err) != CX_OK)
		return NULL;
	return text;
}

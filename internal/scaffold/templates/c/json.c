#include "json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct reader {
	const char *s, *end;
	int depth;
	int oom; // an allocation failed: the text may be JSON all the same
};

static int digit(const struct reader *r) { return r->s < r->end && *r->s >= '0' && *r->s <= '9'; }

// read_number reads a number as JSON's grammar has it, and no further
// than r->end: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?. (strtod
// would read past a buffer that is not NUL-terminated, and takes inf,
// nan and hexadecimal too.)
static int read_number(struct reader *r) {
	if (r->s < r->end && *r->s == '-')
		r->s++;
	if (!digit(r))
		return 0;
	if (*r->s++ != '0')
		while (digit(r))
			r->s++;
	if (r->s < r->end && *r->s == '.') {
		r->s++;
		if (!digit(r))
			return 0;
		while (digit(r))
			r->s++;
	}
	if (r->s < r->end && (*r->s == 'e' || *r->s == 'E')) {
		r->s++;
		if (r->s < r->end && (*r->s == '+' || *r->s == '-'))
			r->s++;
		if (!digit(r))
			return 0;
		while (digit(r))
			r->s++;
	}
	return 1;
}

static void skip_space(struct reader *r) {
	while (r->s < r->end && (*r->s == ' ' || *r->s == '\t' || *r->s == '\n' || *r->s == '\r'))
		r->s++;
}

static int hex4(const char *s, unsigned *out) {
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = s[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return 0;
	}
	*out = v;
	return 1;
}

static size_t put_utf8(char *out, unsigned c) {
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xC0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3F));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xE0 | c >> 12);
		out[1] = (char)(0x80 | (c >> 6 & 0x3F));
		out[2] = (char)(0x80 | (c & 0x3F));
		return 3;
	}
	out[0] = (char)(0xF0 | c >> 18);
	out[1] = (char)(0x80 | (c >> 12 & 0x3F));
	out[2] = (char)(0x80 | (c >> 6 & 0x3F));
	out[3] = (char)(0x80 | (c & 0x3F));
	return 4;
}

size_t json_utf8_len(const char *p, size_t n) {
	const unsigned char *s = (const unsigned char *)p;
	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return 1;
	size_t len;
	unsigned c, min;
	if (s[0] >= 0xC2 && s[0] <= 0xDF)
		len = 2, c = s[0] & 0x1F, min = 0x80;
	else if (s[0] >= 0xE0 && s[0] <= 0xEF)
		len = 3, c = s[0] & 0x0F, min = 0x800;
	else if (s[0] >= 0xF0 && s[0] <= 0xF4)
		len = 4, c = s[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3F);
	}
	if (c < min || c > 0x10FFFF || (c >= 0xD800 && c < 0xE000))
		return 0;
	return len;
}

// read_string reads a string after its opening quote into v. A byte
// that is not part of valid UTF-8, and a lone surrogate escape, become
// U+FFFD each.
static int read_string(struct reader *r, json *v) {
	const char *start = r->s;
	while (r->s < r->end && *r->s != '"') {
		if (*r->s == '\\')
			r->s++;
		r->s++;
	}
	if (r->s >= r->end)
		return 0;
	char *out = malloc(3 * (r->s - start) + 1); // a bad byte takes three
	if (!out) {
		r->oom = 1;
		return 0;
	}
	size_t n = 0;
	for (const char *p = start; p < r->s; p++) {
		if ((unsigned char)*p < 0x20) {
			free(out);
			return 0;
		}
		if (*p != '\\') {
			size_t l = json_utf8_len(p, r->s - p);
			if (l == 0) {
				n += put_utf8(out + n, 0xFFFD);
				continue;
			}
			memcpy(out + n, p, l);
			n += l;
			p += l - 1;
			continue;
		}
		p++;
		switch (*p) {
		case '"': case '\\': case '/': out[n++] = *p; break;
		case 'b': out[n++] = '\b'; break;
		case 'f': out[n++] = '\f'; break;
		case 'n': out[n++] = '\n'; break;
		case 'r': out[n++] = '\r'; break;
		case 't': out[n++] = '\t'; break;
		case 'u': {
			unsigned c, lo;
			if (r->s - p < 5 || !hex4(p + 1, &c)) {
				free(out);
				return 0;
			}
			p += 4;
			if (c >= 0xD800 && c < 0xDC00 && r->s - p >= 7 && p[1] == '\\' && p[2] == 'u' && hex4(p + 3, &lo) && lo >= 0xDC00 && lo < 0xE000) {
				c = 0x10000 + ((c - 0xD800) << 10) + (lo - 0xDC00);
				p += 6;
			} else if (c >= 0xD800 && c < 0xE000) {
				c = 0xFFFD;
			}
			n += put_utf8(out + n, c);
			break;
		}
		default:
			free(out);
			return 0;
		}
	}
	out[n] = 0;
	v->len = n;
	v->str = out;
	r->s++; // the closing quote
	return 1;
}

static json *read_value(struct reader *r);

static int read_members(struct reader *r, json *v, char close) {
	json **tail = &v->child;
	skip_space(r);
	if (r->s < r->end && *r->s == close) {
		r->s++;
		return 1;
	}
	for (;;) {
		char *key = NULL;
		if (close == '}') {
			json k = {0};
			skip_space(r);
			if (r->s >= r->end || *r->s != '"')
				return 0;
			r->s++;
			if (!read_string(r, &k))
				return 0;
			key = k.str;
			skip_space(r);
			if (r->s >= r->end || *r->s != ':') {
				free(key);
				return 0;
			}
			r->s++;
		}
		json *m = read_value(r);
		if (!m) {
			free(key);
			return 0;
		}
		m->key = key;
		*tail = m;
		tail = &m->next;
		skip_space(r);
		if (r->s < r->end && *r->s == ',') {
			r->s++;
			continue;
		}
		if (r->s < r->end && *r->s == close) {
			r->s++;
			return 1;
		}
		return 0;
	}
}

static int literal(struct reader *r, const char *word) {
	size_t n = strlen(word);
	if ((size_t)(r->end - r->s) < n || memcmp(r->s, word, n))
		return 0;
	r->s += n;
	return 1;
}

static json *read_value(struct reader *r) {
	skip_space(r);
	if (r->s >= r->end || r->depth > 512)
		return NULL;
	json *v = calloc(1, sizeof *v);
	if (!v) {
		r->oom = 1;
		return NULL;
	}
	v->raw = r->s;
	int ok = 1;
	char c = *r->s;
	if (c == '{' || c == '[') {
		r->s++;
		r->depth++;
		v->type = c == '{' ? JSON_OBJECT : JSON_ARRAY;
		ok = read_members(r, v, c == '{' ? '}' : ']');
		r->depth--;
	} else if (c == '"') {
		r->s++;
		v->type = JSON_STRING;
		ok = read_string(r, v);
	} else if (c == 't' || c == 'f') {
		v->type = JSON_BOOL;
		ok = literal(r, c == 't' ? "true" : "false");
	} else if (c == 'n') {
		ok = literal(r, "null");
	} else if (c == '-' || (c >= '0' && c <= '9')) {
		v->type = JSON_NUMBER;
		ok = read_number(r);
	} else {
		ok = 0;
	}
	v->raw_len = r->s - v->raw;
	if (!ok) {
		json_free(v);
		return NULL;
	}
	return v;
}

json *json_parse(const char *s, size_t n) {
	struct reader r = {s, s + n, 0, 0};
	json *v = read_value(&r);
	skip_space(&r);
	if (v && r.s != r.end) {
		json_free(v);
		return NULL;
	}
	if (!v && r.oom)
		errno = ENOMEM;
	return v;
}

// skip_value passes over a value without keeping it (or allocating):
// what json_id needs, when there was no memory to parse the text.
static int skip_value(struct reader *r) {
	skip_space(r);
	if (r->s >= r->end || r->depth > 512)
		return 0;
	char c = *r->s;
	if (c == '"') {
		for (r->s++; r->s < r->end && *r->s != '"'; r->s++)
			if (*r->s == '\\')
				r->s++;
		return r->s++ < r->end;
	}
	if (c == '{' || c == '[') {
		char close = c == '{' ? '}' : ']';
		r->s++;
		r->depth++;
		skip_space(r);
		if (r->s < r->end && *r->s == close) {
			r->s++;
			r->depth--;
			return 1;
		}
		for (;;) {
			if (close == '}') {
				skip_space(r);
				if (r->s >= r->end || *r->s != '"' || !skip_value(r))
					return 0;
				skip_space(r);
				if (r->s >= r->end || *r->s++ != ':')
					return 0;
			}
			if (!skip_value(r))
				return 0;
			skip_space(r);
			if (r->s < r->end && *r->s == ',') {
				r->s++;
				continue;
			}
			r->depth--;
			return r->s < r->end && *r->s++ == close;
		}
	}
	if (c == 't' || c == 'f' || c == 'n')
		return literal(r, c == 't' ? "true" : c == 'f' ? "false" : "null");
	return read_number(r);
}

json *json_id(const char *s, size_t n) {
	struct reader r = {s, s + n, 0, 0};
	const char *id = NULL, *id_end = NULL; // the last "id", as json_get takes
	skip_space(&r);
	if (r.s >= r.end || *r.s++ != '{')
		return NULL;
	for (;;) { // an object without members has no id
		skip_space(&r);
		const char *key = r.s;
		if (r.s >= r.end || *r.s != '"' || !skip_value(&r))
			return NULL;
		int is_id = r.s - key == 4 && !memcmp(key, "\"id\"", 4);
		skip_space(&r);
		if (r.s >= r.end || *r.s++ != ':')
			return NULL;
		skip_space(&r);
		const char *at = r.s;
		if (!skip_value(&r))
			return NULL;
		if (is_id)
			id = at, id_end = r.s;
		skip_space(&r);
		if (r.s < r.end && *r.s == '}')
			break;
		if (r.s >= r.end || *r.s++ != ',')
			return NULL;
	}
	r.s++;
	skip_space(&r);
	json *v = id && r.s == r.end ? json_parse(id, id_end - id) : NULL;
	if (v && v->type != JSON_NUMBER && v->type != JSON_STRING) {
		json_free(v);
		v = NULL;
	}
	return v;
}

int json_number(const json *v, double *out) {
	char small[64], *copy = small;
	if (!v || v->type != JSON_NUMBER)
		return 0;
	if (v->raw_len >= sizeof small && !(copy = malloc(v->raw_len + 1)))
		return 0;
	memcpy(copy, v->raw, v->raw_len);
	copy[v->raw_len] = 0;
	*out = strtod(copy, NULL);
	if (copy != small)
		free(copy);
	return 1;
}

void json_free(json *v) {
	while (v) {
		json *next = v->next;
		json_free(v->child);
		free(v->str);
		free(v->key);
		free(v);
		v = next;
	}
}

json *json_get(const json *v, const char *key) {
	json *found = NULL; // the last of a name given twice, as most readers take
	if (!v || v->type != JSON_OBJECT)
		return NULL;
	for (json *m = v->child; m; m = m->next)
		if (!strcmp(m->key, key))
			found = m;
	return found;
}

const char *json_string(const json *v) { return v && v->type == JSON_STRING ? v->str : NULL; }

void json_write_string(FILE *f, const char *s, size_t n) {
	fputc('"', f);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		size_t l = json_utf8_len(s + i, n - i);
		if (l == 3 && !memcmp(s + i, "\xE2\x80", 2) && (s[i + 2] == '\xA8' || s[i + 2] == '\xA9')) {
			fprintf(f, "\\u%04x", s[i + 2] == '\xA8' ? 0x2028 : 0x2029); // ends a line in JavaScript
			i += 2;
		} else if (l > 1) {
			fwrite(s + i, 1, l, f);
			i += l - 1;
		} else if (l == 0)
			fputs("\\ufffd", f); // not UTF-8: JSON cannot carry it
		else if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c == '\n')
			fputs("\\n", f);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

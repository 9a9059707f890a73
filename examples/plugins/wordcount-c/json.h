// A small JSON reader and string writer, enough for the wire: a line is
// parsed into a tree of values, each keeping the span of text it was
// read from (so an id goes back exactly as it came).
#ifndef JSON_H
#define JSON_H
#include <stddef.h>
#include <stdio.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT };

typedef struct json json;
struct json {
	enum json_type type;
	char *str;          // a string's bytes, decoded and NUL-terminated
	size_t len;         // their length (a string may hold a NUL)
	const char *raw;    // the text the value was read from
	size_t raw_len;
	char *key;          // its name, in an object
	json *child, *next; // an array's or object's first member; the next
};

// json_parse reads the whole of s (n bytes, which need not end in a NUL)
// as one value: NULL if it is not JSON, or nested deeper than 512, or
// memory ran out (then errno is ENOMEM). In a string, a byte that is not
// part of valid UTF-8, and a lone surrogate escape, become U+FFFD each.
// Free it with json_free.
json *json_parse(const char *s, size_t n);

// json_id is the "id" member of the object s (n bytes), if it is a
// number or a string, found without parsing the rest into a tree: a
// request json_parse had no memory for can still be answered. NULL if
// there is none (or no memory even for it). Free it with json_free.
json *json_id(const char *s, size_t n);
void json_free(json *v);

// json_get is the member key of an object (NULL if v is no object or has
// none); json_string is a string's bytes, or NULL for anything else.
json *json_get(const json *v, const char *key);
const char *json_string(const json *v);

// json_number sets *out to a number's value and returns 1; 0 for anything
// else (or no memory for the copy strtod reads).
int json_number(const json *v, double *out);

// json_write_string writes n bytes of s as a JSON string, quoted; a byte
// that is not part of valid UTF-8 goes out as U+FFFD.
void json_write_string(FILE *f, const char *s, size_t n);

// json_utf8_len is the length of the valid UTF-8 sequence s starts with
// (n bytes at most), or 0 if it starts with none.
size_t json_utf8_len(const char *s, size_t n);
#endif

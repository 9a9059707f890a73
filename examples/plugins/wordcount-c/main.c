// wordcount-c: the wordcount plugin of ../wordcount/ in C, built to
// WebAssembly (WASI preview1) with wasi-libc and run in bingo's sandbox.
// It answers every request as main.py does, but for its name, which its
// messages start with. The wire is JSON-RPC 2.0, one message a line, on
// stdin and stdout; stderr is its log. See README.md.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json.h"

#define NAME "wordcount-c"
#define PROTOCOL 5
#define WHITESPACE " \t\n\r\v\f" // what separates words: ASCII only

// --- strings that may hold NUL bytes -------------------------------------

struct str {
	char *p;
	size_t n, cap;
};

static void add(struct str *s, const char *p, size_t n) {
	if (s->n + n + 1 > s->cap) {
		s->cap = 2 * (s->n + n + 1);
		if (!(s->p = realloc(s->p, s->cap))) {
			fprintf(stderr, NAME ": out of memory\n");
			exit(1);
		}
	}
	memcpy(s->p + s->n, p, n);
	s->n += n;
	s->p[s->n] = 0;
}

static void addf(struct str *s, const char *format, ...) {
	char buf[256];
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(buf, sizeof buf, format, ap);
	va_end(ap);
	add(s, buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

// quoted adds name in double quotes, escaped as JSON (and Python's
// json.dumps) does: as Go's %q writes a name of printable characters.
static void quoted(struct str *s, const char *p, size_t n) {
	add(s, "\"", 1);
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];
		const char *short_ = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b" : c == '\f' ? "\\f" : NULL;
		if (short_)
			add(s, short_, 2);
		else if (c < 0x20)
			addf(s, "\\u%04x", c);
		else
			add(s, p + i, 1);
	}
	add(s, "\"", 1);
}

static void logf_(const char *format, ...) {
	va_list ap;
	va_start(ap, format);
	fputs(NAME ": ", stderr);
	vfprintf(stderr, format, ap);
	fputc('\n', stderr);
	va_end(ap);
}

// --- the wire ----------------------------------------------------------

static void write_str(const struct str *s) { json_write_string(stdout, s->p ? s->p : "", s->n); }

static void end_message(void) {
	fputs("}\n", stdout);
	fflush(stdout);
}

// write_id writes a request's id: a string, or an integer as Python reads
// it (-0 is 0).
static void write_id(const json *id) {
	if (id->type == JSON_STRING)
		json_write_string(stdout, id->str, id->len);
	else if (id->raw_len == 2 && !memcmp(id->raw, "-0", 2))
		fputc('0', stdout);
	else
		fwrite(id->raw, 1, id->raw_len, stdout);
}

static void begin_answer(const json *id) {
	fputs("{\"jsonrpc\":\"2.0\",\"id\":", stdout);
	write_id(id);
	fputs(",\"result\":", stdout);
}

static void fail(const json *id, int code, const struct str *message) {
	fputs("{\"jsonrpc\":\"2.0\",\"id\":", stdout);
	write_id(id);
	printf(",\"error\":{\"code\":%d,\"message\":", code);
	write_str(message);
	fputc('}', stdout);
	end_message();
}

// --- params ------------------------------------------------------------

// A request's bad params, worded as main.py words them; becomes -32602.
static struct str bad;

static int is(const json *v, const char *s) {
	return v && v->type == JSON_STRING && v->len == strlen(s) && !memcmp(v->str, s, v->len);
}

// field is the named string field of params, "" when absent or null.
static struct str field(const json *params, const char *name) {
	struct str s = {0};
	const json *v = json_get(params, name);
	add(&s, "", 0);
	if (v && v->type == JSON_STRING)
		add(&s, v->str, v->len);
	return s;
}

// fields checks that params is an object (or absent, or null) whose
// members named in names (NULL-terminated) are strings or null; the first
// bad one in params' order is the one named.
static int fields(const json *params, const char **names) {
	if (!params || params->type == JSON_NULL)
		return 1;
	if (params->type != JSON_OBJECT) {
		add(&bad, NAME ": bad params: params must be an object", strlen(NAME ": bad params: params must be an object"));
		return 0;
	}
	for (const json *m = params->child; m; m = m->next)
		for (const char **n = names; *n; n++)
			if (!strcmp(m->key, *n) && m->type != JSON_NULL && m->type != JSON_STRING) {
				addf(&bad, NAME ": bad params: %s must be a string", *n);
				return 0;
			}
	return 1;
}

// --- what the plugin does ----------------------------------------------

static void handshake(const json *id) {
	begin_answer(id);
	fputs("{\"protocol\":5,\"name\":\"" NAME "\",\"version\":\"0.1.0\","
	      "\"tools\":[{\"name\":\"count\",\"description\":\"Counts the words, lines and characters in a file.\","
	      "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\","
	      "\"description\":\"The file to count: relative to the working directory, or absolute.\"}},\"required\":[\"path\"]}}],"
	      "\"commands\":[{\"name\":\"wordcount\",\"hint\":\"count the words in a file\","
	      "\"args\":{\"kind\":\"free\",\"hint\":\"<path>\"},\"instant\":true,\"family\":\"plugin\"}]}",
	      stdout);
	end_message();
}

static const char *reason(int e) {
	switch (e) {
	case ENOENT:
	case ENOTDIR:
	case ENOTCAPABLE: // outside what the sandbox mounts: nothing is there
		return "no such file or directory";
	case EISDIR:
		return "is a directory";
	case EACCES:
	case EPERM:
		return "permission denied";
	}
	return "read failed";
}

// join is path relative to cwd unless absolute (os.path.join).
static struct str join(const struct str *cwd, const char *p, size_t n) {
	struct str full = {0};
	add(&full, "", 0);
	if (cwd->n && !(n && p[0] == '/')) {
		add(&full, cwd->p, cwd->n);
		if (cwd->p[cwd->n - 1] != '/')
			add(&full, "/", 1);
	}
	add(&full, p, n);
	return full;
}

// readfile reads the file at path (relative to cwd unless absolute) into
// data, or says why it cannot in *why: stat first, so a directory or a
// FIFO is refused by kind, not read.
static int readfile(const struct str *cwd, const char *path, size_t n, struct str *data, const char **why) {
	struct str full = join(cwd, path, n);
	struct stat st;
	int fd = -1, ok = 0;
	if (memchr(full.p, 0, full.n)) // a NUL byte in the path
		*why = "read failed";
	else if (stat(full.p, &st))
		*why = reason(errno);
	else if (S_ISDIR(st.st_mode))
		*why = "is a directory";
	else if (!S_ISREG(st.st_mode))
		*why = "not a regular file";
	else if ((fd = open(full.p, O_RDONLY)) < 0)
		*why = reason(errno);
	else {
		char buf[65536];
		ssize_t got;
		add(data, "", 0);
		while ((got = read(fd, buf, sizeof buf)) > 0)
			add(data, buf, got);
		if (got < 0)
			*why = reason(errno);
		else
			ok = 1;
	}
	if (fd >= 0)
		close(fd);
	free(full.p);
	return ok;
}

static void cannot(struct str *msg, const char *path, size_t n, const char *why) {
	add(msg, NAME ": cannot read ", strlen(NAME ": cannot read "));
	add(msg, path, n);
	addf(msg, ": %s", why);
}

// count is the lines, words, chars and bytes of data, as the contract
// says: a last line without its newline counts, words are split by the six
// ASCII spaces, and a byte that is not part of valid UTF-8 is one char.
static void count(const struct str *data, long long c[4]) {
	const char *p = data->p;
	size_t n = data->n;
	c[0] = c[1] = c[2] = 0;
	c[3] = (long long)n;
	int in_word = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == '\n')
			c[0]++;
		int space = strchr(WHITESPACE, p[i]) != NULL && p[i] != 0;
		if (!space && !in_word)
			c[1]++;
		in_word = !space;
	}
	if (n && p[n - 1] != '\n')
		c[0]++;
	for (size_t i = 0; i < n;) {
		size_t l = json_utf8_len(p + i, n - i);
		i += l ? l : 1;
		c[2]++;
	}
}

static void table(const char *path, size_t n, const long long c[4]) {
	fputs("{\"kind\":\"table\",\"title\":\"wordcount\",\"columns\":[\"file\",\"lines\",\"words\",\"chars\",\"bytes\"],\"rows\":[[", stdout);
	json_write_string(stdout, path, n);
	printf(",\"%lld\",\"%lld\",\"%lld\",\"%lld\"]]}", c[0], c[1], c[2], c[3]);
}

static void text_output(const json *id, const struct str *text) {
	begin_answer(id);
	fputs("{\"output\":{\"parts\":[{\"type\":\"text\",\"text\":", stdout);
	write_str(text);
	fputs("}],\"isError\":true}}", stdout);
	end_message();
}

static int call_tool(const json *id, const json *params) {
	static const char *names[] = {"callId", "name", "cwd", NULL};
	if (!fields(params, names))
		return 0;
	struct str call = field(params, "callId"), name = field(params, "name"), cwd = field(params, "cwd"), msg = {0};
	int ok = 1;
	add(&msg, "", 0);
	const json *path = json_get(json_get(params, "input"), "path");
	if (!(name.n == 5 && !memcmp(name.p, "count", 5))) {
		add(&bad, NAME ": no tool ", strlen(NAME ": no tool "));
		quoted(&bad, name.p, name.n);
		ok = 0;
	} else if (!path || path->type != JSON_STRING || path->len == 0) {
		add(&msg, NAME ": path is required", strlen(NAME ": path is required"));
		text_output(id, &msg);
	} else {
		// Progress is a notification, sent while the call runs: the
		// surface shows it as the call's live output line.
		struct str tail = {0};
		add(&tail, "reading ", 8);
		add(&tail, path->str, path->len);
		fputs("{\"jsonrpc\":\"2.0\",\"method\":\"tool/progress\",\"params\":{\"callId\":", stdout);
		write_str(&call);
		fputs(",\"tail\":", stdout);
		write_str(&tail);
		fputc('}', stdout);
		end_message();
		free(tail.p);
		struct str data = {0};
		const char *why;
		long long c[4];
		if (!readfile(&cwd, path->str, path->len, &data, &why)) {
			cannot(&msg, path->str, path->len, why);
			text_output(id, &msg);
		} else {
			count(&data, c);
			add(&msg, path->str, path->len);
			addf(&msg, ": %lld lines, %lld words, %lld characters, %lld bytes", c[0], c[1], c[2], c[3]);
			begin_answer(id);
			fputs("{\"output\":{\"parts\":[{\"type\":\"text\",\"text\":", stdout);
			write_str(&msg);
			fputs("}],\"display\":", stdout);
			table(path->str, path->len, c);
			fputs("}}", stdout);
			end_message();
		}
		free(data.p);
	}
	free(call.p), free(name.p), free(cwd.p), free(msg.p);
	return ok;
}

static int is_command(const struct str *name) {
	if (name->n == 9 && !memcmp(name->p, "wordcount", 9))
		return 1;
	add(&bad, NAME ": no command ", strlen(NAME ": no command "));
	quoted(&bad, name->p, name->n);
	return 0;
}

static int run_command(const json *id, const json *params) {
	static const char *names[] = {"name", "args", "cwd", NULL};
	if (!fields(params, names))
		return 0;
	struct str name = field(params, "name"), args = field(params, "args"), cwd = field(params, "cwd");
	int ok = is_command(&name);
	if (ok) {
		// args is the rest of the line, as typed.
		const char *p = args.p;
		size_t n = args.n;
		while (n && *p && strchr(WHITESPACE, *p))
			p++, n--;
		while (n && p[n - 1] && strchr(WHITESPACE, p[n - 1]))
			n--;
		begin_answer(id);
		fputs("{\"outcome\":", stdout);
		struct str data = {0}, msg = {0};
		const char *why;
		long long c[4];
		if (n == 0) {
			fputs("{\"kind\":\"error\",\"message\":\"usage: /wordcount <path>\"}", stdout);
		} else if (!readfile(&cwd, p, n, &data, &why)) {
			cannot(&msg, p, n, why);
			fputs("{\"kind\":\"error\",\"message\":", stdout);
			write_str(&msg);
			fputc('}', stdout);
		} else {
			count(&data, c);
			fputs("{\"kind\":\"view\",\"view\":", stdout);
			table(p, n, c);
			fputc('}', stdout);
		}
		fputc('}', stdout);
		end_message();
		free(data.p), free(msg.p);
	}
	free(name.p), free(args.p), free(cwd.p);
	return ok;
}

struct entry {
	struct str name, value;
};

static int by_name(const void *a, const void *b) {
	const struct str *x = &((const struct entry *)a)->name, *y = &((const struct entry *)b)->name;
	int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
	return c ? c : (x->n > y->n) - (x->n < y->n);
}

// complete answers the entries of the directory partial names that start
// with what follows its last "/"; a directory ends in "/", and hidden
// names show only once a "." is typed.
static int complete(const json *id, const json *params) {
	static const char *names[] = {"name", "partial", "cwd", NULL};
	if (!fields(params, names))
		return 0;
	struct str name = field(params, "name"), partial = field(params, "partial"), cwd = field(params, "cwd");
	int ok = is_command(&name);
	if (ok) {
		size_t cut = partial.n;
		while (cut && partial.p[cut - 1] != '/')
			cut--;
		const char *prefix = partial.p + cut;
		size_t plen = partial.n - cut;
		struct str where = {0};
		if (cut)
			where = join(&cwd, partial.p, cut);
		else
			add(&where, cwd.p, cwd.n);
		struct entry *found = NULL;
		size_t nfound = 0;
		int full_up = 0; // no memory for another entry
		DIR *d = where.n && !memchr(where.p, 0, where.n) ? opendir(where.p) : NULL;
		struct dirent *de;
		while (d && (de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") || l < plen || memcmp(de->d_name, prefix, plen) ||
			    (de->d_name[0] == '.' && !(plen && prefix[0] == '.')))
				continue;
			struct str full = join(&where, de->d_name, l);
			struct stat st;
			int dir = !stat(full.p, &st) && S_ISDIR(st.st_mode); // follows a symbolic link
			free(full.p);
			struct entry *more = realloc(found, (nfound + 1) * sizeof *found);
			if (!more) { // in wasm, address 0 is memory too: writing through NULL goes unnoticed
				full_up = 1;
				break;
			}
			found = more;
			struct entry *e = &found[nfound++];
			memset(e, 0, sizeof *e);
			add(&e->name, de->d_name, l);
			add(&e->value, partial.p, cut);
			add(&e->value, de->d_name, l);
			if (dir)
				add(&e->value, "/", 1);
		}
		if (d)
			closedir(d);
		if (full_up) {
			struct str m = {0};
			add(&m, NAME ": out of memory", strlen(NAME ": out of memory"));
			fail(id, -32603, &m);
			free(m.p);
		} else {
			qsort(found, nfound, sizeof *found, by_name); // byte order of the names
			begin_answer(id);
			fputs("{\"completions\":[", stdout);
			for (size_t i = 0; i < nfound; i++) {
				fputs(i ? ",{\"value\":" : "{\"value\":", stdout);
				write_str(&found[i].value);
				fputc('}', stdout);
			}
			fputs("]}", stdout);
			end_message();
		}
		for (size_t i = 0; i < nfound; i++)
			free(found[i].name.p), free(found[i].value.p);
		free(found), free(where.p);
	}
	free(name.p), free(partial.p), free(cwd.p);
	return ok;
}

// --- the loop ------------------------------------------------------------

static int initialized; // the handshake comes first, and once

static void handle(const json *msg) {
	const json *method = json_get(msg, "method"), *id = json_get(msg, "id"), *params = json_get(msg, "params");
	if (!method || method->type != JSON_STRING || !id)
		return; // a notification (tool/cancel, ...) or a response: nothing to answer
	int integer = id->type == JSON_NUMBER && !memchr(id->raw, '.', id->raw_len) && !memchr(id->raw, 'e', id->raw_len) &&
	              !memchr(id->raw, 'E', id->raw_len);
	if (id->type != JSON_STRING && !integer) {
		logf_("skipped a request whose id is neither a string nor an integer");
		return;
	}
	struct str m = {0};
	bad.n = 0;
	if (is(method, "initialize")) {
		if (initialized) {
			add(&m, NAME ": already initialized", strlen(NAME ": already initialized"));
			fail(id, -32600, &m);
		} else {
			initialized = 1;
			const json *asked = json_get(params, "protocol");
			double protocol;
			if (!json_number(asked, &protocol) || protocol != PROTOCOL)
				logf_("host asked for protocol %.*s; answering %d", asked ? (int)asked->raw_len : 4, asked ? asked->raw : "None", PROTOCOL);
			handshake(id);
		}
	} else if (!initialized) {
		add(&m, NAME ": ", strlen(NAME ": "));
		add(&m, method->str, method->len);
		add(&m, " before initialize", strlen(" before initialize"));
		fail(id, -32600, &m);
	} else if (is(method, "tool/call") || is(method, "command/run") || is(method, "command/complete")) {
		int ok = is(method, "tool/call") ? call_tool(id, params) : is(method, "command/run") ? run_command(id, params) : complete(id, params);
		if (!ok)
			fail(id, -32602, &bad);
	} else {
		add(&m, NAME ": no method ", strlen(NAME ": no method "));
		quoted(&m, method->str, method->len);
		fail(id, -32601, &m);
	}
	free(m.p);
}

int main(void) {
	logf_("started (protocol %d)", PROTOCOL);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, stdin)) > 0) { // one message per line, until EOF
		size_t i = 0;
		while (i < (size_t)n && strchr(WHITESPACE, line[i]) && line[i])
			i++;
		if (i == (size_t)n)
			continue;
		json *msg = json_parse(line, n);
		if (!msg)
			logf_("skipped a line that is not JSON");
		else if (msg->type != JSON_OBJECT)
			logf_("skipped a line that is not a JSON-RPC message");
		else
			handle(msg);
		json_free(msg);
	}
	return 0; // stdin ended: the host is done with us
}

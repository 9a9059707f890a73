// {{.Name}}: a bingo plugin in C, built to WebAssembly (WASI preview1) with
// wasi-libc and run in bingo's sandbox. The wire is JSON-RPC 2.0, one
// message a line, on stdin and stdout; stderr is the plugin's log. See
// README.md.
//
// The module has one thread. A tool that works a while looks for
// tool/cancel between its steps: it waits for input with poll (which wakes
// as soon as a line comes) and reads stdin with read into its own buffer,
// where it looks first: a line already read is invisible to poll (and so
// is one in stdio's buffer, which is why stdin is never read with stdio).
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "json.h"

#define NAME "{{.Name}}"
#define VERSION "0.1.0"
#define PROTOCOL 5
#define STEP_MS 25

static const char *words[] = {"hello", "help", "world"};

// --- stdin: what was read and not yet taken, and lines put aside -------

static char *buf;
static size_t buf_len, buf_cap;
static int eof;

struct line {
	char *text;
	struct line *next;
};
static struct line *later, **later_tail = &later;

// fill reads what comes within wait_ms (-1: waits for it).
static void fill(int wait_ms) {
	if (wait_ms >= 0) {
		struct pollfd p = {.fd = 0, .events = POLLIN};
		if (poll(&p, 1, wait_ms) <= 0)
			return;
	}
	if (buf_cap - buf_len < 65536) {
		buf_cap = buf_cap * 2 + 65536;
		if (!(buf = realloc(buf, buf_cap))) {
			fprintf(stderr, NAME ": out of memory\n");
			exit(1);
		}
	}
	ssize_t n = read(0, buf + buf_len, buf_cap - buf_len);
	if (n <= 0)
		eof = 1;
	else
		buf_len += n;
}

static void out_of_memory(const char *text, size_t n);

// take returns the next whole line read (NUL-terminated, without its
// newline; the caller frees it), or NULL. A line there is no memory to
// copy is answered out of memory (out_of_memory) where it lies.
static char *take(void) {
	char *nl;
	while ((nl = memchr(buf, '\n', buf_len))) {
		size_t n = nl - buf;
		char *line = malloc(n + 1);
		if (line) {
			memcpy(line, buf, n);
			line[n] = 0;
		} else
			out_of_memory(buf, n);
		buf_len -= n + 1;
		memmove(buf, nl + 1, buf_len);
		if (line)
			return line;
	}
	return NULL;
}

// next returns the next message to handle, waiting for it; NULL at EOF.
static char *next(void) {
	for (;;) {
		if (later) {
			struct line *l = later;
			char *text = l->text;
			if (!(later = l->next))
				later_tail = &later;
			free(l);
			return text;
		}
		char *line = take();
		if (line)
			return line;
		if (eof)
			return NULL;
		fill(-1);
	}
}

static void put_aside(char *text) {
	struct line *l = malloc(sizeof *l);
	if (!l) {
		out_of_memory(text, strlen(text));
		free(text);
		return;
	}
	l->text = text;
	l->next = NULL;
	*later_tail = l;
	later_tail = &l->next;
}

// is_cancel says whether text is tool/cancel for the call whose callId
// is call (its JSON text).
static int is_cancel(const char *text, const json *call) {
	json *m = json_parse(text, strlen(text));
	const char *method = json_string(json_get(m, "method"));
	json *id = json_get(json_get(m, "params"), "callId");
	int yes = method && !strcmp(method, "tool/cancel") && id && call &&
	          id->raw_len == call->raw_len && !memcmp(id->raw, call->raw, id->raw_len);
	json_free(m);
	return yes;
}

static long long now_ms(void) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

// cancelled_within waits ms and says whether tool/cancel came for call
// meanwhile (or stdin ended). Other lines are put aside for later.
static int cancelled_within(const json *call, int ms) {
	long long end = now_ms() + ms;
	for (struct line **l = &later; *l; l = &(*l)->next)
		if (is_cancel((*l)->text, call)) {
			struct line *gone = *l;
			if (!(*l = gone->next))
				later_tail = l;
			free(gone->text);
			free(gone);
			return 1;
		}
	for (;;) {
		char *line;
		while ((line = take())) {
			if (is_cancel(line, call)) {
				free(line);
				return 1;
			}
			put_aside(line);
		}
		long long left = end - now_ms();
		if (eof)
			return 1;
		if (left <= 0)
			return 0;
		fill((int)left);
	}
}

// --- the wire ------------------------------------------------------------

// The messages are written whole to stdout, then flushed: stdout is the
// wire and nothing else.
static void begin_answer(const json *id) {
	printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":", (int)id->raw_len, id->raw);
}

static void end_message(void) {
	fputs("}\n", stdout);
	fflush(stdout);
}

static void fail(const json *id, int code, const char *message) {
	printf("{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"error\":{\"code\":%d,\"message\":", (int)id->raw_len, id->raw, code);
	json_write_string(stdout, message, strlen(message));
	fputs("}", stdout);
	end_message();
}

// out_of_memory answers the request text (n bytes) that there was no
// memory to read or to carry out, if its id can be found: in wasm,
// address 0 is memory like any other, so an allocation that failed
// unchecked would go on writing over the module's own data.
static void out_of_memory(const char *text, size_t n) {
	json *id = json_id(text, n);
	if (id)
		fail(id, -32603, NAME ": out of memory");
	else
		fprintf(stderr, NAME ": out of memory: skipped a line\n");
	json_free(id);
}

static void text_output(const json *id, const char *text, int is_error) {
	begin_answer(id);
	fputs("{\"output\":{\"parts\":[{\"type\":\"text\",\"text\":", stdout);
	json_write_string(stdout, text, strlen(text));
	fputs(is_error ? "}],\"isError\":true}}" : "}]}}", stdout);
	end_message();
}

// --- what the plugin does -----------------------------------------------

static void initialize(const json *id) {
	begin_answer(id);
	printf("{\"protocol\":%d,\"name\":\"%s\",\"version\":\"%s\","
	       "\"tools\":[{\"name\":\"greet\",\"description\":\"Greets someone by name, in steps (one by default), each reported as progress.\","
	       "\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	       "\"name\":{\"type\":\"string\",\"description\":\"who to greet\"},"
	       "\"steps\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"description\":\"how many steps of 25 ms the greeting takes\"}},"
	       "\"required\":[\"name\"]}}],"
	       "\"commands\":[{\"name\":\"%s\",\"hint\":\"greet someone\",\"args\":{\"kind\":\"free\",\"hint\":\"<name>\"},"
	       "\"instant\":true,\"family\":\"plugin\"}]}",
	       PROTOCOL, NAME, VERSION, NAME);
	end_message();
}

static void greet(const json *id, const json *params) {
	const char *tool = json_string(json_get(params, "name"));
	if (!tool || strcmp(tool, "greet")) {
		fail(id, -32602, "no such tool");
		return;
	}
	const json *input = json_get(params, "input"), *call = json_get(params, "callId");
	const char *who = json_string(json_get(input, "name"));
	if (!who || !*who) {
		text_output(id, "greet: name must be a non-empty string", 1);
		return;
	}
	double asked = 1;
	json_number(json_get(input, "steps"), &asked);
	long steps = asked < 1 ? 1 : asked > 1000 ? 1000 : (long)asked;
	char out[256];
	for (long step = 1; step <= steps; step++) {
		if (step > 1 && cancelled_within(call, STEP_MS)) {
			snprintf(out, sizeof out, "greet: stopped at step %ld of %ld: cancelled", step, steps);
			text_output(id, out, 1);
			return;
		}
		// Progress is a notification, sent while the call runs.
		printf("{\"jsonrpc\":\"2.0\",\"method\":\"tool/progress\",\"params\":{\"callId\":%.*s,\"tail\":\"step %ld of %ld\"}",
		       call ? (int)call->raw_len : 4, call ? call->raw : "null", step, steps);
		end_message();
	}
	char *hello = malloc(strlen(who) + 10);
	if (!hello) {
		fail(id, -32603, NAME ": out of memory");
		return;
	}
	sprintf(hello, "Hello, %s!", who);
	text_output(id, hello, 0);
	free(hello);
}

static void run_command(const json *id, const json *params) {
	const char *args = json_string(json_get(params, "args"));
	if (!args)
		args = "";
	while (*args == ' ' || *args == '\t')
		args++;
	size_t n = strlen(args);
	while (n > 0 && (args[n - 1] == ' ' || args[n - 1] == '\t'))
		n--;
	char *hello = n ? malloc(n + 10) : NULL;
	if (n && !hello) {
		fail(id, -32603, NAME ": out of memory");
		return;
	}
	begin_answer(id);
	if (n == 0) {
		fputs("{\"outcome\":{\"kind\":\"error\",\"message\":\"usage: /" NAME " <name>\"}}", stdout);
	} else {
		sprintf(hello, "Hello, %.*s!", (int)n, args);
		fputs("{\"outcome\":{\"kind\":\"text\",\"text\":", stdout);
		json_write_string(stdout, hello, strlen(hello));
		fputs("}}", stdout);
		free(hello);
	}
	end_message();
}

static void complete(const json *id, const json *params) {
	const char *partial = json_string(json_get(params, "partial"));
	if (!partial)
		partial = "";
	begin_answer(id);
	fputs("{\"completions\":[", stdout);
	int first = 1;
	for (size_t i = 0; i < sizeof words / sizeof *words; i++)
		if (!strncmp(words[i], partial, strlen(partial))) {
			printf("%s{\"value\":\"%s\"}", first ? "" : ",", words[i]);
			first = 0;
		}
	fputs("]}", stdout);
	end_message();
}

int main(void) {
	fprintf(stderr, NAME ": started (protocol %d)\n", PROTOCOL);
	char *line;
	while ((line = next())) {
		errno = 0;
		json *msg = json_parse(line, strlen(line));
		const char *method = json_string(json_get(msg, "method"));
		const json *id = json_get(msg, "id"), *params = json_get(msg, "params");
		if (!msg && errno == ENOMEM)
			out_of_memory(line, strlen(line));
		else if (!msg)
			fprintf(stderr, NAME ": skipped a line that is not JSON\n");
		else if (!method || !id)
			; // a notification (a late tool/cancel, …) or an answer: nothing to do
		else if (!strcmp(method, "initialize"))
			initialize(id);
		else if (!strcmp(method, "tool/call"))
			greet(id, params);
		else if (!strcmp(method, "command/run"))
			run_command(id, params);
		else if (!strcmp(method, "command/complete"))
			complete(id, params);
		else
			fail(id, -32601, "method not found");
		json_free(msg);
		free(line);
	}
	return 0;
}

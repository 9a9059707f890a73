// A WASI guest that runs a program of WASI calls read from its stdin: the
// guest of FuzzWASICalls (wasicalls_test.go), which builds it with
//
//	clang --target=wasm32-wasi -O2 -o guest.wasm guest.c
//
// Every call goes straight to the host's import, with the arguments the
// program chose: paths with "..", ".bingo" in two spellings, symbolic
// links planted by the test, NUL bytes and bytes that are not UTF-8;
// descriptors it opened, renumbered, closed or never had; pointers past
// its memory; offsets, lengths and cookies of every size the disk can
// take. For each call it writes one line to stdout, "<op> <errno>", and
// what the host told it of a file's identity, which the test compares
// with what must stay out of reach:
//
//	S <dev> <ino>   a file_stat (fd_filestat_get, path_filestat_get, an open)
//	D <ino> <name>  a directory entry (fd_readdir)
//
// The program is bytes: each call is an opcode byte and the bytes its
// arguments take; a program that ends mid-call reads zeros.
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define IMPORT(name) __attribute__((import_module("wasi_snapshot_preview1"), import_name(#name)))

IMPORT(path_open) int32_t w_path_open(int32_t, int32_t, int32_t, int32_t, int32_t, int64_t, int64_t, int32_t, int32_t);
IMPORT(fd_close) int32_t w_fd_close(int32_t);
IMPORT(fd_read) int32_t w_fd_read(int32_t, int32_t, int32_t, int32_t);
IMPORT(fd_write) int32_t w_fd_write(int32_t, int32_t, int32_t, int32_t);
IMPORT(fd_pread) int32_t w_fd_pread(int32_t, int32_t, int32_t, int64_t, int32_t);
IMPORT(fd_pwrite) int32_t w_fd_pwrite(int32_t, int32_t, int32_t, int64_t, int32_t);
IMPORT(fd_seek) int32_t w_fd_seek(int32_t, int64_t, int32_t, int32_t);
IMPORT(fd_tell) int32_t w_fd_tell(int32_t, int32_t);
IMPORT(fd_readdir) int32_t w_fd_readdir(int32_t, int32_t, int32_t, int64_t, int32_t);
IMPORT(fd_filestat_get) int32_t w_fd_filestat_get(int32_t, int32_t);
IMPORT(fd_filestat_set_size) int32_t w_fd_filestat_set_size(int32_t, int64_t);
IMPORT(fd_filestat_set_times) int32_t w_fd_filestat_set_times(int32_t, int64_t, int64_t, int32_t);
IMPORT(fd_fdstat_get) int32_t w_fd_fdstat_get(int32_t, int32_t);
IMPORT(fd_fdstat_set_flags) int32_t w_fd_fdstat_set_flags(int32_t, int32_t);
IMPORT(fd_prestat_get) int32_t w_fd_prestat_get(int32_t, int32_t);
IMPORT(fd_prestat_dir_name) int32_t w_fd_prestat_dir_name(int32_t, int32_t, int32_t);
IMPORT(fd_renumber) int32_t w_fd_renumber(int32_t, int32_t);
IMPORT(fd_allocate) int32_t w_fd_allocate(int32_t, int64_t, int64_t);
IMPORT(fd_advise) int32_t w_fd_advise(int32_t, int64_t, int64_t, int32_t);
IMPORT(fd_sync) int32_t w_fd_sync(int32_t);
IMPORT(fd_datasync) int32_t w_fd_datasync(int32_t);
IMPORT(path_filestat_get) int32_t w_path_filestat_get(int32_t, int32_t, int32_t, int32_t, int32_t);
IMPORT(path_filestat_set_times) int32_t w_path_filestat_set_times(int32_t, int32_t, int32_t, int32_t, int64_t, int64_t, int32_t);
IMPORT(path_create_directory) int32_t w_path_create_directory(int32_t, int32_t, int32_t);
IMPORT(path_remove_directory) int32_t w_path_remove_directory(int32_t, int32_t, int32_t);
IMPORT(path_unlink_file) int32_t w_path_unlink_file(int32_t, int32_t, int32_t);
IMPORT(path_rename) int32_t w_path_rename(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
IMPORT(path_symlink) int32_t w_path_symlink(int32_t, int32_t, int32_t, int32_t, int32_t);
IMPORT(path_link) int32_t w_path_link(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
IMPORT(path_readlink) int32_t w_path_readlink(int32_t, int32_t, int32_t, int32_t, int32_t, int32_t);
IMPORT(poll_oneoff) int32_t w_poll_oneoff(int32_t, int32_t, int32_t, int32_t);
IMPORT(random_get) int32_t w_random_get(int32_t, int32_t);

#define P(x) ((int32_t)(uintptr_t)(x))

// The program, and where the next call's bytes are.
static uint8_t prog[1 << 16];
static size_t plen, pc;

static uint8_t next(void) { return pc < plen ? prog[pc++] : 0; }
static uint32_t next16(void) { return next() | (uint32_t)next() << 8; }

// Output, written with fd_write on descriptor 1, whatever the program did
// to it (a program that closes or renumbers 1 loses the rest).
static void out(const char *s) {
	uint32_t iov[2] = {(uint32_t)P(s), (uint32_t)strlen(s)};
	int32_t n;
	w_fd_write(1, P(iov), 1, P(&n));
}

static char line[1024];

// The descriptors the program has: the mount's (3), those its opens
// returned, and stdio.
static int32_t fds[16] = {3, 0, 1, 2};
static int nfds = 4;
static char mount[512];

static int32_t fd(void) {
	uint8_t b = next();
	if (b >= 0xf0)
		return (int32_t)(b - 0xf0) * 1000 - 1; // never open: -1, 999, 1999, …
	return fds[b % nfds];
}

static void keep(int32_t f) {
	if (nfds < 16)
		fds[nfds++] = f;
	else
		fds[4 + next() % 12] = f;
}

// Path pieces: the ones that must lead nowhere, the links the test planted
// (out, abs, hid, up: to outside the mount and to the hidden directory),
// and names to make.
static const char *pieces[] = {
	"a", "b", "c", "..", ".", ".bingo", ".BINGO", "out", "abs", "hid", "up",
	"secret.txt", "a/b", "", "x\xff", "n\0ul", "../..", "//", "new", "l",
};
#define NPIECES (sizeof pieces / sizeof pieces[0])

static char pathbuf[2][4096];

// path builds a path of one to four pieces (absolute, under the mount's
// own path, when the program says so, or a name longer than any file
// system takes) and returns its length.
static int32_t path(int which) {
	char *p = pathbuf[which];
	uint8_t b = next();
	size_t n = 0;
	if (b & 0x20) {
		memset(p, 'L', 3000);
		return 3000;
	}
	if (b & 4) {
		n = strlen(mount);
		memcpy(p, mount, n);
		p[n++] = '/';
	}
	for (int i = 0; i <= (b & 3); i++) {
		uint8_t k = next() % NPIECES;
		const char *s = pieces[k];
		size_t len = k == 15 ? 4 : strlen(s); // "n\0ul" keeps its NUL
		if (i > 0)
			p[n++] = '/';
		memcpy(p + n, s, len);
		n += len;
	}
	return (int32_t)n;
}

static void stat_line(const uint8_t *st) {
	uint64_t dev, ino;
	memcpy(&dev, st, 8);
	memcpy(&ino, st + 8, 8);
	snprintf(line, sizeof line, "S %llu %llu\n", (unsigned long long)dev, (unsigned long long)ino);
	out(line);
}

static void dirents(const uint8_t *buf, uint32_t used) {
	uint32_t i = 0;
	while (i + 24 <= used) {
		uint64_t ino;
		uint32_t namlen;
		memcpy(&ino, buf + i + 8, 8);
		memcpy(&namlen, buf + i + 16, 4);
		uint32_t shown = namlen;
		if (i + 24 + shown > used)
			shown = used - i - 24;
		if (shown > 200)
			shown = 200;
		char name[201];
		memcpy(name, buf + i + 24, shown);
		name[shown] = 0;
		for (uint32_t j = 0; j < shown; j++)
			if (name[j] < 0x20 || name[j] == ' ')
				name[j] = '?';
		snprintf(line, sizeof line, "D %llu %s\n", (unsigned long long)ino, name);
		out(line);
		if (namlen > used)
			break;
		i += 24 + namlen;
	}
}

static uint8_t buf[1 << 16];
static uint8_t st[64];

// offset is an offset or a length the program chose: small, near a page,
// or up to 1 MiB (the test's disk is not the host's to fill).
static int64_t offset(void) {
	uint8_t b = next();
	switch (b >> 6) {
	case 0:
		return b;
	case 1:
		return (int64_t)(b & 0x3f) << 12;
	case 2:
		return (int64_t)(b & 0x3f) << 14;
	}
	return -(int64_t)(b & 0x3f); // negative: refused
}

static int32_t call(uint8_t op) {
	int32_t e = 0, r, n;
	int64_t o64;
	uint32_t iov[2];
	switch (op % 30) {
	case 0: { // path_open
		int32_t d = fd(), lk = next() & 1, oflags = next() & 0xf, fdflags = next() & 0x1f;
		int32_t len = path(0);
		int64_t rights = (next() & 1) ? -1 : 0x2;
		e = w_path_open(d, lk, P(pathbuf[0]), len, oflags, rights, rights, fdflags, P(&r));
		if (e == 0) {
			keep(r);
			if (w_fd_filestat_get(r, P(st)) == 0)
				stat_line(st);
		}
		return e;
	}
	case 1:
		return w_fd_close(fd());
	case 2:
		iov[0] = P(buf), iov[1] = (uint32_t)next() * 64;
		return w_fd_read(fd(), P(iov), 1, P(&n));
	case 3:
		memset(buf, 'z', 256);
		iov[0] = P(buf), iov[1] = next();
		return w_fd_write(fd(), P(iov), 1, P(&n));
	case 4:
		iov[0] = P(buf), iov[1] = (uint32_t)next() * 64;
		return w_fd_pread(fd(), P(iov), 1, offset(), P(&n));
	case 5:
		iov[0] = P(buf), iov[1] = next();
		return w_fd_pwrite(fd(), P(iov), 1, offset(), P(&n));
	case 6:
		return w_fd_seek(fd(), offset(), next() % 4, P(&o64));
	case 7: { // fd_readdir, from a cookie of any kind
		int32_t d = fd();
		uint8_t c = next();
		int64_t cookie = c < 0x80 ? c : c < 0xc0 ? (int64_t)1 << (c & 0x3f) : -1;
		uint32_t size = 24 + (uint32_t)next() * 16;
		uint32_t used = 0;
		e = w_fd_readdir(d, P(buf), (int32_t)size, cookie, P(&used));
		if (e == 0)
			dirents(buf, used <= size ? used : size);
		return e;
	}
	case 8:
		e = w_fd_filestat_get(fd(), P(st));
		if (e == 0)
			stat_line(st);
		return e;
	case 9: {
		int32_t d = fd(), lk = next() & 1, len = path(0);
		e = w_path_filestat_get(d, lk, P(pathbuf[0]), len, P(st));
		if (e == 0)
			stat_line(st);
		return e;
	}
	case 10: {
		int32_t d = fd(), len = path(0);
		return w_path_create_directory(d, P(pathbuf[0]), len);
	}
	case 11: {
		int32_t d = fd(), len = path(0);
		return w_path_remove_directory(d, P(pathbuf[0]), len);
	}
	case 12: {
		int32_t d = fd(), len = path(0);
		return w_path_unlink_file(d, P(pathbuf[0]), len);
	}
	case 13: {
		int32_t d = fd(), len = path(0), d2 = fd(), len2 = path(1);
		return w_path_rename(d, P(pathbuf[0]), len, d2, P(pathbuf[1]), len2);
	}
	case 14: { // a link to anything at all
		int32_t len = path(0), d = fd(), len2 = path(1);
		return w_path_symlink(P(pathbuf[0]), len, d, P(pathbuf[1]), len2);
	}
	case 15: {
		int32_t d = fd(), lk = next() & 1, len = path(0), d2 = fd(), len2 = path(1);
		return w_path_link(d, lk, P(pathbuf[0]), len, d2, P(pathbuf[1]), len2);
	}
	case 16: {
		int32_t d = fd(), len = path(0);
		return w_path_readlink(d, P(pathbuf[0]), len, P(buf), next(), P(&n));
	}
	case 17:
		return w_fd_renumber(fd(), fd());
	case 18:
		return w_fd_filestat_set_size(fd(), offset());
	case 19: {
		int32_t d = fd(), lk = next() & 1, len = path(0);
		return w_path_filestat_set_times(d, lk, P(pathbuf[0]), len, 1, 2, next() & 0xf);
	}
	case 20:
		return w_fd_fdstat_get(fd(), P(buf));
	case 21:
		return w_fd_fdstat_set_flags(fd(), next() & 0x1f);
	case 22: {
		int32_t d = fd();
		e = w_fd_prestat_get(d, P(buf));
		if (e == 0)
			e = w_fd_prestat_dir_name(d, P(buf + 8), next());
		return e;
	}
	case 23: { // poll_oneoff: up to four subscriptions, clocks of at most 1 ms
		uint8_t sub[4 * 48], ev[4 * 32];
		int32_t ns = 1 + next() % 4;
		memset(sub, 0, sizeof sub);
		for (int i = 0; i < ns; i++) {
			uint8_t *s = sub + i * 48;
			uint8_t kind = next() % 4;
			s[8] = kind == 3 ? 7 : kind; // 7: no such event type
			if (kind == 0) {
				uint64_t t = (uint64_t)next() * 4000;
				memcpy(s + 24, &t, 8);
			} else {
				int32_t f = fd();
				memcpy(s + 16, &f, 4);
			}
		}
		return w_poll_oneoff(P(sub), P(ev), ns, P(&n));
	}
	case 24:
		return w_fd_allocate(fd(), offset(), offset());
	case 25:
		return w_random_get(P(buf), next() * 16);
	case 26:
		return next() & 1 ? w_fd_sync(fd()) : w_fd_datasync(fd());
	case 27:
		return w_fd_advise(fd(), offset(), offset(), next() % 7);
	case 28:
		return w_fd_filestat_set_times(fd(), 1, 2, next() & 0xf);
	case 29: { // pointers and lengths past the guest's memory
		int32_t far = (int32_t)(0xffff0000u | next16());
		switch (next() % 5) {
		case 0:
			return w_path_open(fd(), 0, far, 0x10000, 0, -1, -1, 0, P(&r));
		case 1:
			iov[0] = (uint32_t)far, iov[1] = 0x10000;
			return w_fd_write(fd(), P(iov), 1, P(&n));
		case 2:
			return w_fd_read(fd(), far, 1 << 20, P(&n));
		case 3:
			return w_fd_readdir(fd(), far, 0x7fffffff, 0, P(&n));
		}
		return w_path_filestat_get(fd(), 0, P(pathbuf[0]), 0x7fffffff, far);
	}
	}
	return 0;
}

int main(void) {
	// The program: everything on stdin.
	while (plen < sizeof prog) {
		uint32_t iov[2] = {(uint32_t)P(prog + plen), (uint32_t)(sizeof prog - plen)};
		int32_t n = 0;
		if (w_fd_read(0, P(iov), 1, P(&n)) != 0 || n == 0)
			break;
		plen += (size_t)n;
	}
	if (w_fd_prestat_get(3, P(buf)) == 0) {
		uint32_t len;
		memcpy(&len, buf + 4, 4);
		if (len < sizeof mount && w_fd_prestat_dir_name(3, P(mount), (int32_t)len) == 0)
			mount[len] = 0;
	}
	for (int i = 0; i < 512 && pc < plen; i++) {
		uint8_t op = next();
		int32_t e = call(op);
		snprintf(line, sizeof line, "%u %d\n", op % 30, e);
		out(line);
	}
	return 0;
}

// cguest is the test guest of transport/wasm that calls WASI the way a C
// program does, or directly with arguments no Go guest would pass. It
// reads one command per line on stdin and answers each with one line:
//
//	read PATH               ok <content> | err <errno>
//	ls DIR                  ok <name> <name> ... (sorted as read) | err <errno>
//	write PATH TEXT         ok | err <errno>
//	openrw PATH             open(PATH, O_RDWR): ok | err <errno>
//	rewind DIR NEW TARGET   lists DIR, renames it to NEW, puts a link to
//	                        TARGET where it was, lists the open DIR again
//	                        from cookie 0: ok <names> | err <errno>
//	mkpath N                makes the N-byte path "a/a/...": ok
//	openpath MOUNT          path_open of it, relative to the pre-opened
//	                        MOUNT: ok | err <errno>
//	swap NAME TARGET N      N times: a link to TARGET, then a file, renamed
//	                        onto NAME: ok
//	futimes PATH NEW        opens PATH, renames it to NEW, makes a new PATH
//	                        and sets the open file's times: ok | err <errno>
//	hammer NAME N           N times: opens NAME with O_TRUNC, with O_CREAT,
//	                        and sets its times: ok
//
// Errors are WASI errno numbers (__wasi_errno_t), so the test needs no
// table of names. Built by the tests with clang --target=wasm32-wasi.
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <wasi/api.h>

static void fail(int e) { printf("err %d\n", e); }

// wasi-libc's errno values are the WASI errno numbers.
static void errno_fail(void) { fail(errno); }

static int names(DIR *d, char *out, size_t cap) {
	struct dirent *de;
	size_t n = 0;
	out[0] = 0;
	while ((de = readdir(d)) != NULL) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		size_t l = strlen(de->d_name);
		if (n + l + 2 >= cap)
			break;
		out[n++] = ' ';
		memcpy(out + n, de->d_name, l);
		n += l;
		out[n] = 0;
	}
	return 0;
}

// preopen returns the descriptor of the pre-opened directory named dir.
static int preopen(const char *dir) {
	for (__wasi_fd_t fd = 3;; fd++) {
		__wasi_prestat_t ps;
		if (__wasi_fd_prestat_get(fd, &ps) != 0)
			return -1;
		size_t len = ps.u.dir.pr_name_len;
		char *name = malloc(len + 1);
		if (__wasi_fd_prestat_dir_name(fd, (uint8_t *)name, len) != 0) {
			free(name);
			return -1;
		}
		name[len] = 0;
		int same = !strcmp(name, dir);
		free(name);
		if (same)
			return fd;
	}
}

static char line[1 << 16], out[1 << 16], *path;

int main(void) {
	setvbuf(stdout, NULL, _IOLBF, 0);
	while (fgets(line, sizeof line, stdin)) {
		line[strcspn(line, "\n")] = 0;
		char *cmd = strtok(line, " ");
		char *a = strtok(NULL, " "), *b = strtok(NULL, " "), *c = strtok(NULL, " ");
		if (!cmd)
			continue;
		if (!strcmp(cmd, "read") && a) {
			int fd = open(a, O_RDONLY);
			if (fd < 0) {
				errno_fail();
				continue;
			}
			ssize_t n = read(fd, out, sizeof out - 1);
			close(fd);
			if (n < 0) {
				errno_fail();
				continue;
			}
			out[n] = 0;
			printf("ok %s\n", out);
		} else if (!strcmp(cmd, "openrw") && a) {
			int fd = open(a, O_RDWR);
			if (fd < 0) {
				errno_fail();
				continue;
			}
			close(fd);
			printf("ok\n");
		} else if (!strcmp(cmd, "write") && a && b) {
			int fd = open(a, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd < 0) {
				errno_fail();
				continue;
			}
			ssize_t n = write(fd, b, strlen(b));
			close(fd);
			if (n < 0)
				errno_fail();
			else
				printf("ok\n");
		} else if (!strcmp(cmd, "ls") && a) {
			DIR *d = opendir(a);
			if (!d) {
				errno_fail();
				continue;
			}
			names(d, out, sizeof out);
			closedir(d);
			printf("ok%s\n", out);
		} else if (!strcmp(cmd, "rewind") && a && b && c) {
			DIR *d = opendir(a);
			if (!d) {
				errno_fail();
				continue;
			}
			names(d, out, sizeof out);
			if (rename(a, b) != 0 || symlink(c, a) != 0) {
				errno_fail();
				closedir(d);
				continue;
			}
			rewinddir(d);
			names(d, out, sizeof out);
			closedir(d);
			printf("ok%s\n", out);
		} else if (!strcmp(cmd, "mkpath") && a) {
			size_t n = strtoul(a, NULL, 10);
			free(path);
			path = malloc(n + 1);
			if (!path) {
				fail(__WASI_ERRNO_NOMEM);
				continue;
			}
			for (size_t i = 0; i < n; i++)
				path[i] = i % 2 ? '/' : 'a';
			path[n] = 0;
			printf("ok\n");
		} else if (!strcmp(cmd, "openpath") && a) {
			int dir = preopen(a);
			if (dir < 0 || !path) {
				fail(__WASI_ERRNO_BADF);
				continue;
			}
			__wasi_fd_t fd;
			__wasi_errno_t e = __wasi_path_open(dir, 0, path, 0, __WASI_RIGHTS_FD_READ, 0, 0, &fd);
			if (e != 0) {
				fail(e);
				continue;
			}
			(void)__wasi_fd_close(fd);
			printf("ok\n");
		} else if (!strcmp(cmd, "swap") && a && b && c) {
			// The two names renamed onto NAME live beside it.
			char tmpl[4096], tmpf[4096];
			snprintf(tmpl, sizeof tmpl, "%s.l", a);
			snprintf(tmpf, sizeof tmpf, "%s.f", a);
			for (long i = strtol(c, NULL, 10); i > 0; i--) {
				unlink(tmpl);
				if (symlink(b, tmpl) == 0)
					rename(tmpl, a);
				int fd = open(tmpf, O_WRONLY | O_CREAT | O_TRUNC, 0600);
				if (fd >= 0) {
					close(fd);
					rename(tmpf, a);
				}
			}
			printf("ok\n");
		} else if (!strcmp(cmd, "futimes") && a && b) {
			int fd = open(a, O_RDONLY);
			if (fd < 0 || rename(a, b) != 0) {
				errno_fail();
				continue;
			}
			close(open(a, O_WRONLY | O_CREAT, 0600));
			struct timespec ts[2] = {{1, 0}, {1, 0}};
			int r = futimens(fd, ts);
			close(fd);
			if (r != 0)
				errno_fail();
			else
				printf("ok\n");
		} else if (!strcmp(cmd, "hammer") && a && b) {
			for (long i = strtol(b, NULL, 10); i > 0; i--) {
				int fd = open(a, O_WRONLY | O_TRUNC);
				if (fd >= 0)
					close(fd);
				fd = open(a, O_WRONLY | O_CREAT, 0600);
				if (fd >= 0)
					close(fd);
				struct timespec ts[2] = {{1, 0}, {1, 0}};
				utimensat(AT_FDCWD, a, ts, 0);
			}
			printf("ok\n");
		} else {
			printf("err unknown\n");
		}
	}
	return 0;
}

// SPDX-License-Identifier: BSD-2-Clause
/*
 * rtrig-vm-agent: the guest agent of the rtrig Linux VM test bed (static).
 *
 * It speaks on a serial line (default /dev/ttyS1, raw, 115200 baud) with the
 * host side of the test bed, which plays the rig:
 *   host -> guest, one command per line:
 *     S <line> <0|1>   set input line 0..2 of the virtual GPIO chip (a write
 *                      to /dev/rtrig-vgpio, opened on first use)
 *     C <command>      run /bin/sh -c <command>; when it exits the reply is
 *                      "R <rc> <nbytes>\n" and its stdout+stderr bytes. rc is
 *                      the exit status, 128+N when killed by signal N.
 *                      Commands run one after another; S lines and E lines
 *                      go on while one runs. Output of background jobs
 *                      started by a command is dropped once it has exited:
 *                      redirect it to a file.
 *     Q                sync and power off at once (poweroff -f)
 *   guest -> host:
 *     E <t_ns> <line> <value>   every record read from /dev/rtrig-vgpio
 *                      (t_ns: CLOCK_MONOTONIC of the level change)
 *     L <count>        records the ring dropped
 *   A reply's bytes are never split by an E line. Malformed commands are
 *   reported on stderr (the console) and otherwise ignored.
 */

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/reboot.h>
#include <sys/signalfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "rtrig_fail.h"

#define PROG "rtrig-vm-agent"
#define LINE_MAX_BYTES 8192
#define OUT_MAX_BYTES (64u << 20)
#define MAX_ORPHANS 16
#define LOST_LINE 0xFFFFFFFFu

static const char usage[] =
	"usage: " PROG " [--tty PATH] [--vgpio PATH] [--no-poweroff]\n"
	"\n"
	"Guest agent of the rtrig VM test bed: sets the virtual GPIO inputs, streams\n"
	"the outputs' level changes and runs commands for the host, over a serial line.\n"
	"\n"
	"  --tty PATH      serial line (default /dev/ttyS1; set raw, 115200 baud)\n"
	"  --vgpio PATH    virtual GPIO device (default /dev/rtrig-vgpio)\n"
	"  --no-poweroff   Q syncs and exits 0 instead of powering off (for tests)\n"
	"  --help          this text\n"
	"\n"
	"Protocol (one line each):\n"
	"  host:  S <line> <0|1>   set an input      C <command>   run via /bin/sh -c\n"
	"         Q                sync, poweroff -f\n"
	"  guest: R <rc> <nbytes>\\n<bytes>  a command's exit status and output\n"
	"         E <t_ns> <line> <value>    an output's level change\n"
	"         L <count>                  level changes lost\n";

struct vg_rec {
	uint64_t t_ns;
	uint32_t line;
	uint32_t value;
};

struct cmd {
	struct cmd *next;
	char text[];
};

static const char *tty_path = "/dev/ttyS1";
static const char *vgpio_path = "/dev/rtrig-vgpio";
static int no_poweroff;

static int tty_fd = -1, vg_fd = -1, sig_fd = -1;
static struct cmd *queue_head, *queue_tail;
static pid_t child = -1;
static int child_out = -1; /* read end of the running command's output */
static char *out_buf;
static size_t out_len, out_cap;
static int orphans[MAX_ORPHANS];
static int n_orphans;
static unsigned char vg_buf[sizeof(struct vg_rec) * 256];
static size_t vg_len;

static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* Writes all of buf to the serial line; the agent cannot go on without it. */
static void tty_write(const void *buf, size_t len)
{
	const char *p = buf;
	ssize_t n;

	while (len) {
		n = write(tty_fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pf = { .fd = tty_fd, .events = POLLOUT };

			poll(&pf, 1, -1);
			continue;
		}
		if (n <= 0)
			fail(1, "writing %s: %s", tty_path, n < 0 ? strerror(errno) : "no progress");
		p += n;
		len -= n;
	}
}

/* ------------------------------------------------------------ S and E */

static int vg_open(void)
{
	if (vg_fd < 0) {
		vg_fd = open(vgpio_path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
		if (vg_fd < 0)
			note("cannot open %s: %s", vgpio_path, strerror(errno));
		vg_len = 0;
	}
	return vg_fd;
}

static void vg_close(const char *why)
{
	note("closing %s: %s", vgpio_path, why);
	close(vg_fd);
	vg_fd = -1;
	vg_len = 0;
}

static void cmd_set(const char *args)
{
	unsigned int line, value;
	unsigned char rec[2];
	char extra;
	ssize_t n;

	if (sscanf(args, "%u %u %c", &line, &value, &extra) != 2 || line > 2 || value > 1) {
		note("bad S command 'S%s' (S <line 0..2> <0|1>)", args);
		return;
	}
	if (vg_open() < 0)
		return;
	rec[0] = line;
	rec[1] = value;
	do
		n = write(vg_fd, rec, sizeof(rec));
	while (n < 0 && errno == EINTR);
	if (n != sizeof(rec))
		note("S %u %u: write to %s: %s", line, value, vgpio_path,
		     n < 0 ? strerror(errno) : "short write");
}

/* Reads the level changes and sends them as E (and L) lines. */
static void vg_drain(void)
{
	char text[sizeof(vg_buf) / sizeof(struct vg_rec) * 48];
	size_t used = 0, off;
	ssize_t n;

	do
		n = read(vg_fd, vg_buf + vg_len, sizeof(vg_buf) - vg_len);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		if (errno != EAGAIN)
			vg_close(strerror(errno));
		return;
	}
	if (n == 0) {
		vg_close("end of file");
		return;
	}
	vg_len += n;
	for (off = 0; off + sizeof(struct vg_rec) <= vg_len; off += sizeof(struct vg_rec)) {
		struct vg_rec r;

		memcpy(&r, vg_buf + off, sizeof(r));
		if (r.line == LOST_LINE)
			used += snprintf(text + used, sizeof(text) - used, "L %" PRIu32 "\n", r.value);
		else
			used += snprintf(text + used, sizeof(text) - used,
					 "E %" PRIu64 " %" PRIu32 " %" PRIu32 "\n", r.t_ns, r.line,
					 r.value);
	}
	memmove(vg_buf, vg_buf + off, vg_len - off);
	vg_len -= off;
	if (used)
		tty_write(text, used);
}

/* ------------------------------------------------------------ C */

static void queue_cmd(const char *text)
{
	size_t len = strlen(text);
	struct cmd *c = malloc(sizeof(*c) + len + 1);

	if (!c)
		fail(1, "no memory for a command of %zu bytes", len);
	memcpy(c->text, text, len + 1);
	c->next = NULL;
	if (queue_tail)
		queue_tail->next = c;
	else
		queue_head = c;
	queue_tail = c;
}

/* The reply to a command that could not run: rc 127 and the reason. */
static void reply_error(const char *what)
{
	char head[64], msg[256];
	int m = snprintf(msg, sizeof(msg), PROG ": %s: %s\n", what, strerror(errno));
	int h = snprintf(head, sizeof(head), "R 127 %d\n", m);

	tty_write(head, h);
	tty_write(msg, m);
}

static void start_next(void)
{
	struct cmd *c;
	sigset_t none;
	int pfd[2];

	while (child < 0 && queue_head) {
		c = queue_head;
		queue_head = c->next;
		if (!queue_head)
			queue_tail = NULL;
		if (pipe2(pfd, O_CLOEXEC) < 0) {
			reply_error("pipe");
			free(c);
			continue;
		}
		child = fork();
		if (child == 0) {
			int null = open("/dev/null", O_RDONLY);

			if (null >= 0)
				dup2(null, 0);
			dup2(pfd[1], 1);
			dup2(pfd[1], 2);
			signal(SIGPIPE, SIG_DFL);
			sigemptyset(&none);
			sigprocmask(SIG_SETMASK, &none, NULL);
			execl("/bin/sh", "sh", "-c", c->text, (char *)NULL);
			_exit(127);
		}
		close(pfd[1]);
		free(c);
		if (child < 0) {
			close(pfd[0]);
			reply_error("fork");
			continue;
		}
		child_out = pfd[0];
		fcntl(child_out, F_SETFL, O_NONBLOCK);
		out_len = 0;
	}
}

/* Reads what the command wrote; 1 at end of file. Beyond OUT_MAX_BYTES it is dropped. */
static int out_drain(int fd, int keep)
{
	char tmp[4096];
	ssize_t n;

	for (;;) {
		n = read(fd, tmp, sizeof(tmp));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? 0 : 1;
		if (n == 0)
			return 1;
		if (!keep || out_len + n > OUT_MAX_BYTES)
			continue;
		if (out_len + n > out_cap) {
			size_t cap = out_cap ? out_cap : 4096;
			char *p;

			while (cap < out_len + n)
				cap *= 2;
			p = realloc(out_buf, cap);
			if (!p)
				continue; /* dropped, as beyond the limit */
			out_buf = p;
			out_cap = cap;
		}
		memcpy(out_buf + out_len, tmp, n);
		out_len += n;
	}
}

static void child_exited(int status)
{
	char head[64];
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	int h;

	if (child_out >= 0) { /* not yet at end of file */
		if (out_drain(child_out, 1))
			close(child_out);
		else if (n_orphans < MAX_ORPHANS)
			orphans[n_orphans++] = child_out; /* a background job holds it */
		else
			close(child_out);
		child_out = -1;
	}
	child = -1;
	h = snprintf(head, sizeof(head), "R %d %zu\n", rc, out_len);
	tty_write(head, h);
	tty_write(out_buf, out_len);
	out_len = 0;
	start_next();
}

static void reap(void)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read(sig_fd, &si, sizeof(si)) == sizeof(si))
		;
	/* Reaps every exited child: as PID 1 the agent also inherits orphans. */
	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if (pid == child)
			child_exited(status);
	}
}

/* ------------------------------------------------------------ commands */

static void power_off(void)
{
	sync();
	if (no_poweroff)
		exit(0);
	reboot(RB_POWER_OFF);
	fail(1, "power off: %s", strerror(errno));
}

static void handle_line(char *line)
{
	size_t len = strlen(line);

	if (len && line[len - 1] == '\r')
		line[--len] = 0;
	if (!len)
		return;
	switch (line[0]) {
	case 'S':
		cmd_set(line + 1);
		return;
	case 'C':
		if (line[1] == ' ' && line[2]) {
			queue_cmd(line + 2);
			start_next();
			return;
		}
		break;
	case 'Q':
		if (len == 1)
			power_off();
		break;
	}
	note("unknown command '%.60s'", line);
}

static void tty_input(void)
{
	static char buf[LINE_MAX_BYTES];
	static size_t len;
	static int skipping; /* a line too long: dropped up to its newline */
	char *nl, *start;
	ssize_t n;

	n = read(tty_fd, buf + len, sizeof(buf) - len);
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0)
		fail(1, "reading %s: %s", tty_path, n < 0 ? strerror(errno) : "end of file");
	len += n;
	start = buf;
	while ((nl = memchr(start, '\n', buf + len - start))) {
		*nl = 0;
		if (!skipping)
			handle_line(start);
		skipping = 0;
		start = nl + 1;
	}
	len -= start - buf;
	memmove(buf, start, len);
	if (len == sizeof(buf)) {
		if (!skipping) {
			note("a line longer than %d bytes dropped", LINE_MAX_BYTES);
			if (buf[0] == 'C') { /* the host waits for a reply */
				errno = E2BIG;
				reply_error("command line too long");
			}
		}
		skipping = 1;
		len = 0;
	}
}

/* ------------------------------------------------------------ main */

static void parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "tty", required_argument, 0, 't' },
		{ "vgpio", required_argument, 0, 'v' },
		{ "no-poweroff", no_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", lo, NULL)) != -1) {
		switch (c) {
		case 't': tty_path = optarg; break;
		case 'v': vgpio_path = optarg; break;
		case 'n': no_poweroff = 1; break;
		case 'h': fputs(usage, stdout); exit(0);
		case ':': fail(2, "%s needs a value (see --help)", argv[optind - 1]);
		default: fail(2, "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		fail(2, "unexpected argument '%s' (see --help)", argv[optind]);
}

static void open_tty(void)
{
	struct termios t;

	tty_fd = open(tty_path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (tty_fd < 0)
		fail(2, "cannot open %s: %s", tty_path, strerror(errno));
	if (tcgetattr(tty_fd, &t) < 0)
		fail(2, "%s is not a terminal: %s", tty_path, strerror(errno));
	cfmakeraw(&t);
	t.c_cflag |= CLOCAL | CREAD;
	t.c_cc[VMIN] = 1;
	t.c_cc[VTIME] = 0;
	if (cfsetspeed(&t, B115200) < 0 || tcsetattr(tty_fd, TCSANOW, &t) < 0)
		fail(2, "cannot set %s raw at 115200 baud: %s", tty_path, strerror(errno));
}

int main(int argc, char **argv)
{
	struct pollfd p[4 + MAX_ORPHANS];
	sigset_t sigs;
	int i, n;

	parse_args(argc, argv);
	open_tty();
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGCHLD);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	sig_fd = signalfd(-1, &sigs, SFD_NONBLOCK | SFD_CLOEXEC);
	if (sig_fd < 0)
		fail(1, "signalfd: %s", strerror(errno));

	for (;;) {
		n = 0;
		p[n++] = (struct pollfd){ .fd = tty_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = sig_fd, .events = POLLIN };
		p[n++] = (struct pollfd){ .fd = vg_fd, .events = POLLIN }; /* -1: ignored */
		p[n++] = (struct pollfd){ .fd = child_out, .events = POLLIN };
		for (i = 0; i < n_orphans; i++)
			p[n++] = (struct pollfd){ .fd = orphans[i], .events = POLLIN };
		if (poll(p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			fail(1, "poll: %s", strerror(errno));
		}
		/* Level changes first: they are the time-critical stream. */
		if (p[2].revents && vg_fd >= 0)
			vg_drain();
		if (p[3].revents && child_out >= 0 && out_drain(child_out, 1)) {
			/* end of output: the exit status follows on SIGCHLD */
			close(child_out);
			child_out = -1;
		}
		for (i = n_orphans - 1; i >= 0; i--) {
			if (p[4 + i].revents && out_drain(orphans[i], 0)) {
				close(orphans[i]);
				orphans[i] = orphans[--n_orphans];
			}
		}
		if (p[1].revents)
			reap();
		if (p[0].revents)
			tty_input();
	}
}

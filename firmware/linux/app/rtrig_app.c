// SPDX-License-Identifier: BSD-2-Clause
/*
 * rtrig-linux: the rtrig target program for Linux (static, libc only).
 *
 * The APP thread waits for each stimulus and answers on APP_OUT:
 *   --mode module  (default) blocks in read() of /dev/rtrig (rtrig_linux.ko,
 *                  which owns STIM0 and answers on ISR_OUT and MARKER0)
 *   --mode gpio    no module: STIM0 is requested through the GPIO character
 *                  device with rising-edge events and read from the line fd
 * On each event: APP_OUT high, the self-timed latency (CLOCK_MONOTONIC now
 * minus the event's timestamp) taken, APP_OUT low. The LOAD thread, with its
 * own policy, works while LOAD_EN is high and toggles HEARTBEAT after each
 * unit of work. Lines are requested with GPIO uAPI v2 on the chip whose label
 * is --chip. --hist writes the self-timed latencies as a cyclictest -h
 * histogram at exit. SIGINT/SIGTERM stop it cleanly (exit 0).
 * Run with --help for the options. Exit: 0 done, 1 failure while running,
 * 2 bad arguments, chip, line or device.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/gpio.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/signalfd.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "rtrig_fail.h"

#define PROG "rtrig-linux"
#define DEV_RTRIG "/dev/rtrig"
#define EXIT_RUN 1
#define EXIT_SETUP 2
#define MAX_OVERFLOW_CYCLES 100
#ifndef RTRIG_KREL
#define RTRIG_KREL "" /* the kernel release the Makefile built for; "" unknown */
#endif

static const char usage[] =
	"usage: " PROG " --chip LABEL --app-out N [options]\n"
	"\n"
	"Answers the rtrig rig's stimulus on APP_OUT from a user thread and times\n"
	"itself. Lines are offsets on the GPIO chip whose label is LABEL.\n"
	"\n"
	"  --chip LABEL          GPIO chip label, e.g. rtrig-vgpio (required)\n"
	"  --app-out N           APP_OUT line (required)\n"
	"  --mode module|gpio    module (default): wait in read() of " DEV_RTRIG
	" (load\n"
	"                        rtrig_linux.ko first); gpio: no module, STIM0 as a\n"
	"                        rising-edge line event (needs --stim)\n"
	"  --stim N              STIM0 line (gpio mode only)\n"
	"  --heartbeat N         HEARTBEAT line, toggled by the LOAD thread after each\n"
	"  --load-en N           unit of work while the LOAD_EN line is high (both or\n"
	"                        neither; without them there is no LOAD thread)\n"
	"  --prio P              APP thread SCHED_FIFO priority 1..99; 0 (default):\n"
	"                        SCHED_OTHER\n"
	"  --cpu C               pin the APP and LOAD threads to CPU C\n"
	"  --mlock               mlockall(MCL_CURRENT | MCL_FUTURE) before starting\n"
	"  --load-policy other|fifo:P  LOAD thread policy (default other)\n"
	"  --work N              iterations per unit of work (default 10000)\n"
	"  --hist FILE           write the self-timed latencies at exit in cyclictest's\n"
	"                        -h format (1 us buckets, one thread column)\n"
	"  --hist-buckets N      buckets of --hist (default 1000)\n"
	"  --count N             stop after N events (default 0: until SIGINT/SIGTERM)\n"
	"  --quiet               print nothing but errors\n"
	"  --help                this text\n"
	"\n"
	"Exit status: 0 stopped by a signal or --count, 1 failure while running,\n"
	"2 bad arguments, chip, line or device (one 'error:' line on stderr).\n"
	"\n"
	"Example (VM test bed):\n"
	"  insmod rtrig_linux.ko chip=rtrig-vgpio stim=0 isr_out=3 marker0=6\n"
	"  " PROG " --chip rtrig-vgpio --app-out 4 --heartbeat 5 --load-en 2 \\\n"
	"      --prio 80 --cpu 1 --mlock --hist /tmp/app.hist\n";

/* /dev/rtrig's record (rtrig_linux.ko) */
struct rtrig_event {
	uint64_t t_irq_ns;
	uint32_t seq;
	uint32_t missed;
};

struct options {
	const char *chip;
	int app_out, stim, heartbeat, load_en;
	int gpio_mode;
	int prio, cpu, mlock;
	int load_fifo_prio; /* 0: SCHED_OTHER */
	long work;
	const char *hist;
	long hist_buckets;
	long count;
	int quiet;
};

static struct options opt = {
	.app_out = -1, .stim = -1, .heartbeat = -1, .load_en = -1, .cpu = -1,
	.work = 10000, .hist_buckets = 1000,
};

/* Histogram of self-timed latencies, touched by the APP thread only until it is joined. */
static struct {
	uint64_t *bucket;
	uint64_t overflows, samples, missed;
	int64_t min_ns, max_ns;
	long double sum_ns;
	uint64_t overflow_cycle[MAX_OVERFLOW_CYCLES];
} hist;

static int app_fd = -1, hb_fd = -1, load_fd = -1, event_fd = -1;
static int stop_fd = -1, done_fd = -1;
static volatile int stop_flag;
static char app_error[256];

/* ------------------------------------------------------------ arguments */

static long parse_long(const char *name, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < min || v > max)
		fail(EXIT_SETUP, "%s: '%s' is not a number in %ld..%ld", name, s, min, max);
	return v;
}

enum { O_CHIP = 256, O_APP, O_MODE, O_STIM, O_HB, O_LOADEN, O_PRIO, O_CPU, O_MLOCK,
       O_LPOL, O_WORK, O_HIST, O_HBUCK, O_COUNT, O_QUIET, O_HELP };

static const struct option long_opts[] = {
	{ "chip", required_argument, 0, O_CHIP },
	{ "app-out", required_argument, 0, O_APP },
	{ "mode", required_argument, 0, O_MODE },
	{ "stim", required_argument, 0, O_STIM },
	{ "heartbeat", required_argument, 0, O_HB },
	{ "load-en", required_argument, 0, O_LOADEN },
	{ "prio", required_argument, 0, O_PRIO },
	{ "cpu", required_argument, 0, O_CPU },
	{ "mlock", no_argument, 0, O_MLOCK },
	{ "load-policy", required_argument, 0, O_LPOL },
	{ "work", required_argument, 0, O_WORK },
	{ "hist", required_argument, 0, O_HIST },
	{ "hist-buckets", required_argument, 0, O_HBUCK },
	{ "count", required_argument, 0, O_COUNT },
	{ "quiet", no_argument, 0, O_QUIET },
	{ "help", no_argument, 0, O_HELP },
	{ 0, 0, 0, 0 },
};

static void parse_args(int argc, char **argv)
{
	const long maxline = 65535;
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", long_opts, NULL)) != -1) {
		switch (c) {
		case O_CHIP: opt.chip = optarg; break;
		case O_APP: opt.app_out = parse_long("--app-out", optarg, 0, maxline); break;
		case O_MODE:
			if (!strcmp(optarg, "gpio"))
				opt.gpio_mode = 1;
			else if (!strcmp(optarg, "module"))
				opt.gpio_mode = 0;
			else
				fail(EXIT_SETUP, "--mode: '%s' is neither module nor gpio", optarg);
			break;
		case O_STIM: opt.stim = parse_long("--stim", optarg, 0, maxline); break;
		case O_HB: opt.heartbeat = parse_long("--heartbeat", optarg, 0, maxline); break;
		case O_LOADEN: opt.load_en = parse_long("--load-en", optarg, 0, maxline); break;
		case O_PRIO: opt.prio = parse_long("--prio", optarg, 0, 99); break;
		case O_CPU: opt.cpu = parse_long("--cpu", optarg, 0, CPU_SETSIZE - 1); break;
		case O_MLOCK: opt.mlock = 1; break;
		case O_LPOL:
			if (!strcmp(optarg, "other"))
				opt.load_fifo_prio = 0;
			else if (!strncmp(optarg, "fifo:", 5))
				opt.load_fifo_prio = parse_long("--load-policy fifo:P", optarg + 5, 1, 99);
			else
				fail(EXIT_SETUP, "--load-policy: '%s' is neither other nor fifo:P", optarg);
			break;
		case O_WORK: opt.work = parse_long("--work", optarg, 1, 1000000000L); break;
		case O_HIST: opt.hist = optarg; break;
		case O_HBUCK: opt.hist_buckets = parse_long("--hist-buckets", optarg, 1, 10000000L); break;
		case O_COUNT: opt.count = parse_long("--count", optarg, 0, 0x7fffffffL); break;
		case O_QUIET: opt.quiet = 1; break;
		case 'h':
		case O_HELP: fputs(usage, stdout); exit(0);
		case ':': fail(EXIT_SETUP, "%s needs a value (see --help)", argv[optind - 1]);
		default: fail(EXIT_SETUP, "unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		fail(EXIT_SETUP, "unexpected argument '%s' (see --help)", argv[optind]);
	if (!opt.chip)
		fail(EXIT_SETUP, "--chip LABEL is required (see --help)");
	if (opt.app_out < 0)
		fail(EXIT_SETUP, "--app-out N is required (see --help)");
	if (opt.gpio_mode && opt.stim < 0)
		fail(EXIT_SETUP, "--mode gpio needs --stim N");
	if (!opt.gpio_mode && opt.stim >= 0)
		fail(EXIT_SETUP, "--stim is for --mode gpio (in module mode rtrig_linux.ko owns STIM0)");
	if ((opt.heartbeat < 0) != (opt.load_en < 0))
		fail(EXIT_SETUP, "--heartbeat and --load-en go together");
}

/* ------------------------------------------------------------ GPIO uAPI v2 */

/*
 * /dev/rtrig is missing: say why in one line. The module loads only into the
 * kernel it was built for (the kernel refuses others: "version magic" in dmesg),
 * and this program is built with it, so a different running kernel is the cause
 * to name first.
 */
static void no_module(void)
{
	struct utsname un;
	int err = errno;

	if (!uname(&un) && *RTRIG_KREL && strcmp(un.release, RTRIG_KREL))
		fail(EXIT_SETUP, "cannot open " DEV_RTRIG ": this build is for kernel %s, the "
				 "running kernel is %s: rebuild with the running kernel's headers",
		     RTRIG_KREL, un.release);
	fail(EXIT_SETUP, "cannot open " DEV_RTRIG " (is rtrig_linux.ko loaded?): %s",
	     strerror(err));
}

/* The open /dev/gpiochipN labelled label, and its number of lines. */
static int find_chip(const char *label, unsigned int *lines)
{
	struct gpiochip_info info;
	struct dirent *de;
	char path[300];
	int fd, seen = 0;
	DIR *d = opendir("/dev");

	if (!d)
		fail(EXIT_SETUP, "cannot list /dev: %s", strerror(errno));
	while ((de = readdir(d))) {
		if (strncmp(de->d_name, "gpiochip", 8))
			continue;
		snprintf(path, sizeof(path), "/dev/%s", de->d_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0)
			continue;
		seen++;
		memset(&info, 0, sizeof(info));
		if (!ioctl(fd, GPIO_GET_CHIPINFO_IOCTL, &info) &&
		    !strncmp(info.label, label, sizeof(info.label))) {
			closedir(d);
			*lines = info.lines;
			return fd;
		}
		close(fd);
	}
	closedir(d);
	if (!seen)
		fail(EXIT_SETUP, "no GPIO character device /dev/gpiochip* (the kernel needs "
				 "CONFIG_GPIOLIB and CONFIG_GPIO_CDEV)");
	fail(EXIT_SETUP, "no GPIO chip labelled '%s' (%d /dev/gpiochip* opened)", label, seen);
}

static int request_line(int chip_fd, unsigned int lines, int offset, uint64_t flags,
			const char *what)
{
	struct gpio_v2_line_request req;

	if ((unsigned int)offset >= lines)
		fail(EXIT_SETUP, "%s line %d: chip '%s' has lines 0..%u", what, offset, opt.chip,
		     lines - 1);
	memset(&req, 0, sizeof(req));
	req.offsets[0] = offset;
	req.num_lines = 1;
	req.config.flags = flags;
	snprintf(req.consumer, sizeof(req.consumer), "rtrig-%s", what);
	if (ioctl(chip_fd, GPIO_V2_GET_LINE_IOCTL, &req) < 0)
		fail(EXIT_SETUP, "cannot request %s line %d of chip '%s': %s", what, offset, opt.chip,
		     strerror(errno));
	return req.fd;
}

static int line_set(int fd, int value)
{
	struct gpio_v2_line_values v = { .bits = value ? 1 : 0, .mask = 1 };

	return ioctl(fd, GPIO_V2_LINE_SET_VALUES_IOCTL, &v);
}

static int line_get(int fd)
{
	struct gpio_v2_line_values v = { .bits = 0, .mask = 1 };

	if (ioctl(fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &v) < 0)
		return -1;
	return v.bits & 1;
}

/* ------------------------------------------------------------ histogram */

static void hist_add(int64_t lat_ns)
{
	uint64_t us = lat_ns > 0 ? (uint64_t)lat_ns / 1000 : 0;

	if (!hist.samples || lat_ns < hist.min_ns)
		hist.min_ns = lat_ns;
	if (!hist.samples || lat_ns > hist.max_ns)
		hist.max_ns = lat_ns;
	hist.sum_ns += lat_ns;
	if (us < (uint64_t)opt.hist_buckets) {
		hist.bucket[us]++;
	} else {
		if (hist.overflows < MAX_OVERFLOW_CYCLES)
			hist.overflow_cycle[hist.overflows] = hist.samples;
		hist.overflows++;
	}
	hist.samples++;
}

static unsigned long us_of(int64_t ns)
{
	return ns > 0 ? (unsigned long)(ns / 1000) : 0;
}

static unsigned long avg_us(void)
{
	return hist.samples ? us_of((int64_t)(hist.sum_ns / hist.samples)) : 0;
}

/* cyclictest -h layout, one thread (host/integrations/cyclictest.py reads it). */
static int hist_write(FILE *f)
{
	uint64_t total = 0, i;

	fprintf(f, "# Histogram\n");
	for (i = 0; i < (uint64_t)opt.hist_buckets; i++) {
		fprintf(f, "%06" PRIu64 " %06" PRIu64 "\n", i, hist.bucket[i]);
		total += hist.bucket[i];
	}
	fprintf(f, "# Total: %09" PRIu64 "\n", total);
	fprintf(f, "# Min Latencies: %05lu\n", hist.samples ? us_of(hist.min_ns) : 0);
	fprintf(f, "# Avg Latencies: %05lu\n", avg_us());
	fprintf(f, "# Max Latencies: %05lu\n", hist.samples ? us_of(hist.max_ns) : 0);
	fprintf(f, "# Histogram Overflows: %05" PRIu64 "\n", hist.overflows);
	fprintf(f, "# Histogram Overflow at cycle number:\n# Thread 0:");
	for (i = 0; i < hist.overflows && i < MAX_OVERFLOW_CYCLES; i++)
		fprintf(f, " %05" PRIu64, hist.overflow_cycle[i]);
	if (hist.overflows > MAX_OVERFLOW_CYCLES)
		fprintf(f, " # %05" PRIu64 " others", hist.overflows - MAX_OVERFLOW_CYCLES);
	fprintf(f, "\n");
	return fflush(f) ? -1 : ferror(f) ? -1 : 0;
}

/* ------------------------------------------------------------ threads */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void signal_done(void)
{
	uint64_t one = 1;

	if (write(done_fd, &one, sizeof(one)) != sizeof(one))
		abort(); /* an eventfd write of 1 cannot fail */
}

/* Reads one event: its timestamp and the events missed before it; -1 on error. */
static int read_event(int64_t *t_ns, uint64_t *missed)
{
	static uint32_t last_line_seqno;
	ssize_t n;

	if (opt.gpio_mode) {
		struct gpio_v2_line_event ev;

		n = read(event_fd, &ev, sizeof(ev));
		if (n != sizeof(ev))
			goto bad;
		*t_ns = (int64_t)ev.timestamp_ns;
		*missed = last_line_seqno ? ev.line_seqno - last_line_seqno - 1 : 0;
		last_line_seqno = ev.line_seqno;
	} else {
		struct rtrig_event ev;

		n = read(event_fd, &ev, sizeof(ev));
		if (n != sizeof(ev))
			goto bad;
		*t_ns = (int64_t)ev.t_irq_ns;
		*missed = ev.missed;
	}
	return 0;
bad:
	if (n < 0 && errno == EINTR)
		return 1;
	snprintf(app_error, sizeof(app_error), "reading events: %s",
		 n < 0 ? strerror(errno) : "short record");
	return -1;
}

static void *app_thread(void *arg)
{
	struct pollfd p[2] = { { .fd = event_fd, .events = POLLIN },
			       { .fd = stop_fd, .events = POLLIN } };
	int64_t t_ev, lat;
	uint64_t missed;
	int r;

	(void)arg;
	while (!stop_flag) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			snprintf(app_error, sizeof(app_error), "poll: %s", strerror(errno));
			break;
		}
		if (p[1].revents)
			break;
		if (!(p[0].revents & POLLIN)) {
			snprintf(app_error, sizeof(app_error), "event source closed (revents 0x%x)",
				 p[0].revents);
			break;
		}
		r = read_event(&t_ev, &missed);
		if (r < 0)
			break;
		if (r > 0)
			continue;
		if (line_set(app_fd, 1) < 0) {
			snprintf(app_error, sizeof(app_error), "APP_OUT: %s", strerror(errno));
			break;
		}
		lat = now_ns() - t_ev;
		line_set(app_fd, 0);
		hist_add(lat);
		hist.missed += missed;
		if (opt.count && hist.samples >= (uint64_t)opt.count)
			break;
	}
	signal_done();
	return NULL;
}

static void work_unit(void)
{
	static volatile uint32_t sink;
	uint32_t x = sink | 1;
	long i;

	for (i = 0; i < opt.work; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
	}
	sink = x;
}

static void *load_thread(void *arg)
{
	struct pollfd p = { .fd = stop_fd, .events = POLLIN };
	int hb = 0, level;

	(void)arg;
	while (!stop_flag) {
		level = line_get(load_fd);
		if (level > 0) {
			work_unit();
			hb = !hb;
			line_set(hb_fd, hb);
		} else {
			poll(&p, 1, 1); /* LOAD_EN low: look again in 1 ms */
		}
	}
	line_set(hb_fd, 0);
	return NULL;
}

static void start_thread(pthread_t *t, void *(*fn)(void *), int fifo_prio, const char *what)
{
	struct sched_param sp = { .sched_priority = fifo_prio };
	pthread_attr_t attr;
	cpu_set_t set;
	int err;

	pthread_attr_init(&attr);
	if (fifo_prio > 0) {
		pthread_attr_setinheritsched(&attr, PTHREAD_EXPLICIT_SCHED);
		pthread_attr_setschedpolicy(&attr, SCHED_FIFO);
		pthread_attr_setschedparam(&attr, &sp);
	}
	if (opt.cpu >= 0) {
		CPU_ZERO(&set);
		CPU_SET(opt.cpu, &set);
		pthread_attr_setaffinity_np(&attr, sizeof(set), &set);
	}
	err = pthread_create(t, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	if (err)
		fail(EXIT_RUN, "cannot start the %s thread (SCHED_%s %d, cpu %d): %s", what,
		     fifo_prio > 0 ? "FIFO" : "OTHER", fifo_prio, opt.cpu, strerror(err));
}

/* ------------------------------------------------------------ main */

/* The lines (and /dev/rtrig in module mode), each refused in one line. */
static void request_lines(void)
{
	unsigned int lines;
	int chip_fd;

	/* In module mode the module comes first: without it the lines serve nothing. */
	if (!opt.gpio_mode) {
		event_fd = open(DEV_RTRIG, O_RDONLY | O_CLOEXEC);
		if (event_fd < 0)
			no_module();
	}
	chip_fd = find_chip(opt.chip, &lines);
	app_fd = request_line(chip_fd, lines, opt.app_out, GPIO_V2_LINE_FLAG_OUTPUT, "app-out");
	if (opt.heartbeat >= 0) {
		hb_fd = request_line(chip_fd, lines, opt.heartbeat, GPIO_V2_LINE_FLAG_OUTPUT,
				     "heartbeat");
		load_fd = request_line(chip_fd, lines, opt.load_en, GPIO_V2_LINE_FLAG_INPUT,
				       "load-en");
	}
	if (opt.gpio_mode)
		event_fd = request_line(chip_fd, lines, opt.stim,
					GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING,
					"stim");
	close(chip_fd); /* the line requests live on without it */
}

/* SIGINT and SIGTERM go to the returned signalfd only; threads inherit the mask. */
static int block_signals(void)
{
	sigset_t sigs;
	int sig_fd;

	sigemptyset(&sigs);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGTERM);
	if (pthread_sigmask(SIG_BLOCK, &sigs, NULL))
		fail(EXIT_RUN, "cannot block SIGINT/SIGTERM");
	sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC);
	stop_fd = eventfd(0, EFD_CLOEXEC);
	done_fd = eventfd(0, EFD_CLOEXEC);
	if (sig_fd < 0 || stop_fd < 0 || done_fd < 0)
		fail(EXIT_RUN, "signalfd/eventfd: %s", strerror(errno));
	return sig_fd;
}

/* Until a signal, or a thread that ends on an error; then both threads stop. */
static void run_until_stopped(int sig_fd, pthread_t app, pthread_t load)
{
	struct pollfd p[2] = {
		{ .fd = sig_fd, .events = POLLIN },
		{ .fd = done_fd, .events = POLLIN },
	};
	uint64_t one = 1;

	while (poll(p, 2, -1) < 0 && errno == EINTR)
		;
	stop_flag = 1;
	if (write(stop_fd, &one, sizeof(one)) != sizeof(one))
		abort();
	pthread_join(app, NULL);
	if (load_fd >= 0)
		pthread_join(load, NULL);
}

static void release_lines(void)
{
	line_set(app_fd, 0);
	close(event_fd);
	close(app_fd);
	if (hb_fd >= 0) {
		close(hb_fd);
		close(load_fd);
	}
}

int main(int argc, char **argv)
{
	pthread_t app, load = 0;
	FILE *hist_file = NULL;
	int sig_fd, code = 0;

	parse_args(argc, argv);
	request_lines();
	hist.bucket = calloc(opt.hist_buckets, sizeof(*hist.bucket));
	if (!hist.bucket)
		fail(EXIT_RUN, "no memory for %ld histogram buckets", opt.hist_buckets);
	if (opt.hist) {
		hist_file = fopen(opt.hist, "w");
		if (!hist_file)
			fail(EXIT_SETUP, "cannot write --hist %s: %s", opt.hist, strerror(errno));
	}
	if (opt.mlock && mlockall(MCL_CURRENT | MCL_FUTURE) < 0)
		fail(EXIT_RUN, "mlockall: %s", strerror(errno));
	sig_fd = block_signals();

	start_thread(&app, app_thread, opt.prio, "APP");
	if (load_fd >= 0)
		start_thread(&load, load_thread, opt.load_fifo_prio, "LOAD");
	if (!opt.quiet) {
		printf(PROG ": ready: %s mode, chip %s, APP_OUT %d%s\n",
		       opt.gpio_mode ? "gpio" : "module", opt.chip, opt.app_out,
		       load_fd >= 0 ? ", LOAD thread" : "");
		fflush(stdout);
	}
	run_until_stopped(sig_fd, app, load);
	release_lines();

	if (app_error[0]) {
		fprintf(stderr, "error: %s\n", app_error);
		code = EXIT_RUN;
	}
	if (hist_file && (hist_write(hist_file) || fclose(hist_file))) {
		fprintf(stderr, "error: writing --hist %s failed\n", opt.hist);
		code = EXIT_RUN;
	}
	if (!opt.quiet)
		printf(PROG ": %" PRIu64 " events, %" PRIu64 " missed, self-timed latency "
		       "min %lu avg %lu max %lu us, %" PRIu64 " beyond %ld us\n",
		       hist.samples, hist.missed, hist.samples ? us_of(hist.min_ns) : 0, avg_us(),
		       hist.samples ? us_of(hist.max_ns) : 0, hist.overflows, opt.hist_buckets);
	return code;
}

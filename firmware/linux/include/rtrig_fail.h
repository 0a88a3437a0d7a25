// SPDX-License-Identifier: BSD-2-Clause
/*
 * fail(): the programs' one way to stop on an error: "error: ..." on stderr, one
 * line, then exit with the given code (2 for bad usage or set-up, 1 at run time).
 */
#ifndef RTRIG_FAIL_H
#define RTRIG_FAIL_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

static void fail(int code, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));
static void fail(int code, const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(code);
}

#endif

/* SPDX-License-Identifier: BSD-2-Clause
 * rtrig_suite.h: the marker protocol of the rtrig kernel suite (docs/suite.md), for any
 * firmware. Copy this file into your project, define the four hooks below before
 * including it, and bracket each timed operation with rtrig_suite_mark0() and
 * rtrig_suite_mark1(); the rig then times every iteration from outside
 * (MARKER0 rising -> MARKER1 rising) and the TRACE words carry your own count.
 *
 * Hooks (macros or functions; define them before the #include):
 *   RTRIG_SUITE_SET(mask)     drive the pins of mask high (one store if you can)
 *   RTRIG_SUITE_CLEAR(mask)   drive the pins of mask low
 *   RTRIG_SUITE_CYCLES()      a free-running cycle counter (uint32_t), counting up
 *   RTRIG_SUITE_TRACE(word)   report one 32-bit word to the host (a trace port, a
 *                             console line, a buffer dumped later: your choice)
 * Optional:
 *   RTRIG_SUITE_MARKER0/1/2   the masks of the marker pins (default bits 3, 4, 5 as on
 *                             rtrig-soc's GPIO OUT)
 *   RTRIG_SUITE_MARK(mask)    an expression that reads the cycle counter immediately
 *                             before the store that raises mask, and yields the count;
 *                             give your own when the default's code between the read
 *                             and the store differs between call sites
 *   RTRIG_SUITE_IRQ_SAVE()    mask interrupts, yield the previous state (uint32_t), and
 *   RTRIG_SUITE_IRQ_RESTORE(k) restore it: the default RTRIG_SUITE_MARK masks around
 *                             the read and the store, since an interrupt between them
 *                             would be in the count and not between the pins (or the
 *                             reverse). Default: no masking.
 *
 * Self-contained C99; no dependency on the rtrig kernel.
 */
#ifndef RTRIG_SUITE_H
#define RTRIG_SUITE_H

#include <stdint.h>

#ifndef RTRIG_SUITE_MARKER0
#define RTRIG_SUITE_MARKER0 (1u << 3)
#endif
#ifndef RTRIG_SUITE_MARKER1
#define RTRIG_SUITE_MARKER1 (1u << 4)
#endif
#ifndef RTRIG_SUITE_MARKER2
#define RTRIG_SUITE_MARKER2 (1u << 5)
#endif

/* ---- TRACE framing ------------------------------------------------------------------ */

/* Before a test's first iteration: test index (bits 0..15), loaded (bit 16). */
#define RTRIG_SUITE_TRACE_BEGIN(test, loaded)                                                      \
    (0x5E000000u | ((loaded) ? 0x10000u : 0u) | ((uint32_t)(test)&0xFFFFu))
/* After its last iteration. */
#define RTRIG_SUITE_TRACE_END(test) (0x5EFF0000u | ((uint32_t)(test)&0xFFFFu))
/* After the last test of a run. */
#define RTRIG_SUITE_TRACE_RUN_END 0x5EFFFFFFu
/* Every word below this is one iteration's count; counts are clamped below it. */
#define RTRIG_SUITE_TRACE_FRAME 0x5E000000u

/* ---- test indices (docs/suite.md) ------------------------------------------------- */

enum rtrig_suite_test {
    RTRIG_SUITE_EVENT_WAKE = 0,
    RTRIG_SUITE_SEM_UNCONTENDED = 1,
    RTRIG_SUITE_SEM_WAKE = 2,
    RTRIG_SUITE_MUTEX_UNCONTENDED = 3,
    RTRIG_SUITE_MUTEX_HANDOFF = 4,
    RTRIG_SUITE_CRITICAL_SECTION = 5,
    RTRIG_SUITE_YIELD = 6,
    RTRIG_SUITE_THREAD_SWITCH_2 = 7,
    RTRIG_SUITE_THREAD_SWITCH_10 = 8,
    RTRIG_SUITE_THREAD_SWITCH_128 = 9,
    RTRIG_SUITE_PRIORITY_INVERSION = 10,
    RTRIG_SUITE_PRIORITY_INVERSION_NO_PI = 11,
    /* Interrupt tests: driven by the rig's pulses (docs/suite.md, "Interrupt tests"). */
    RTRIG_SUITE_ISR_TO_IST = 12,
    RTRIG_SUITE_IRQ_SIMULTANEOUS = 13,
    RTRIG_SUITE_IRQ_NESTED_1500NS = 14,            /* ... 7500 ns in 1500 ns steps: 14..18 */
    RTRIG_SUITE_IRQ_NESTED_1500NS_HIGH_FIRST = 19, /* ... 19..23 */
    RTRIG_SUITE_TESTS = 24,
    RTRIG_SUITE_FIRST_IRQ_TEST = RTRIG_SUITE_ISR_TO_IST
};

/* ---- marker writes ------------------------------------------------------------------ */

#ifndef RTRIG_SUITE_IRQ_SAVE
#define RTRIG_SUITE_IRQ_SAVE()     0u
#define RTRIG_SUITE_IRQ_RESTORE(k) ((void)(k))
#endif

#ifndef RTRIG_SUITE_MARK
static inline uint32_t rtrig_suite_mark_default(uint32_t mask)
{
    uint32_t k = RTRIG_SUITE_IRQ_SAVE();
    uint32_t c = RTRIG_SUITE_CYCLES();
    RTRIG_SUITE_SET(mask);
    RTRIG_SUITE_IRQ_RESTORE(k);
    return c;
}
#define RTRIG_SUITE_MARK(mask) rtrig_suite_mark_default(mask)
#endif

/* Counts of the current iteration: c1 may be written by another thread than c0. */
extern volatile uint32_t rtrig_suite_c0, rtrig_suite_c1;

/* Immediately before the timed operation starts, in the thread that starts it. */
static inline void rtrig_suite_mark0(void)
{
    rtrig_suite_c0 = RTRIG_SUITE_MARK(RTRIG_SUITE_MARKER0);
}

/* Immediately when the operation is complete, wherever that is observed. */
static inline void rtrig_suite_mark1(void)
{
    rtrig_suite_c1 = RTRIG_SUITE_MARK(RTRIG_SUITE_MARKER1);
}

/*
 * End of an iteration, after MARKER1 rose: MARKER0 falls, then MARKER1, then the count
 * goes out as one TRACE word (outside the timed section). Pause afterwards.
 */
static inline void rtrig_suite_iteration_end(void)
{
    RTRIG_SUITE_CLEAR(RTRIG_SUITE_MARKER0);
    RTRIG_SUITE_CLEAR(RTRIG_SUITE_MARKER1);
    uint32_t n = rtrig_suite_c1 - rtrig_suite_c0;
    RTRIG_SUITE_TRACE(n < RTRIG_SUITE_TRACE_FRAME ? n : RTRIG_SUITE_TRACE_FRAME - 1u);
}

/* Before a test's first iteration: its BEGIN word, then MARKER2 rises. */
static inline void rtrig_suite_test_begin(unsigned test, int loaded)
{
    RTRIG_SUITE_TRACE(RTRIG_SUITE_TRACE_BEGIN(test, loaded));
    RTRIG_SUITE_SET(RTRIG_SUITE_MARKER2);
}

/* After its last iteration (MARKER0/1 already low): MARKER2 falls, then the END word. */
static inline void rtrig_suite_test_end(unsigned test)
{
    RTRIG_SUITE_CLEAR(RTRIG_SUITE_MARKER2);
    RTRIG_SUITE_TRACE(RTRIG_SUITE_TRACE_END(test));
}

static inline void rtrig_suite_run_end(void)
{
    RTRIG_SUITE_TRACE(RTRIG_SUITE_TRACE_RUN_END);
}

#endif /* RTRIG_SUITE_H */

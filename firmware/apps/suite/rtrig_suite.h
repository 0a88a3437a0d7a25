/* SPDX-License-Identifier: BSD-2-Clause
 * rtrig_suite.h: the marker protocol of the rtrig kernel suite (docs/suite.md), for any
 * firmware. Copy this file into your project, define the four hooks below before
 * including it, and bracket each timed operation with rtrig_suite_mark0() and
 * rtrig_suite_mark1(); the rig then times every iteration from outside
 * (MARKER0 rising -> MARKER1 rising) and the TRACE words carry your own count.
 *
 * On rtrig-soc (a RISC-V build, RTRIG_SUITE_RTRIG_SOC defaults to 1 there) every hook
 * has a default: the GPIO at 0x80000000, mcycle, TRACE words to SYS_TRACE
 * (0x8000300C), the edge stamps STAMP/STAMP1 (0x80001010/14), and each marker raised
 * by the 8-byte-aligned `csrr mcycle` + `sw` pair with interrupts masked around it, for
 * which rig interval = 2 x count ticks exactly (docs/suite.md, "Timing your own
 * firmware"). Define RTRIG_SUITE_RTRIG_SOC 0 on another RISC-V board.
 *
 * Hooks elsewhere (macros or functions; define them before the #include):
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
 *   RTRIG_SUITE_STAMP(line)   the cycle count at which interrupt line 0 (STIM0) or 1
 *                             (STIM1) latched its edge: the interrupt tests' counts
 *
 * Self-contained C99; no dependency on the rtrig kernel.
 */
#ifndef RTRIG_SUITE_H
#define RTRIG_SUITE_H

#include <stdint.h>

#ifndef RTRIG_SUITE_RTRIG_SOC
#if defined(__riscv)
#define RTRIG_SUITE_RTRIG_SOC 1
#else
#define RTRIG_SUITE_RTRIG_SOC 0
#endif
#endif

#if RTRIG_SUITE_RTRIG_SOC
/* rtrig-soc (docs/soc-memory-map.md): GPIO OUT_SET/OUT_CLR, the interrupt block's
 * edge stamps (mtime, which counts the same CPU cycles as mcycle from the same reset)
 * and the simulation's TRACE register (no effect on hardware). */
#define RTRIG_SUITE_SOC_OUT_SET 0x80000000u
#define RTRIG_SUITE_SOC_REG(a)  (*(volatile uint32_t *)(a))
#ifndef RTRIG_SUITE_SET
#define RTRIG_SUITE_SET(m) (RTRIG_SUITE_SOC_REG(RTRIG_SUITE_SOC_OUT_SET) = (m))
#endif
#ifndef RTRIG_SUITE_CLEAR
#define RTRIG_SUITE_CLEAR(m) (RTRIG_SUITE_SOC_REG(0x80000004u) = (m))
#endif
#ifndef RTRIG_SUITE_TRACE
#define RTRIG_SUITE_TRACE(w) (RTRIG_SUITE_SOC_REG(0x8000300Cu) = (w))
#endif
#ifndef RTRIG_SUITE_STAMP
#define RTRIG_SUITE_STAMP(line) RTRIG_SUITE_SOC_REG((line) != 0 ? 0x80001014u : 0x80001010u)
#endif
#ifndef RTRIG_SUITE_CYCLES
static inline __attribute__((always_inline)) uint32_t rtrig_suite_soc_cycles(void)
{
    uint32_t c;
    __asm__ volatile("csrr %0, mcycle" : "=r"(c) : : "memory");
    return c;
}
#define RTRIG_SUITE_CYCLES() rtrig_suite_soc_cycles()
#endif
#ifndef RTRIG_SUITE_MARK
/*
 * The marker pair: `csrr mcycle` and the `sw` that raises the pins, adjacent and
 * 8-byte aligned (one I-cache line: no line fill between them), with interrupts masked
 * around them (`csrrci mstatus` before, restored after). Every marker costs the same,
 * so rig interval = (c1 - c0) x 20 ns with no offset, and a pulse's rig latency =
 * (count + 6) x 20 ns (docs/suite.md). Other code between the read and the store (the
 * generic default below) moved the ISR row by 1.5 to 2 cycles.
 */
static inline __attribute__((always_inline)) uint32_t rtrig_suite_soc_mark(uint32_t mask)
{
    uint32_t c, key;
    __asm__ volatile("csrrci %1, mstatus, 8\n\t"
                     ".balign 8\n\tcsrr %0, mcycle\n\tsw %2, 0(%3)\n\t"
                     "andi %1, %1, 8\n\tcsrs mstatus, %1"
                     : "=&r"(c), "=&r"(key)
                     : "r"(mask), "r"(RTRIG_SUITE_SOC_OUT_SET)
                     : "memory");
    return c;
}
#define RTRIG_SUITE_MARK(mask) rtrig_suite_soc_mark(mask)
#endif
#endif /* RTRIG_SUITE_RTRIG_SOC */

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

/* One count word (cycles), clamped below the framing words. */
static inline void rtrig_suite_count(uint32_t n)
{
    RTRIG_SUITE_TRACE(n < RTRIG_SUITE_TRACE_FRAME ? n : RTRIG_SUITE_TRACE_FRAME - 1u);
}

/* Counts of the current iteration: c1 may be written by another thread than c0. */
extern volatile uint32_t rtrig_suite_c0, rtrig_suite_c1;

/*
 * An attribute for the two marker functions (a section, so that a program can place
 * them beside its hottest code); empty by default.
 */
#ifndef RTRIG_SUITE_MARK_FN
#define RTRIG_SUITE_MARK_FN
#endif

/* Immediately before the timed operation starts, in the thread that starts it. */
static inline RTRIG_SUITE_MARK_FN void rtrig_suite_mark0(void)
{
    rtrig_suite_c0 = RTRIG_SUITE_MARK(RTRIG_SUITE_MARKER0);
}

/* Immediately when the operation is complete, wherever that is observed. */
static inline RTRIG_SUITE_MARK_FN void rtrig_suite_mark1(void)
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
    rtrig_suite_count(rtrig_suite_c1 - rtrig_suite_c0);
}

#ifdef RTRIG_SUITE_STAMP
/*
 * isr_to_ist, in the ISR: MARKER0 rises; yields the ISR's latency, the cycle count at
 * that store minus line 0's edge stamp (read the stamp before acknowledging the edge).
 */
static inline uint32_t rtrig_suite_isr_mark0(void)
{
    rtrig_suite_c0 = RTRIG_SUITE_MARK(RTRIG_SUITE_MARKER0);
    return rtrig_suite_c0 - (uint32_t)RTRIG_SUITE_STAMP(0);
}
#endif

/*
 * isr_to_ist, in the interrupt service thread after rtrig_suite_mark1(): both markers
 * fall, then its two words: the ISR's latency (MARKER0's count minus the edge's stamp)
 * and MARKER0 -> MARKER1.
 */
static inline void rtrig_suite_isr_to_ist_end(uint32_t isr_latency)
{
    RTRIG_SUITE_CLEAR(RTRIG_SUITE_MARKER0 | RTRIG_SUITE_MARKER1);
    rtrig_suite_count(isr_latency);
    rtrig_suite_count(rtrig_suite_c1 - rtrig_suite_c0);
}

/*
 * The pair tests (irq_simultaneous, irq_nested_*), once both ISRs have lowered their
 * markers: line 0's latency and line 1's (each from its edge's stamp to the count at
 * its marker's rise), then line 0's stamp to the later marker fall.
 */
static inline void rtrig_suite_pair_end(uint32_t latency0, uint32_t latency1, uint32_t both)
{
    rtrig_suite_count(latency0);
    rtrig_suite_count(latency1);
    rtrig_suite_count(both);
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

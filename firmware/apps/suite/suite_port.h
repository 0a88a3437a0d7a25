/* SPDX-License-Identifier: BSD-2-Clause
 * The suite's hooks for rtrig_suite.h on each board: marker stores, the cycle counter
 * and where TRACE words go.
 *
 * rtrig-soc   mcycle (50 MHz CPU cycles); TRACE words to SOC_SYS_TRACE. The cycle read
 *             and the marker store are one 8-byte-aligned pair (as ISR_OUT's in
 *             board_pins.h) with interrupts masked around it, so MARKER0's and
 *             MARKER1's pairs cost the same and the rig's interval equals c1 - c0.
 * stm32f411   DWT CYCCNT (CPU cycles); TRACE words as console text.
 * qemu        QEMU models no DWT: a count from SysTick (the kernel's 1 ms reload)
 *             and the tick count, in SysTick clocks (25 MHz); TRACE words as
 *             console text. Functional only: QEMU's SysTick follows the host's clock.
 */
#ifndef SUITE_PORT_H
#define SUITE_PORT_H

#include <stdint.h>

#include "board.h"
#include "board_pins.h"
#include "kernel.h"

#define RTRIG_SUITE_MARKER0  RIG_MARKER0
#define RTRIG_SUITE_MARKER1  RIG_MARKER1
#define RTRIG_SUITE_MARKER2  RIG_MARKER2
#define RTRIG_SUITE_SET(m)   rig_out_set(m)
#define RTRIG_SUITE_CLEAR(m) rig_out_clear(m)

#if defined(__riscv)
/* ---- rtrig-soc ---- */
#define SUITE_HAS_STIM   1
#define SUITE_TEXT_TRACE 0

static inline __attribute__((always_inline)) uint32_t suite_cycles(void)
{
    uint32_t c;
    __asm__ volatile("csrr %0, mcycle" : "=r"(c) : : "memory");
    return c;
}

/*
 * A marker store to GPIO register reg (OUT_SET raises, OUT_CLR lowers) with the cycle
 * count read right before it. Interrupts are masked around the pair: a trap between
 * the read and the store would be in the count and not between the pins (or the
 * reverse). The pair itself is the same at every marker, so the mask costs nothing in
 * the comparison.
 */
static inline __attribute__((always_inline)) uint32_t suite_store(uint32_t mask, uint32_t reg)
{
    uint32_t c, key;
    __asm__ volatile("csrrci %1, mstatus, 8\n\t"
                     ".balign 8\n\tcsrr %0, mcycle\n\tsw %2, 0(%3)\n\t"
                     "andi %1, %1, 8\n\tcsrs mstatus, %1"
                     : "=&r"(c), "=&r"(key)
                     : "r"(mask), "r"(reg)
                     : "memory");
    return c;
}

static inline __attribute__((always_inline)) uint32_t suite_mark(uint32_t mask)
{
    return suite_store(mask, SOC_GPIO_OUT_SET);
}

static inline void suite_trace(uint32_t word)
{
    SOC_REG(SOC_SYS_TRACE) = word;
}

/*
 * Invalidate the data cache (VexRiscv's flush instruction: MISC-MEM, funct3 101; the
 * cache writes through, so nothing is lost). thread_switch_N runs every switch with a
 * cold data cache, whatever N: the switch's figure then holds the scheduler's work,
 * not how many threads' frames fit the 4 KiB cache (docs/suite.md).
 */
static inline void suite_dcache_cold(void)
{
    __asm__ volatile(".word 0x0000500F" : : : "memory");
}

/* The interrupt tests (two stimulus lines, each with its edge's mtime stamp). */
#define SUITE_IRQ_TESTS 1

/* mtime (CPU cycles, as mcycle) when line 0 (STIM0) or 1 (STIM1) latched its edge. */
static inline uint32_t suite_irq_stamp(unsigned line)
{
    return SOC_REG(line != 0 ? SOC_IRQ_STAMP1 : SOC_IRQ_STAMP);
}

/* A marker falls, with the cycle count of the store: the same pair as suite_mark. */
static inline __attribute__((always_inline)) uint32_t suite_unmark(uint32_t mask)
{
    return suite_store(mask, SOC_GPIO_OUT_CLR);
}

#elif defined(QEMU_IRQ_STIM)
/* ---- qemu-mps2-an385: no rig, runs by itself ---- */
#define SUITE_HAS_STIM   0
#define SUITE_TEXT_TRACE 1
#define SUITE_SYST_RVR   (*(volatile uint32_t *)0xE000E014u)
#define SUITE_SYST_CVR   (*(volatile uint32_t *)0xE000E018u)

static inline uint32_t suite_cycles(void)
{
    uint32_t t, v, reload;
    do {
        t = k_uptime_ticks();
        v = SUITE_SYST_CVR;
        reload = SUITE_SYST_RVR;
    } while (t != k_uptime_ticks());
    return t * (reload + 1u) + (reload - v);
}

static inline uint32_t suite_mark(uint32_t mask)
{
    uint32_t c = suite_cycles();
    rig_out_set(mask);
    return c;
}

void suite_trace(uint32_t word);

#else
/* ---- stm32f411-blackpill (and any other ARMv7-M board with DWT) ---- */
#define SUITE_HAS_STIM   1
#define SUITE_TEXT_TRACE 1
#define SUITE_DWT_CYCCNT (*(volatile uint32_t *)0xE0001004u)

static inline __attribute__((always_inline)) uint32_t suite_cycles(void)
{
    return SUITE_DWT_CYCCNT;
}

/* PRIMASK around the pair, as on rtrig-soc: no interrupt between read and store. */
static inline __attribute__((always_inline)) uint32_t suite_mark(uint32_t mask)
{
    uint32_t key;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(key) : : "memory");
    uint32_t c = SUITE_DWT_CYCCNT;
    rig_out_set(mask);
    __asm__ volatile("msr primask, %0" : : "r"(key) : "memory");
    return c;
}

void suite_trace(uint32_t word);
#endif

#if !defined(__riscv)
/* Cortex-M3/M4: no data cache. */
static inline void suite_dcache_cold(void)
{
}
#endif

#ifndef SUITE_IRQ_TESTS
/* No second stimulus line or edge stamp: the interrupt tests are not built. */
#define SUITE_IRQ_TESTS 0
#endif

#define RTRIG_SUITE_CYCLES() suite_cycles()
#define RTRIG_SUITE_MARK(m)  suite_mark(m)
#define RTRIG_SUITE_TRACE(w) suite_trace(w)

/* The markers run on every timed path: beside the kernel's hottest code. */
#define RTRIG_SUITE_MARK_FN K_HOT
#include "rtrig_suite.h"

#endif /* SUITE_PORT_H */

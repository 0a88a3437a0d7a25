/* SPDX-License-Identifier: BSD-2-Clause
 * rt_test's trace hooks (kernel/include/k_trace.h): kernel events become marker
 * pins the rig timestamps (`rtrig capture --raw`). Off by default (RT_TRACE=0:
 * every hook compiles to nothing); the trace builds choose one of two maps:
 *
 * RT_TRACE=1, the interrupt path:
 *   MARKER0  high from trap entry to trap exit (first and last instructions)
 *   MARKER1  one pulse at dispatch (trap decoded), one at each scheduler switch
 *   MARKER2  one pulse when the ISR's interrupt id wakes the IST
 * RT_TRACE=2, non-preemptible sections:
 *   MARKER0  high while a trap runs with interrupts off: from entry to exit, or with
 *            K_CONFIG_NESTING low while its handler runs with interrupts open
 *   MARKER1  high while code that runs with interrupts open (a thread, or a nesting
 *            handler) holds them masked (outermost lock); low during the idle
 *            thread's wait (it opens the mask for wfi) and cleared by a switch (the
 *            thread switched to resumes open): MARKER0 or MARKER1 high = masked
 *   MARKER2  high while the idle thread waits for an interrupt (wfi); cleared
 *            again by the switch when the interrupt taken from the wait switches
 *            away, so a later trap of another thread is not counted as one from idle
 * RT_TRACE=3, the tick interrupt:
 *   MARKER0  high from trap entry to trap exit
 *   MARKER1  one pulse at the tick's kernel entry (after the timer is re-armed),
 *            one at its exit, one at the scheduler switch
 *
 * docs/kernel.md has the measured breakdown made with these.
 */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#ifndef RT_TRACE
#define RT_TRACE 0
#endif

#if RT_TRACE != 0
#include "soc_map.h" /* the trace maps are for rtrig-soc only */

/* Two instructions and one bus write per edge: t0 = GPIO block, t1 = the marker. */
#define RT_ASM_MARK(marker)                                                                        \
    li t0, SOC_GPIO_BASE;                                                                          \
    li t1, marker;
#define TRACE_ASM_TRAP_ENTER RT_ASM_MARK(SOC_OUT_MARKER0) sw t1, 0(t0);
#define TRACE_ASM_TRAP_EXIT  RT_ASM_MARK(SOC_OUT_MARKER0) sw t1, 4(t0);
#if RT_TRACE == 1
/* TRACE_DISPATCH's pulse on MARKER1, for the ISR that trap.S calls directly. */
#define TRACE_ASM_DISPATCH                                                                         \
    RT_ASM_MARK(SOC_OUT_MARKER1) sw t1, 0(t0);                                                     \
    sw t1, 4(t0);
#endif
#if RT_TRACE == 2
/* The switch's windows: MARKER0 low while the trap runs with interrupts open. */
#define TRACE_ASM_TRAP_UNMASK TRACE_ASM_TRAP_EXIT
#define TRACE_ASM_TRAP_MASK   TRACE_ASM_TRAP_ENTER
#endif
#endif

#if RT_TRACE != 0 && !defined(__ASSEMBLER__)
#include <stdint.h>
#define RT_MARK_SET(m)   (*(volatile uint32_t *)(uintptr_t)SOC_GPIO_OUT_SET = (m))
#define RT_MARK_CLR(m)   (*(volatile uint32_t *)(uintptr_t)SOC_GPIO_OUT_CLR = (m))
#define RT_MARK_PULSE(m) (RT_MARK_SET(m), RT_MARK_CLR(m))

#if RT_TRACE == 1
#define TRACE_DISPATCH()       RT_MARK_PULSE(SOC_OUT_MARKER1)
#define TRACE_SWITCH(from, to) ((void)(from), (void)(to), RT_MARK_PULSE(SOC_OUT_MARKER1))
#define TRACE_IST_WAKE()       RT_MARK_PULSE(SOC_OUT_MARKER2)
#elif RT_TRACE == 2
#define TRACE_IRQ_OFF()    RT_MARK_SET(SOC_OUT_MARKER1)
#define TRACE_IRQ_ON()     RT_MARK_CLR(SOC_OUT_MARKER1)
/* The idle thread opens the mask for its wait (arch_idle_wait) and masks again after. */
#define TRACE_IDLE_ENTER() (RT_MARK_CLR(SOC_OUT_MARKER1), RT_MARK_SET(SOC_OUT_MARKER2))
#define TRACE_IDLE_WAKE()  (RT_MARK_CLR(SOC_OUT_MARKER2), RT_MARK_SET(SOC_OUT_MARKER1))
/* The thread switched to resumes with interrupts open (every rt_test thread does). */
#define TRACE_SWITCH(from, to)                                                                     \
    ((void)(from), (void)(to), RT_MARK_CLR(SOC_OUT_MARKER1 | SOC_OUT_MARKER2))
/* Nesting: MARKER0 is low while a handler runs with interrupts open. */
#define TRACE_TRAP_UNMASK() RT_MARK_CLR(SOC_OUT_MARKER0)
#define TRACE_TRAP_MASK()   RT_MARK_SET(SOC_OUT_MARKER0)
#elif RT_TRACE == 3
#define TRACE_TICK_ENTER()     RT_MARK_PULSE(SOC_OUT_MARKER1)
#define TRACE_TICK_EXIT()      RT_MARK_PULSE(SOC_OUT_MARKER1)
#define TRACE_SWITCH(from, to) ((void)(from), (void)(to), RT_MARK_PULSE(SOC_OUT_MARKER1))
#endif
#endif /* RT_TRACE && !__ASSEMBLER__ */

#endif /* RT_TRACE_H */

/* SPDX-License-Identifier: BSD-2-Clause
 * Trace hooks. Each one compiles to nothing unless the program provides a
 * header (passed as -DK_TRACE_HEADER='"file.h"') that defines it. The rig test
 * programs turn them into marker GPIO writes (rt_test with RT_TRACE=1 or 2, see
 * apps/rt_test/rt_trace.h) so the rig can time kernel paths from outside, with no
 * instrumentation cost when unused. docs/kernel.md lists what each one marks.
 */
#ifndef K_TRACE_H
#define K_TRACE_H

#ifdef K_TRACE_HEADER
#include K_TRACE_HEADER
#endif

#ifndef __ASSEMBLER__

/* An interrupt's handler: the program's ISR runs between the two. */
#ifndef TRACE_ISR_ENTER
#define TRACE_ISR_ENTER() ((void)0)
#endif
#ifndef TRACE_ISR_EXIT
#define TRACE_ISR_EXIT() ((void)0)
#endif
/* The port has decoded the trap and is about to call the interrupt's handler. */
#ifndef TRACE_DISPATCH
#define TRACE_DISPATCH() ((void)0)
#endif
/* An ISR's interrupt id woke its interrupt service thread (made it ready). */
#ifndef TRACE_IST_WAKE
#define TRACE_IST_WAKE() ((void)0)
#endif
#ifndef TRACE_TICK_ENTER
#define TRACE_TICK_ENTER() ((void)0)
#endif
#ifndef TRACE_TICK_EXIT
#define TRACE_TICK_EXIT() ((void)0)
#endif
/* Scheduler decision: called inside the context switch with interrupts masked. */
#ifndef TRACE_SWITCH
#define TRACE_SWITCH(from, to) ((void)0)
#endif
/* Idle: ENTER before waiting for an interrupt, WAKE when the wait ends, EXIT when
 * the kernel leaves tickless idle (in the switch away from the idle thread). */
#ifndef TRACE_IDLE_ENTER
#define TRACE_IDLE_ENTER() ((void)0)
#endif
#ifndef TRACE_IDLE_WAKE
#define TRACE_IDLE_WAKE() ((void)0)
#endif
#ifndef TRACE_IDLE_EXIT
#define TRACE_IDLE_EXIT() ((void)0)
#endif
/* A nesting port's handler opens interrupts (UNMASK) and closes them again (MASK). */
#ifndef TRACE_TRAP_UNMASK
#define TRACE_TRAP_UNMASK() ((void)0)
#endif
#ifndef TRACE_TRAP_MASK
#define TRACE_TRAP_MASK() ((void)0)
#endif
/* Outermost interrupt mask taken / released in thread context (arch_irq_lock). */
#ifndef TRACE_IRQ_OFF
#define TRACE_IRQ_OFF() ((void)0)
#endif
#ifndef TRACE_IRQ_ON
#define TRACE_IRQ_ON() ((void)0)
#endif

#endif /* !__ASSEMBLER__ */

/* Assembly hooks of a port's trap entry and exit; may use t0 and t1 only. */
#ifndef TRACE_ASM_TRAP_ENTER
#define TRACE_ASM_TRAP_ENTER
#endif
#ifndef TRACE_ASM_TRAP_EXIT
#define TRACE_ASM_TRAP_EXIT
#endif
/* TRACE_DISPATCH for a port that calls an ISR from its trap entry itself. */
#ifndef TRACE_ASM_DISPATCH
#define TRACE_ASM_DISPATCH
#endif
/*
 * A nesting port's switch opens interrupts in a trap (UNMASK) and closes them (MASK).
 * TRACE_ASM_WINDOWS: these two are defined, so the port reloads what it keeps in t1.
 */
#ifdef TRACE_ASM_TRAP_UNMASK
#define TRACE_ASM_WINDOWS 1
#else
#define TRACE_ASM_TRAP_UNMASK
#endif
#ifndef TRACE_ASM_TRAP_MASK
#define TRACE_ASM_TRAP_MASK
#endif

#endif /* K_TRACE_H */

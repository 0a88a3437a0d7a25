/* SPDX-License-Identifier: BSD-2-Clause
 * The contract between the kernel and an architecture port.
 *
 * A port lives in arch/<arch>/ and provides arch_port.h (types and the inline
 * interrupt mask) plus the functions declared here. Chip and board specifics
 * (clock rate, interrupt lines, pins) stay in boards/<board>/. docs/kernel.md
 * has the porting guide.
 *
 * arch_port.h must define:
 *   struct arch_thread           saved context; the saved stack pointer (if the
 *                                port has one) is its first member
 *   arch_irq_key_t               state returned by arch_irq_lock
 *   arch_irq_lock / arch_irq_unlock   nestable mask of kernel-aware interrupts
 *   ARCH_COST(n)                 cost accounting for the host port, else empty
 *   ARCH_STACK_ALIGN             stack pointer alignment in bytes
 */
#ifndef ARCH_H
#define ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_port.h"
#include "k_config.h"

struct k_thread;

/* ---- context ------------------------------------------------------------- */

/*
 * Prepare t so that the first switch to it calls k_thread_entry() with
 * interrupts enabled, on the stack [stack, stack + size).
 */
void arch_thread_init(struct k_thread *t, void *stack, size_t size);

/*
 * Ask for a switch to the thread the scheduler now prefers. The switch takes
 * place at the first point where it is allowed: immediately when called from
 * a thread, or on return from the outermost interrupt. Ports may defer a
 * thread-context switch until the caller's arch_irq_unlock (Cortex-M PendSV).
 */
void arch_switch_pend(void);

/* Switch from the boot context to the first thread. Never returns on a target. */
void arch_start(void);

/* True while running an interrupt or exception handler. */
bool arch_in_isr(void);
/* The same, where the kernel asserts it on a masked path: a port may make it a load. */
#ifndef ARCH_IN_ISR
#define ARCH_IN_ISR() arch_in_isr()
#endif

/*
 * Called with interrupts masked by the idle thread: wait for any interrupt. A
 * port may open the mask for the wait itself so the interrupt is taken straight
 * from it (riscv32); it returns with interrupts masked again.
 */
void arch_idle_wait(void);

/* Mask everything and stop, making code visible (board LEDs, sim exit...). */
void arch_halt(uint32_t code, uint32_t detail) K_NORETURN;

/* ---- tick timer ------------------------------------------------------------ */

/* Start the periodic 1 ms tick; its interrupt calls k_tick_announce_from_isr(1). */
void arch_timer_start(void);
/*
 * Tickless idle: program the next timer interrupt `ticks` tick boundaries after
 * the last announced one (1 <= ticks <= K_CONFIG_MAX_IDLE_TICKS; the port may
 * clamp). Its interrupt announces the ticks that passed.
 */
void arch_timer_set_idle(uint32_t ticks);
/*
 * Leave tickless idle early: return the whole ticks passed since the last
 * announcement (not yet announced), and return to the periodic 1 ms tick on
 * the original tick phase where the hardware allows.
 */
uint32_t arch_timer_idle_exit(void);

/* ---- kernel entry points used by ports --------------------------------------- */

/* Every thread starts here (ports jump to it from their initial frame). */
void k_thread_entry(void) K_NORETURN;
/*
 * Called by the port's switch code with interrupts masked, after the outgoing
 * context is saved. Checks the outgoing stack, picks the next thread, makes it
 * k_current and returns it.
 */
struct k_thread *k_sched_switch_hook(struct k_thread *outgoing);
/* Tick interrupt: n ticks passed since the last call. */
void k_tick_announce_from_isr(uint32_t n);

extern struct k_thread *volatile k_current;

#endif /* ARCH_H */

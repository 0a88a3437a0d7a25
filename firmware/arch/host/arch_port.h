/* SPDX-License-Identifier: BSD-2-Clause
 * Host port: a deterministic simulated CPU for unit tests of kernel logic.
 *
 * Threads are ucontext coroutines, so only one runs at a time and the order of
 * events depends only on the program. Simulated time advances only when a
 * thread calls host_burn() (it "executes" for that many cycles) or when the
 * idle thread waits; timer interrupts fire at their exact simulated cycle and
 * may preempt the burning thread there. ARCH_COST() counts abstract kernel
 * cycles (one per list or bitmap operation and per loop iteration), which the
 * tests use to show the cost of a context switch does not grow with the
 * number of threads.
 */
#ifndef ARCH_PORT_H
#define ARCH_PORT_H

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#define K_HOST               1
#define ARCH_STACK_ALIGN     16u
#define HOST_CYCLES_PER_TICK 10000u /* a 10 MHz simulated CPU */

struct arch_thread {
    void *sp; /* unused here; kept so every port starts struct k_thread alike */
    ucontext_t uc;
};

typedef int arch_irq_key_t;

extern int host_irq_masked;
extern uint64_t host_cost;
void host_irq_unmasked(void);

#define ARCH_COST(n) (host_cost += (uint64_t)(n))

static inline arch_irq_key_t arch_irq_lock(void)
{
    int key = host_irq_masked;
    host_irq_masked = 1;
    return key;
}

static inline void arch_irq_unlock(arch_irq_key_t key)
{
    host_irq_masked = key;
    if (!key)
        host_irq_unmasked();
}

/* ---- test control (arch_host.c) ---- */

enum host_status {
    HOST_RUNNING = 0,
    HOST_STOPPED,  /* a thread called host_stop() */
    HOST_DEADLOCK, /* idle with no timer and no interrupt to come */
    HOST_PANIC,    /* k_panic(); see host_panic_code */
};

extern enum host_status host_status;
extern uint32_t host_panic_code;
extern int host_stop_code;

uint64_t host_cycles(void);
/* The calling thread executes for n simulated cycles (interrupts may preempt it). */
void host_burn(uint64_t cycles);
/* Run isr as an interrupt now, or as soon as interrupts are unmasked. */
void host_irq_raise(void (*isr)(void));
/* Raise isr as an interrupt when simulated time reaches `cycle` (one at a time). */
void host_irq_schedule(uint64_t cycle, void (*isr)(void));
extern unsigned long host_timer_irqs;
/* End the run: k_start() returns in the test. */
void host_stop(int code);

#endif /* ARCH_PORT_H */

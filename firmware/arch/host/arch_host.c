/* SPDX-License-Identifier: BSD-2-Clause */
/* Host port: simulated CPU, timer and interrupts (see arch_port.h). */
#include <stdlib.h>

#include "arch.h"
#include "kernel.h"

int host_irq_masked = 1;
uint64_t host_cost;
enum host_status host_status;
uint32_t host_panic_code;
int host_stop_code;

#define NEVER UINT64_MAX

static ucontext_t main_uc;
static uint64_t now;
static uint64_t tick_last;  /* cycle of the last announced tick boundary */
static uint64_t timer_next; /* cycle of the next timer interrupt */
static uint32_t idle_ticks; /* != 0 while programmed for tickless idle */
static bool timer_pending;
static void (*ext_pending)(void);
static int isr_depth;
static bool switch_pending;
static uint64_t ext_at = NEVER; /* scheduled external interrupt */
static void (*ext_at_isr)(void);
unsigned long host_timer_irqs;

void host_irq_schedule(uint64_t cycle, void (*isr)(void))
{
    ext_at = cycle;
    ext_at_isr = isr;
}

static uint64_t next_event(void)
{
    return ext_at < timer_next ? ext_at : timer_next;
}

/* Simulated time reached an event: make its interrupt pending. */
static void event_reached(void)
{
    if (ext_at <= now) {
        ext_at = NEVER;
        ext_pending = ext_at_isr;
    }
    if (timer_next <= now)
        timer_pending = true;
}

uint64_t host_cycles(void)
{
    return now;
}

static void do_switch(void)
{
    struct k_thread *out = k_current;
    int saved = host_irq_masked;
    host_irq_masked = 1;
    struct k_thread *in = k_sched_switch_hook(out);
    if (in != out)
        swapcontext(&out->arch.uc, &in->arch.uc);
    /* Back in `out`: its own mask state comes back with it. */
    host_irq_masked = saved;
}

static void run_isr(void (*isr)(void))
{
    int saved = host_irq_masked;
    isr_depth++;
    host_irq_masked = 0;
    isr();
    host_irq_masked = saved;
    isr_depth--;
    if (isr_depth == 0 && switch_pending) {
        switch_pending = false;
        do_switch();
    }
}

static void timer_isr(void)
{
    uint32_t n = 1;
    host_timer_irqs++;
    if (idle_ticks != 0) {
        n = idle_ticks;
        idle_ticks = 0;
    }
    tick_last = timer_next;
    timer_next = tick_last + HOST_CYCLES_PER_TICK;
    k_tick_announce_from_isr(n);
}

void host_irq_unmasked(void)
{
    while (!host_irq_masked && (timer_pending || ext_pending)) {
        if (timer_pending) {
            timer_pending = false;
            run_isr(timer_isr);
        } else {
            void (*f)(void) = ext_pending;
            ext_pending = NULL;
            run_isr(f);
        }
    }
}

void host_burn(uint64_t cycles)
{
    while (cycles != 0) {
        uint64_t next = next_event();
        if (next != NEVER && next - now <= cycles) {
            cycles -= next - now;
            now = next;
            event_reached();
            host_irq_unmasked(); /* may switch away; the remaining work resumes later */
        } else {
            now += cycles;
            cycles = 0;
        }
    }
}

void host_irq_raise(void (*isr)(void))
{
    if (host_irq_masked) {
        ext_pending = isr;
        return;
    }
    run_isr(isr);
}

void host_stop(int code)
{
    host_stop_code = code;
    host_status = HOST_STOPPED;
    setcontext(&main_uc);
    abort();
}

/* ---- contract ---- */

static void thread_start(void)
{
    host_irq_masked = 0;
    k_thread_entry();
}

void arch_thread_init(struct k_thread *t, void *stack, size_t size)
{
    getcontext(&t->arch.uc);
    t->arch.uc.uc_stack.ss_sp = stack;
    t->arch.uc.uc_stack.ss_size = size;
    t->arch.uc.uc_link = NULL;
    makecontext(&t->arch.uc, thread_start, 0);
}

void arch_switch_pend(void)
{
    if (isr_depth > 0)
        switch_pending = true;
    else
        do_switch();
}

void arch_start(void)
{
    host_status = HOST_RUNNING;
    host_irq_masked = 1;
    struct k_thread *in = k_sched_switch_hook(k_current);
    swapcontext(&main_uc, &in->arch.uc);
    /* Here again after host_stop(), a deadlock or a panic. */
    host_irq_masked = 1;
    isr_depth = 0;
    switch_pending = false;
    timer_pending = false;
    ext_pending = NULL;
}

bool arch_in_isr(void)
{
    return isr_depth > 0;
}

void arch_idle_wait(void)
{
    if (timer_pending || ext_pending)
        return;
    uint64_t next = next_event();
    if (next == NEVER) {
        host_status = HOST_DEADLOCK;
        setcontext(&main_uc);
    }
    if (next > now)
        now = next;
    event_reached();
}

void arch_halt(uint32_t code, uint32_t detail)
{
    (void)detail;
    host_panic_code = code;
    host_status = HOST_PANIC;
    setcontext(&main_uc);
    abort();
}

void arch_timer_start(void)
{
    now = 0;
    tick_last = 0;
    idle_ticks = 0;
    timer_pending = false;
    ext_pending = NULL;
    ext_at = NEVER;
    timer_next = HOST_CYCLES_PER_TICK;
}

void arch_timer_set_idle(uint32_t ticks)
{
    idle_ticks = ticks;
    timer_next = tick_last + (uint64_t)ticks * HOST_CYCLES_PER_TICK;
    timer_pending = false;
}

uint32_t arch_timer_idle_exit(void)
{
    if (idle_ticks == 0)
        return 0;
    uint32_t n = (uint32_t)((now - tick_last) / HOST_CYCLES_PER_TICK);
    tick_last += (uint64_t)n * HOST_CYCLES_PER_TICK;
    timer_next = tick_last + HOST_CYCLES_PER_TICK;
    idle_ticks = 0;
    return n;
}

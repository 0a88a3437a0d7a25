/* SPDX-License-Identifier: BSD-2-Clause
 * Minimal test framework shared by the host runner (tests/host_main.c) and the
 * on-target self-test (apps/selftest). A test runs in a controller thread at
 * T_CTRL_PRIO and returns normally on success; a failed check records the
 * failure and returns from the test function.
 */
#ifndef KTEST_H
#define KTEST_H

#include "kernel.h"

#define T_CTRL_PRIO   100u
#define T_MAX_THREADS 6

struct ktest {
    const char *name;
    void (*fn)(void);
};

extern const struct ktest ktests[];
extern const unsigned ktests_count;

/* Set by t_fail; the runner reads and clears it. */
extern volatile int t_failed;
extern const char *volatile t_fail_expr;
extern volatile int t_fail_line;

#define T_CHECK(cond)                                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            t_fail(#cond, __LINE__);                                                               \
            return;                                                                                \
        }                                                                                          \
    } while (0)

void t_fail(const char *expr, int line);

/* ---- provided by each platform (host runner / selftest app) ---- */

/* Busy work for about ms of CPU time (host: exact simulated cycles). */
void t_burn_ms(uint32_t ms);
/* Raise an interrupt that runs isr (through k_isr_run) as soon as possible. */
void t_trigger_irq(k_isr_fn isr, void *arg);
/* Raise a second interrupt line with higher priority than t_trigger_irq's. */
void t_trigger_irq_high(k_isr_fn isr, void *arg);
/* True where interrupts nest (a higher-priority ISR preempts a running ISR). */
bool t_nesting_supported(void);
void *t_stack(unsigned i, size_t *size);

/* ---- helpers (kernel_tests.c) ---- */

extern struct k_thread t_threads[T_MAX_THREADS];
int t_spawn(unsigned i, k_entry_fn fn, void *arg, unsigned prio, uint32_t quantum);
void t_join_all(void);

#endif /* KTEST_H */

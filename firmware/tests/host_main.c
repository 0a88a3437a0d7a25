/* SPDX-License-Identifier: BSD-2-Clause
 * Native test runner: the shared kernel tests plus host-only tests that need
 * the simulated CPU (cycle-exact tick checks, switch cost, tickless idle,
 * stack overflow). Prints "N passed, N failed" and exits non-zero on failure.
 */
#include <stdio.h>
#include <string.h>

#include "ktest.h"

#define HOST_STACK 16384u

static uint64_t stacks[T_MAX_THREADS + 1][HOST_STACK / 8];
static struct k_thread ctrl;

void *t_stack(unsigned i, size_t *size)
{
    *size = sizeof stacks[i];
    return stacks[i];
}

void t_burn_ms(uint32_t ms)
{
    host_burn((uint64_t)ms * HOST_CYCLES_PER_TICK);
}

static k_isr_fn pending_isr[2];
static void *pending_arg[2];

static void host_isr_low(void)
{
    k_isr_run(pending_isr[0], pending_arg[0]);
}

static void host_isr_high(void)
{
    k_isr_run(pending_isr[1], pending_arg[1]);
}

void t_trigger_irq(k_isr_fn isr, void *arg)
{
    pending_isr[0] = isr;
    pending_arg[0] = arg;
    host_irq_raise(host_isr_low);
}

void t_trigger_irq_high(k_isr_fn isr, void *arg)
{
    pending_isr[1] = isr;
    pending_arg[1] = arg;
    host_irq_raise(host_isr_high);
}

bool t_nesting_supported(void)
{
    return true;
}

/* ---- runner ---- */

static void (*current_fn)(void);

static void ctrl_entry(void *arg)
{
    (void)arg;
    current_fn();
    host_stop(0);
}

/* Run fn in a controller thread on a fresh kernel; returns 1 on pass. */
static int run_in_kernel(void (*fn)(void), unsigned prio)
{
    k_init();
    memset(&ctrl, 0, sizeof ctrl);
    memset(t_threads, 0, sizeof t_threads);
    t_failed = 0;
    current_fn = fn;
    k_thread_create(&ctrl, "ctrl", ctrl_entry, NULL, stacks[T_MAX_THREADS],
                    sizeof stacks[T_MAX_THREADS], prio, 0);
    k_start();
    if (host_status != HOST_STOPPED && !t_failed) {
        t_failed = 1;
        t_fail_expr = host_status == HOST_DEADLOCK ? "deadlock (idle forever)" : "kernel panic";
        t_fail_line = 0;
    }
    return !t_failed;
}

/* ---- host-only tests ---- */

/* A sleeping thread wakes on the exact simulated cycle of its tick boundary. */
static void test_tick_cycle_exact(void)
{
    k_sleep_ms(1);
    T_CHECK(host_cycles() == 1ull * HOST_CYCLES_PER_TICK);
    host_burn(HOST_CYCLES_PER_TICK / 3); /* call from the middle of a tick */
    k_sleep_ms(10);
    T_CHECK(k_uptime_ticks() == 11);
    T_CHECK(host_cycles() == 11ull * HOST_CYCLES_PER_TICK);
    /* Busy time is counted too: 25 ms of work spans 25 ticks. */
    uint32_t t0 = k_uptime_ticks();
    t_burn_ms(25);
    T_CHECK(k_uptime_ticks() - t0 == 25);
}

extern unsigned long host_timer_irqs;

/* Sleeping everything for 200 ms takes one timer interrupt, not 200. */
static void test_tickless_idle(void)
{
    k_sleep_ms(1);
    unsigned long before = host_timer_irqs;
    uint32_t t0 = k_uptime_ticks();
    k_sleep_ms(200);
    T_CHECK(k_uptime_ticks() - t0 == 200);
    T_CHECK(host_timer_irqs - before <= 2);
    /* After idle the periodic tick is back: a busy thread sees every tick. */
    before = host_timer_irqs;
    t_burn_ms(10);
    T_CHECK(host_timer_irqs - before == 10);
}

static struct k_event idle_ev;
static volatile uint32_t idle_wake_tick;

static void idle_ev_waiter(void *arg)
{
    (void)arg;
    if (k_event_wait(&idle_ev, K_FOREVER) == K_OK)
        idle_wake_tick = k_uptime_ticks();
}

static uint32_t idle_isr(void *arg)
{
    (void)arg;
    return 5;
}

static void host_idle_irq(void)
{
    k_isr_run(idle_isr, NULL);
}

/* An interrupt during tickless idle brings the tick count up to date. */
static void test_idle_exit_by_interrupt(void)
{
    k_event_init(&idle_ev, false, false);
    T_CHECK(k_irq_attach(5, &idle_ev) == K_OK);
    T_CHECK(t_spawn(0, idle_ev_waiter, NULL, 10, 0) == K_OK);
    k_sleep_ms(1);
    /* Everything sleeps; the interrupt arrives 36.5 ticks later. */
    host_irq_schedule(HOST_CYCLES_PER_TICK * 375ull / 10u, host_idle_irq);
    k_sleep_ms(100);
    T_CHECK(idle_wake_tick == 37);
    T_CHECK(k_uptime_ticks() == 101);
    T_CHECK(host_cycles() == 101ull * HOST_CYCLES_PER_TICK);
    t_join_all();
}

/* ---- switch cost independent of thread count ---- */

#define COST_THREADS_MAX 128u
#define COST_SWITCHES    1000u
static struct k_thread cost_threads[COST_THREADS_MAX];
static uint64_t cost_stacks[COST_THREADS_MAX][2048];
static volatile unsigned cost_yields, cost_target_start;
static volatile uint64_t cost_start, cost_end;

static void cost_thread(void *arg)
{
    (void)arg;
    for (;;) {
        unsigned y = ++cost_yields;
        if (y == cost_target_start)
            cost_start = host_cost;
        if (y == cost_target_start + COST_SWITCHES) {
            cost_end = host_cost;
            host_stop(0);
        }
        k_thread_yield();
    }
}

static unsigned cost_n;

static void cost_ctrl(void)
{
    cost_yields = 0;
    cost_target_start = 3 * cost_n; /* after every thread has run a few times */
    for (unsigned i = 0; i < cost_n; i++) {
        memset(&cost_threads[i], 0, sizeof cost_threads[i]);
        k_thread_create(&cost_threads[i], "y", cost_thread, NULL, cost_stacks[i],
                        sizeof cost_stacks[i], 50, 0);
    }
    /* The controller (priority 1) now blocks; only the yielders run. */
    k_sleep_ms(K_FOREVER - 1);
}

static uint64_t measure_switch_cost(unsigned n)
{
    cost_n = n;
    cost_start = cost_end = 0;
    if (!run_in_kernel(cost_ctrl, 1) || cost_end == 0)
        return 0;
    return cost_end - cost_start;
}

static int test_switch_cost(void)
{
    uint64_t c2 = measure_switch_cost(2);
    uint64_t c10 = measure_switch_cost(10);
    uint64_t c128 = measure_switch_cost(128);
    printf("    switch cost per %u yields: 2 threads %llu, 10 threads %llu, 128 threads %llu\n",
           COST_SWITCHES, (unsigned long long)c2, (unsigned long long)c10,
           (unsigned long long)c128);
    return c2 != 0 && c2 == c10 && c10 == c128;
}

/* ---- stack overflow ---- */

static struct {
    uint8_t guard[16384]; /* the overflow lands here instead of in other data */
    uint64_t stack[1024];
} ovf;
static struct k_thread ovf_thread;

static unsigned deep(unsigned n)
{
    volatile uint8_t buf[256];
    memset((void *)buf, (int)n, sizeof buf);
    if (n == 0)
        return buf[3];
    return deep(n - 1) + buf[7];
}

static volatile unsigned ovf_depth;

static void ovf_entry(void *arg)
{
    (void)arg;
    (void)deep(ovf_depth);
    k_thread_yield();
    k_sleep_ms(1); /* switch out: the canary check runs here */
}

static void ovf_ctrl(void)
{
    memset(&ovf_thread, 0, sizeof ovf_thread);
    k_thread_create(&ovf_thread, "ovf", ovf_entry, NULL, ovf.stack, sizeof ovf.stack, 10, 0);
    k_thread_join(&ovf_thread, K_FOREVER);
}

static int test_stack_overflow(void)
{
    ovf_depth = 4; /* fits: must not panic */
    run_in_kernel(ovf_ctrl, 50);
    if (host_status != HOST_STOPPED)
        return 0;
    ovf_depth = 60; /* ~16 KiB of frames on an 8 KiB stack */
    run_in_kernel(ovf_ctrl, 50);
    return host_status == HOST_PANIC && host_panic_code == K_ERR_STACK_OVERFLOW;
}

/* Tests must be able to fail: a deliberately false check is reported as failed. */
static void self_check_fails(void)
{
    T_CHECK(1 + 1 == 3);
}

static int test_framework_detects_failure(void)
{
    int r = run_in_kernel(self_check_fails, T_CTRL_PRIO);
    t_failed = 0;
    return r == 0;
}

/* ---- main ---- */

static unsigned passed, failed;

static void report(const char *name, int ok)
{
    if (ok) {
        passed++;
        printf("PASS %s\n", name);
    } else {
        failed++;
        printf("FAIL %s", name);
        if (t_fail_expr)
            printf(": line %d: %s", t_fail_line, t_fail_expr);
        printf("\n");
    }
    t_fail_expr = NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IONBF, 0);
    for (unsigned i = 0; i < ktests_count; i++)
        report(ktests[i].name, run_in_kernel(ktests[i].fn, T_CTRL_PRIO));
    report("tick_cycle_exact", run_in_kernel(test_tick_cycle_exact, T_CTRL_PRIO));
    report("tickless_idle", run_in_kernel(test_tickless_idle, T_CTRL_PRIO));
    report("idle_exit_by_interrupt", run_in_kernel(test_idle_exit_by_interrupt, T_CTRL_PRIO));
    report("switch_cost_2_10_128", test_switch_cost());
    report("stack_overflow_detected", test_stack_overflow());
    report("framework_detects_failure", test_framework_detects_failure());
    printf("%u passed, %u failed\n", passed, failed);
    return failed ? 1 : 0;
}

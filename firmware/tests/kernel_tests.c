/* SPDX-License-Identifier: BSD-2-Clause
 * Kernel tests that run on every target: on the host runner and inside the
 * selftest program. Each test leaves no thread behind (t_join_all), so the
 * next test can reuse the thread slots and stacks.
 */
#include "ktest.h"

volatile int t_failed;
const char *volatile t_fail_expr;
volatile int t_fail_line;

struct k_thread t_threads[T_MAX_THREADS];

void t_fail(const char *expr, int line)
{
    if (!t_failed) {
        t_fail_expr = expr;
        t_fail_line = line;
    }
    t_failed = 1;
}

int t_spawn(unsigned i, k_entry_fn fn, void *arg, unsigned prio, uint32_t quantum)
{
    size_t size;
    void *stack = t_stack(i, &size);
    struct k_thread *t = &t_threads[i];
    char *p = (char *)t;
    /* Fresh struct each time: a slot may hold a thread from an earlier test. */
    for (size_t k = 0; k < sizeof *t; k++)
        p[k] = 0;
    return k_thread_create(t, "t", fn, arg, stack, size, prio, quantum);
}

void t_join_all(void)
{
    for (unsigned i = 0; i < T_MAX_THREADS; i++)
        if (t_threads[i].state != K_STATE_DEAD)
            (void)k_thread_join(&t_threads[i], K_FOREVER);
}

static void set_ctrl_prio(unsigned p)
{
    k_thread_set_priority(k_thread_self(), p);
}

/* ---- scheduling order ------------------------------------------------------ */

static volatile unsigned order_log[8];
static volatile unsigned order_n;

static void order_thread(void *arg)
{
    order_log[order_n++] = (unsigned)(uintptr_t)arg;
}

static void test_priority_order(void)
{
    order_n = 0;
    set_ctrl_prio(0); /* equal to the best: nothing preempts us while creating */
    T_CHECK(t_spawn(0, order_thread, (void *)30, 30, 0) == K_OK);
    T_CHECK(t_spawn(1, order_thread, (void *)10, 10, 0) == K_OK);
    T_CHECK(t_spawn(2, order_thread, (void *)200, 200, 0) == K_OK);
    T_CHECK(t_spawn(3, order_thread, (void *)11, 10, 0) == K_OK); /* FIFO within a level */
    T_CHECK(t_spawn(4, order_thread, (void *)0, 0, 0) == K_OK);
    T_CHECK(order_n == 0);
    set_ctrl_prio(T_CTRL_PRIO); /* everything but prio 200 runs now, in order */
    T_CHECK(order_n == 4);
    T_CHECK(order_log[0] == 0);
    T_CHECK(order_log[1] == 10);
    T_CHECK(order_log[2] == 11);
    T_CHECK(order_log[3] == 30);
    t_join_all();
    T_CHECK(order_n == 5);
    T_CHECK(order_log[4] == 200);
}

/* ---- round-robin and quantum ------------------------------------------------- */

static volatile unsigned rr_last;
static volatile unsigned rr_switches;
static volatile uint32_t rr_done_tick[2];

static void rr_thread(void *arg)
{
    unsigned me = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < 40; i++) {
        if (rr_last != me) {
            rr_last = me;
            rr_switches++;
        }
        t_burn_ms(1);
    }
    rr_done_tick[me] = k_uptime_ticks();
}

static void test_round_robin(void)
{
    rr_last = 99;
    rr_switches = 0;
    set_ctrl_prio(1);
    T_CHECK(t_spawn(0, rr_thread, (void *)0, 50, 5) == K_OK);
    T_CHECK(t_spawn(1, rr_thread, (void *)1, 50, 5) == K_OK);
    set_ctrl_prio(T_CTRL_PRIO);
    t_join_all();
    /* 80 ms of work in 5 ms slices: about 16 turns; each thread ran interleaved. */
    T_CHECK(rr_switches >= 12);
    T_CHECK(rr_switches <= 20);
    uint32_t d = rr_done_tick[0] > rr_done_tick[1] ? rr_done_tick[0] - rr_done_tick[1]
                                                   : rr_done_tick[1] - rr_done_tick[0];
    T_CHECK(d <= 10);
}

static void test_quantum_zero(void)
{
    rr_last = 99;
    rr_switches = 0;
    set_ctrl_prio(1);
    T_CHECK(t_spawn(0, rr_thread, (void *)0, 50, 0) == K_OK);
    T_CHECK(t_spawn(1, rr_thread, (void *)1, 50, 0) == K_OK);
    set_ctrl_prio(T_CTRL_PRIO);
    t_join_all();
    /* Run to completion: one switch into each thread, never back. */
    T_CHECK(rr_switches == 2);
    T_CHECK(rr_done_tick[1] - rr_done_tick[0] >= 39);
}

static volatile unsigned hi_ran;

static void hi_thread(void *arg)
{
    (void)arg;
    hi_ran++;
}

static void q0_preempted_thread(void *arg)
{
    (void)arg;
    t_burn_ms(3);
    /* Quantum 0 does not stop a higher priority from preempting. */
    t_spawn(2, hi_thread, NULL, 10, 0);
    T_CHECK(hi_ran == 1);
    t_burn_ms(3);
}

static void test_quantum_zero_preemptible(void)
{
    hi_ran = 0;
    set_ctrl_prio(1);
    T_CHECK(t_spawn(0, q0_preempted_thread, NULL, 50, 0) == K_OK);
    set_ctrl_prio(T_CTRL_PRIO);
    t_join_all();
    T_CHECK(hi_ran == 1);
}

static void test_default_quantum(void)
{
    set_ctrl_prio(1);
    T_CHECK(t_spawn(0, hi_thread, NULL, 50, K_QUANTUM_DEFAULT) == K_OK);
    T_CHECK(t_threads[0].quantum == 100);
    set_ctrl_prio(T_CTRL_PRIO);
    t_join_all();
}

/* ---- events ------------------------------------------------------------------ */

static struct k_event ev;
static volatile unsigned ev_woken;

static void ev_waiter(void *arg)
{
    (void)arg;
    if (k_event_wait(&ev, K_FOREVER) == K_OK)
        ev_woken++;
}

static void test_event_auto_reset(void)
{
    k_event_init(&ev, false, false);
    ev_woken = 0;
    for (unsigned i = 0; i < 3; i++)
        T_CHECK(t_spawn(i, ev_waiter, NULL, 20, 0) == K_OK);
    T_CHECK(ev_woken == 0);
    k_event_set(&ev);
    T_CHECK(ev_woken == 1);
    T_CHECK(!ev.signaled); /* consumed by the waiter */
    k_event_set(&ev);
    k_event_set(&ev);
    T_CHECK(ev_woken == 3);
    /* With no waiter the event stays set for exactly one wait. */
    k_event_set(&ev);
    T_CHECK(k_event_wait(&ev, K_NO_WAIT) == K_OK);
    T_CHECK(k_event_wait(&ev, K_NO_WAIT) == K_TIMEOUT);
    t_join_all();
}

static void test_event_manual_reset(void)
{
    k_event_init(&ev, true, false);
    ev_woken = 0;
    for (unsigned i = 0; i < 3; i++)
        T_CHECK(t_spawn(i, ev_waiter, NULL, 20, 0) == K_OK);
    k_event_set(&ev);
    T_CHECK(ev_woken == 3);
    T_CHECK(k_event_wait(&ev, K_NO_WAIT) == K_OK);
    T_CHECK(k_event_wait(&ev, K_NO_WAIT) == K_OK);
    k_event_reset(&ev);
    T_CHECK(k_event_wait(&ev, K_NO_WAIT) == K_TIMEOUT);
    t_join_all();
}

/* ---- semaphores --------------------------------------------------------------- */

static struct k_sem sem;
static volatile unsigned sem_got;

static void sem_waiter(void *arg)
{
    (void)arg;
    if (k_sem_take(&sem, K_FOREVER) == K_OK)
        sem_got++;
}

static void test_semaphore_counts(void)
{
    k_sem_init(&sem, 2, 3);
    T_CHECK(k_sem_take(&sem, K_NO_WAIT) == K_OK);
    T_CHECK(k_sem_take(&sem, K_NO_WAIT) == K_OK);
    T_CHECK(k_sem_take(&sem, K_NO_WAIT) == K_TIMEOUT);
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(k_sem_give(&sem) == K_EOVERFLOW);
    T_CHECK(k_sem_count(&sem) == 3);
    k_sem_init(&sem, 0, 10);
    sem_got = 0;
    T_CHECK(t_spawn(0, sem_waiter, NULL, 20, 0) == K_OK);
    T_CHECK(t_spawn(1, sem_waiter, NULL, 20, 0) == K_OK);
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(sem_got == 1);
    T_CHECK(k_sem_count(&sem) == 0); /* handed to the waiter, not counted */
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(sem_got == 2);
    T_CHECK(k_sem_give(&sem) == K_OK);
    T_CHECK(k_sem_count(&sem) == 1);
    t_join_all();
}

/* ---- timeouts and ticks -------------------------------------------------------- */

static void test_timeouts(void)
{
    k_event_init(&ev, false, false);
    k_sleep_ms(1); /* start on a tick boundary */
    uint32_t t0 = k_uptime_ticks();
    T_CHECK(k_event_wait(&ev, 5) == K_TIMEOUT);
    T_CHECK(k_uptime_ticks() - t0 == 5);
    k_sem_init(&sem, 0, 1);
    t0 = k_uptime_ticks();
    T_CHECK(k_sem_take(&sem, 7) == K_TIMEOUT);
    T_CHECK(k_uptime_ticks() - t0 == 7);
    T_CHECK(k_sem_take(&sem, K_NO_WAIT) == K_TIMEOUT);
}

static void late_setter(void *arg)
{
    (void)arg;
    k_sleep_ms(3);
    k_event_set(&ev);
}

static void test_wait_beats_timeout(void)
{
    k_event_init(&ev, false, false);
    k_sleep_ms(1);
    uint32_t t0 = k_uptime_ticks();
    T_CHECK(t_spawn(0, late_setter, NULL, 20, 0) == K_OK);
    T_CHECK(k_event_wait(&ev, 50) == K_OK);
    T_CHECK(k_uptime_ticks() - t0 == 3);
    /* The cancelled timeout must not fire later: a fresh sleep is exact. */
    t0 = k_uptime_ticks();
    k_sleep_ms(60);
    T_CHECK(k_uptime_ticks() - t0 == 60);
    t_join_all();
}

static void test_sleep_accuracy(void)
{
    for (uint32_t ms = 1; ms <= 25; ms += 8) {
        k_sleep_ms(1);
        uint32_t t0 = k_uptime_ticks();
        k_sleep_ms(ms);
        T_CHECK(k_uptime_ticks() - t0 == ms);
    }
}

/* ---- mutexes and priority inheritance -------------------------------------------- */

static struct k_mutex mtx;
static volatile bool low_has_lock, med_done, high_got_lock_before_med_done;
static volatile unsigned low_prio_while_held;
static struct k_sem pi_sem;

static void pi_low(void *arg)
{
    (void)arg;
    k_mutex_lock(&mtx, K_FOREVER);
    low_has_lock = true;
    k_sem_give(&pi_sem); /* wakes the controller, which starts medium and high */
    t_burn_ms(5);
    low_prio_while_held = k_thread_self()->prio;
    k_mutex_unlock(&mtx);
}

static void pi_medium(void *arg)
{
    (void)arg;
    t_burn_ms(30); /* a CPU hog between the two */
    med_done = true;
}

static void pi_high(void *arg)
{
    (void)arg;
    if (k_mutex_lock(&mtx, K_FOREVER) == K_OK) {
        high_got_lock_before_med_done = !med_done;
        k_mutex_unlock(&mtx);
    }
}

static void test_priority_inheritance(void)
{
    k_mutex_init(&mtx);
    k_sem_init(&pi_sem, 0, 1);
    low_has_lock = med_done = high_got_lock_before_med_done = false;
    low_prio_while_held = 255;
    set_ctrl_prio(5);
    T_CHECK(t_spawn(0, pi_low, NULL, 30, 0) == K_OK);
    T_CHECK(k_sem_take(&pi_sem, K_FOREVER) == K_OK);
    T_CHECK(low_has_lock);
    T_CHECK(t_spawn(1, pi_medium, NULL, 20, 0) == K_OK);
    T_CHECK(t_spawn(2, pi_high, NULL, 10, 0) == K_OK);
    set_ctrl_prio(T_CTRL_PRIO);
    t_join_all();
    T_CHECK(low_prio_while_held == 10); /* boosted to the waiter's priority */
    T_CHECK(t_threads[0].prio == 30);   /* and back after the unlock */
    T_CHECK(high_got_lock_before_med_done);
    T_CHECK(med_done);
}

static void pi_timeout_waiter(void *arg)
{
    (void)arg;
    (void)k_mutex_lock(&mtx, 4);
}

static void test_mutex_timeout_unboosts(void)
{
    k_mutex_init(&mtx);
    T_CHECK(k_mutex_lock(&mtx, K_FOREVER) == K_OK);
    T_CHECK(k_mutex_lock(&mtx, K_FOREVER) == K_OK); /* recursive */
    T_CHECK(t_spawn(0, pi_timeout_waiter, NULL, 20, 0) == K_OK);
    T_CHECK(k_thread_self()->prio == 20);
    k_sleep_ms(10);
    T_CHECK(k_thread_self()->prio == T_CTRL_PRIO);
    T_CHECK(k_mutex_unlock(&mtx) == K_OK);
    T_CHECK(mtx.owner == k_thread_self());
    T_CHECK(k_mutex_unlock(&mtx) == K_OK);
    T_CHECK(mtx.owner == NULL);
    T_CHECK(k_mutex_unlock(&mtx) == K_EPERM);
    t_join_all();
}

/* ---- critical sections --------------------------------------------------------------- */

static struct k_crit crit;
static volatile unsigned crit_order;

static void crit_contender(void *arg)
{
    (void)arg;
    k_crit_enter(&crit);
    crit_order = crit_order * 10 + 2;
    k_crit_leave(&crit);
}

static void test_critical_section(void)
{
    k_crit_init(&crit);
    crit_order = 0;
    k_crit_enter(&crit);
    k_crit_enter(&crit);
    T_CHECK(crit.m.depth == 2);
    k_crit_leave(&crit);
    T_CHECK(t_spawn(0, crit_contender, NULL, 20, 0) == K_OK);
    /* The contender blocked and lent us its priority. */
    T_CHECK(k_thread_self()->prio == 20);
    crit_order = 1;
    k_crit_leave(&crit);
    T_CHECK(crit_order == 12);
    T_CHECK(k_thread_self()->prio == T_CTRL_PRIO);
    T_CHECK(crit.m.owner == NULL);
    t_join_all();
}

/* ---- interrupts and ISTs ---------------------------------------------------------------- */

#define SYSINTR_TEST 3u
static struct k_event ist_ev;
static volatile unsigned isr_count, ist_count, isr_nest_seen;
static volatile unsigned isr_depth_now;

static uint32_t test_isr(void *arg)
{
    (void)arg;
    isr_count++;
    return SYSINTR_TEST;
}

static void ist_thread(void *arg)
{
    unsigned n = (unsigned)(uintptr_t)arg;
    for (unsigned i = 0; i < n; i++) {
        if (k_event_wait(&ist_ev, 1000) != K_OK)
            return;
        ist_count++;
    }
}

static void test_isr_wakes_ist(void)
{
    k_event_init(&ist_ev, false, false);
    isr_count = ist_count = 0;
    T_CHECK(k_irq_attach(SYSINTR_TEST, &ist_ev) == K_OK);
    T_CHECK(t_spawn(0, ist_thread, (void *)3, 10, 0) == K_OK);
    for (unsigned i = 1; i <= 3; i++) {
        t_trigger_irq(test_isr, NULL);
        /* The IST outranks us, so it has run by the time we continue. */
        T_CHECK(isr_count == i);
        T_CHECK(ist_count == i);
    }
    t_join_all();
    T_CHECK(k_irq_attach(K_SYSINTR_NOP, &ist_ev) == K_EINVAL);
}

static uint32_t high_isr(void *arg)
{
    (void)arg;
    if (isr_depth_now == 1)
        isr_nest_seen = 1;
    return K_SYSINTR_NOP;
}

static uint32_t low_isr(void *arg)
{
    (void)arg;
    isr_depth_now = 1;
    t_trigger_irq_high(high_isr, NULL);
    isr_depth_now = 0;
    return K_SYSINTR_NOP;
}

static void test_nested_interrupts(void)
{
    if (!t_nesting_supported())
        return;
    isr_nest_seen = 0;
    t_trigger_irq(low_isr, NULL);
    T_CHECK(isr_nest_seen == 1);
}

/* ---- table -------------------------------------------------------------------------------- */

/*
 * KTEST_ONLY_IRQ: only the interrupt tests, for a target where the whole list takes
 * too long (rtrig-soc's simulation twin; docs/kernel.md, "Tests").
 */
const struct ktest ktests[] = {
#ifndef KTEST_ONLY_IRQ
    {"priority_order", test_priority_order},
    {"round_robin", test_round_robin},
    {"quantum_zero", test_quantum_zero},
    {"quantum_zero_preemptible", test_quantum_zero_preemptible},
    {"default_quantum", test_default_quantum},
    {"event_auto_reset", test_event_auto_reset},
    {"event_manual_reset", test_event_manual_reset},
    {"semaphore_counts", test_semaphore_counts},
    {"timeouts", test_timeouts},
    {"wait_beats_timeout", test_wait_beats_timeout},
    {"sleep_accuracy", test_sleep_accuracy},
    {"priority_inheritance", test_priority_inheritance},
    {"mutex_timeout_unboosts", test_mutex_timeout_unboosts},
    {"critical_section", test_critical_section},
#endif
    {"isr_wakes_ist", test_isr_wakes_ist},
    {"nested_interrupts", test_nested_interrupts},
};
const unsigned ktests_count = sizeof ktests / sizeof ktests[0];

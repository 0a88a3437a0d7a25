/* SPDX-License-Identifier: BSD-2-Clause
 * suite: the kernel suite timed by the rig (docs/suite.md).
 *
 * At each rising edge of the stimulus input (the "go" pulse) the program runs every
 * test of suite_config.test_mask once, in table order, each for
 * suite_config.iterations iterations, and brackets every iteration's timed operation
 * with MARKER0 (rises just before it starts) and MARKER1 (rises when it is complete);
 * MARKER2 is high around each test. Each iteration's own cycle count (c1 - c0) goes
 * out as a TRACE word, framed per test (rtrig_suite.h). LOAD runs while LOAD_EN is
 * high, as in rt_test. A board without a stimulus (QEMU) runs once by itself and
 * exits with the result of its own framing check.
 */
#include "suite_port.h"

/* LOAD: rt_test's thread (rt_load.h), here at PRIO_LOAD, below every test thread, so
 * it runs only while they all block. */
#include "rt_load.h"

/* ---- configuration block: patched by the host in a copy of the image -------------- */

#ifndef SUITE_DEFAULT_ITERATIONS
#define SUITE_DEFAULT_ITERATIONS 1000u
#endif

struct suite_config {
    uint32_t magic[2]; /* "RTSUITE1" */
    uint32_t iterations;
    uint32_t test_mask;
    uint32_t pause_cycles;
    uint32_t flags;
};

/* Every test this board builds: the interrupt tests need two stimulus lines. */
#if SUITE_IRQ_TESTS
#define SUITE_ALL_TESTS ((1u << RTRIG_SUITE_TESTS) - 1u)
#else
#define SUITE_ALL_TESTS ((1u << RTRIG_SUITE_FIRST_IRQ_TEST) - 1u)
#endif

__attribute__((aligned(4), used)) volatile const struct suite_config suite_config = {
    .magic = {0x55535452u, 0x31455449u}, /* 'R','T','S','U', 'I','T','E','1' */
    .iterations = SUITE_DEFAULT_ITERATIONS,
    .test_mask = SUITE_ALL_TESTS,
    .pause_cycles = 1000u,
    .flags = 0u,
};

/* ---- fixed busy times (cycles of suite_cycles(); docs/suite.md) --------------------- */

/* priority_inversion: L's critical section left when H has blocked on the lock. */
#define PI_CS_CYCLES 1000u
/* priority_inversion: M's busy time, once per iteration. */
#define PI_SPIN_CYCLES 4000u

/* ---- threads and priorities (0 highest) ---------------------------------------------- */

#define PRIO_SPAWN 1u   /* the controller while it creates a test's threads */
#define PRIO_H     10u  /* high */
#define PRIO_M     20u  /* medium */
#define PRIO_L     30u  /* low */
#define PRIO_EQ    40u  /* equal-priority threads: yield, thread_switch_N */
#define PRIO_CTL   100u /* the controller: waits for go, runs the tests */
#define PRIO_LOAD  200u /* LOAD: below every test thread */

#define SYSINTR_GO  1u
#define SYSINTR_IST 2u /* isr_to_ist: the ISR wakes the IST */
#define SYSINTR_IRQ 3u /* the pair tests: the last iteration wakes the controller */

/* The pair tests: each ISR is busy this long (20 µs at 50 MHz), well beyond the
 * largest STIM1 offset (7.5 µs), so the second pulse arrives while the first ISR runs
 * and an ISR that cannot preempt it waits long enough to tell. */
#define IRQ_BUSY_CYCLES 1000u

/*
 * Test threads come from one pool: each takes its thread object, then its stack, in a
 * piece that is a whole number of 32-byte data-cache lines (rtrig-soc's line), so
 * every thread object starts a line. A switch then touches the same lines of its two
 * threads' objects whichever threads it is between (with objects packed 72 bytes
 * apart, switches out of every fourth thread of thread_switch_128 took 13 cycles more).
 * thread_switch_N: 128 threads of SW_PIECE bytes. On RV32 a thread's stack holds its
 * frames, one 128-byte trap frame and the handler's frames; the stack check in the
 * tick and switch paths guards it.
 */
#define SW_MAX    128u
#define LINE      32u
#define SW_PIECE  352u
#define OBJ_BYTES ((sizeof(struct k_thread) + 7u) & ~7u)
#define SW_STACK  (SW_PIECE - OBJ_BYTES)
#define BIG_STACK 1024u

volatile uint32_t rtrig_suite_c0, rtrig_suite_c1;
volatile uint32_t rt_load_sink;

static struct k_event go_event;
static struct k_thread ctl_thread, load_thread;
static uint64_t ctl_stack[768u / 8u];
/* LOAD is the thread the pair tests interrupt when loaded: the tick and both stimulus
 * lines nest on its stack (three trap frames and their handlers). */
static uint64_t load_stack[1024u / 8u];

static struct k_thread *workers[SW_MAX];
static uint8_t pool[SW_MAX * SW_PIECE] __attribute__((aligned(LINE)));
static unsigned n_workers;
static size_t pool_used;

static uint32_t iters;        /* iterations per test, this run */
static uint32_t pause_cycles; /* idle cycles after each iteration, this run */

static struct k_event ev;
static struct k_sem sem_a, sem_h, sem_m, bsem;
static struct k_mutex mtx;

/* ---- helpers ----------------------------------------------------------------------- */

static K_HOT void pause(void)
{
    uint32_t t0 = suite_cycles();
    while (suite_cycles() - t0 < pause_cycles)
        ;
}

static void spin(uint32_t cycles)
{
    uint32_t t0 = suite_cycles();
    while (suite_cycles() - t0 < cycles)
        ;
}

/* Markers down, the count out, then the pause: every iteration ends so. */
static K_HOT void iteration_end(void)
{
    rtrig_suite_iteration_end();
    pause();
}

/* Create a test thread; the controller runs above them all while it creates them. */
static K_COLD void spawn(k_entry_fn fn, unsigned prio, size_t stack)
{
    size_t piece = (OBJ_BYTES + stack + LINE - 1u) & ~(size_t)(LINE - 1u);
    K_ASSERT(n_workers < SW_MAX && pool_used + piece <= sizeof pool);
    struct k_thread *t = (struct k_thread *)(void *)(pool + pool_used);
    /* The piece may have been an earlier test's stack: a fresh object (K_STATE_DEAD). */
    *t = (struct k_thread){0};
    int rc = k_thread_create(t, "t", fn, (void *)(uintptr_t)n_workers, pool + pool_used + OBJ_BYTES,
                             stack, prio, 0);
    K_ASSERT(rc == K_OK);
    (void)rc;
    workers[n_workers++] = t;
    pool_used += piece;
}

static K_COLD void spawn_begin(void)
{
    n_workers = 0;
    pool_used = 0;
    k_thread_set_priority(&ctl_thread, PRIO_SPAWN);
}

/* Let the threads run (highest first, creation order within a level); wait for all. */
static K_COLD void spawn_run(void)
{
    k_thread_set_priority(&ctl_thread, PRIO_CTL);
    for (unsigned i = 0; i < n_workers; i++)
        (void)k_thread_join(workers[i], K_FOREVER);
}

/* ---- 0 event_wake: A sets an event, B (higher, waiting on it) runs ------------------ */

static void event_wake_b(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_event_wait(&ev, K_FOREVER);
        rtrig_suite_mark1();
    }
}

static void event_wake_a(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        k_event_set(&ev);
        iteration_end();
    }
}

static K_COLD void test_event_wake(void)
{
    k_event_init(&ev, false, false);
    spawn_begin();
    spawn(event_wake_b, PRIO_H, BIG_STACK);
    spawn(event_wake_a, PRIO_L, BIG_STACK);
    spawn_run();
}

/* ---- 1 sem_uncontended: give then take, nobody waits ------------------------------- */

static K_HOT void test_sem_uncontended(void)
{
    k_sem_init(&sem_a, 0, 1);
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        (void)k_sem_give(&sem_a);
        (void)k_sem_take(&sem_a, K_FOREVER);
        rtrig_suite_mark1();
        iteration_end();
    }
}

/* ---- 2 sem_wake: A gives, B (higher, blocked in take) returns ---------------------- */

static void sem_wake_b(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_sem_take(&sem_a, K_FOREVER);
        rtrig_suite_mark1();
    }
}

static void sem_wake_a(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        (void)k_sem_give(&sem_a);
        iteration_end();
    }
}

static K_COLD void test_sem_wake(void)
{
    k_sem_init(&sem_a, 0, 1);
    spawn_begin();
    spawn(sem_wake_b, PRIO_H, BIG_STACK);
    spawn(sem_wake_a, PRIO_L, BIG_STACK);
    spawn_run();
}

/* ---- 3 mutex_uncontended: lock then unlock ------------------------------------------ */

static K_HOT void test_mutex_uncontended(void)
{
    k_mutex_init(&mtx);
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        (void)k_mutex_lock(&mtx, K_FOREVER);
        (void)k_mutex_unlock(&mtx);
        rtrig_suite_mark1();
        iteration_end();
    }
}

/* ---- 4 mutex_handoff: L unlocks, H (blocked in lock, L boosted) returns ------------- */

static void handoff_h(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_sem_take(&sem_h, K_FOREVER);
        (void)k_mutex_lock(&mtx, K_FOREVER); /* blocks: L holds it and inherits */
        rtrig_suite_mark1();
        (void)k_mutex_unlock(&mtx);
        iteration_end();
    }
}

static void handoff_l(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_mutex_lock(&mtx, K_FOREVER);
        (void)k_sem_give(&sem_h); /* H runs now and blocks on the mutex */
        rtrig_suite_mark0();
        (void)k_mutex_unlock(&mtx); /* hands it to H, which runs at once */
    }
}

static K_COLD void test_mutex_handoff(void)
{
    k_mutex_init(&mtx);
    k_sem_init(&sem_h, 0, 1);
    spawn_begin();
    spawn(handoff_h, PRIO_H, BIG_STACK);
    spawn(handoff_l, PRIO_L, BIG_STACK);
    spawn_run();
}

/* ---- 5 critical_section: k_irq_lock then k_irq_unlock ------------------------------ */

static void test_critical_section(void)
{
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        arch_irq_key_t key = k_irq_lock();
        k_irq_unlock(key);
        rtrig_suite_mark1();
        iteration_end();
    }
}

/* ---- 6 yield: A yields to B of equal priority ---------------------------------------- */

static K_HOT void yield_a(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark0();
        k_thread_yield();
        iteration_end();
    }
}

static K_HOT void yield_b(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        rtrig_suite_mark1();
        k_thread_yield();
    }
}

static K_COLD void test_yield(void)
{
    spawn_begin();
    spawn(yield_a, PRIO_EQ, BIG_STACK); /* first of its level: runs first */
    spawn(yield_b, PRIO_EQ, BIG_STACK);
    spawn_run();
}

/* ---- 7..9 thread_switch_N: N equal threads yield in turn, one switch each ----------- */

static volatile uint32_t sw_done, sw_warm;
static volatile bool sw_started, sw_finished;
static unsigned sw_threads;

static K_HOT void switch_entry(void *arg)
{
    (void)arg;
    for (;;) {
        if (sw_finished)
            return;
        if (sw_started) { /* resumed by the previous thread's yield */
            rtrig_suite_mark1();
            iteration_end();
            if (++sw_done >= iters) {
                sw_finished = true;
                return;
            }
        }
        /*
         * Every thread's first pass is a round of its own, unmeasured: each measured
         * switch is then to a thread resumed from this one yield, however many
         * threads there are (with 128 threads each of 60 switches would otherwise be
         * a thread's first run, which starts through k_thread_entry: 36 cycles more
         * than a resumed thread's return, measured).
         */
        if (sw_warm < sw_threads) {
            sw_warm++;
        } else {
            sw_started = true;
            suite_dcache_cold();
            rtrig_suite_mark0();
        }
        k_thread_yield();
    }
}

static K_COLD void thread_switch(unsigned n)
{
    sw_done = 0;
    sw_warm = 0;
    sw_threads = n;
    sw_started = false;
    sw_finished = iters == 0;
    spawn_begin();
    for (unsigned i = 0; i < n; i++)
        spawn(switch_entry, PRIO_EQ, SW_STACK);
    spawn_run();
}

static K_COLD void test_switch_2(void)
{
    thread_switch(2);
}

static K_COLD void test_switch_10(void)
{
    thread_switch(10);
}

/* Least stack head-room of the thread_switch_128 threads in the last run (bytes). */
static uint32_t sw_least_unused;

static K_COLD void test_switch_128(void)
{
    thread_switch(SW_MAX);
    size_t least = SW_STACK;
    for (unsigned i = 0; i < SW_MAX; i++) {
        size_t u = k_thread_stack_unused(workers[i]) * 4u;
        least = u < least ? u : least;
    }
    sw_least_unused = (uint32_t)least;
}

/* ---- 10, 11 priority inversion: L holds the lock, H requests it, M spins ------------ */

static bool pi_use_mutex;

static void pi_lock(void)
{
    if (pi_use_mutex)
        (void)k_mutex_lock(&mtx, K_FOREVER);
    else
        (void)k_sem_take(&bsem, K_FOREVER);
}

static void pi_unlock(void)
{
    if (pi_use_mutex)
        (void)k_mutex_unlock(&mtx);
    else
        (void)k_sem_give(&bsem);
}

static void pi_h(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_sem_take(&sem_h, K_FOREVER);
        (void)k_sem_give(&sem_m); /* M is ready from now on; it runs below H */
        rtrig_suite_mark0();
        pi_lock();
        rtrig_suite_mark1();
        pi_unlock();
        iteration_end();
    }
}

static void pi_m(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_sem_take(&sem_m, K_FOREVER);
        spin(PI_SPIN_CYCLES);
    }
}

static void pi_l(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        pi_lock();
        (void)k_sem_give(&sem_h); /* H runs, requests the lock and blocks */
        spin(PI_CS_CYCLES);       /* the rest of L's critical section */
        pi_unlock();
    }
}

static K_COLD void priority_inversion(bool with_inheritance)
{
    pi_use_mutex = with_inheritance;
    k_mutex_init(&mtx);
    k_sem_init(&bsem, 1, 1);
    k_sem_init(&sem_h, 0, 1);
    k_sem_init(&sem_m, 0, 1);
    spawn_begin();
    spawn(pi_h, PRIO_H, BIG_STACK);
    spawn(pi_m, PRIO_M, BIG_STACK);
    spawn(pi_l, PRIO_L, BIG_STACK);
    spawn_run();
}

static K_COLD void test_priority_inversion(void)
{
    priority_inversion(true);
}

static K_COLD void test_priority_inversion_no_pi(void)
{
    priority_inversion(false);
}

/* ---- 12..23 interrupt tests: timed from the rig's pulses -------------------------- */

#if SUITE_IRQ_TESTS
static uint32_t go_isr(void *arg);

/* One self-timed count as a TRACE word (clamped below the framing words). */
static void suite_count(uint32_t n)
{
    RTRIG_SUITE_TRACE(n < RTRIG_SUITE_TRACE_FRAME ? n : RTRIG_SUITE_TRACE_FRAME - 1u);
}

static struct k_event irq_ev;

/*
 * 12 isr_to_ist: each STIM0 pulse; the ISR raises MARKER0 and wakes the interrupt
 * service thread, which raises MARKER1. Two counts per iteration: the ISR's latency
 * from the edge's stamp, and MARKER0 to MARKER1.
 */
static volatile uint32_t ist_isr_latency;

static K_HOT uint32_t ist_isr(void *arg)
{
    (void)arg;
    uint32_t c = suite_mark(RTRIG_SUITE_MARKER0);
    uint32_t stamp = suite_irq_stamp(0);
    board_stim_ack();
    rtrig_suite_c0 = c;
    ist_isr_latency = c - stamp;
    return SYSINTR_IST;
}

static K_HOT void ist_entry(void *arg)
{
    (void)arg;
    for (uint32_t i = 0; i < iters; i++) {
        (void)k_event_wait(&irq_ev, K_FOREVER);
        rtrig_suite_mark1();
        RTRIG_SUITE_CLEAR(RTRIG_SUITE_MARKER0 | RTRIG_SUITE_MARKER1);
        suite_count(ist_isr_latency);
        suite_count(rtrig_suite_c1 - rtrig_suite_c0);
    }
}

static K_COLD void setup_isr_to_ist(void)
{
    k_event_init(&irq_ev, false, false);
    (void)k_irq_attach(SYSINTR_IST, &irq_ev);
    board_stim_attach(ist_isr, NULL);
}

static K_COLD void test_isr_to_ist(void)
{
    spawn_begin();
    spawn(ist_entry, PRIO_H, BIG_STACK);
    spawn_run();
}

/*
 * 13..23 the pair tests: STIM0 (line 0) and STIM1 (line 1, at the offset the host
 * sets) each interrupt; line n's ISR raises MARKERn, is busy IRQ_BUSY_CYCLES and
 * lowers it. Which line has the higher priority is the test's (the host's offset
 * makes STIM1 the second). Three counts per iteration, written by the ISR that ends
 * last: line 0's latency, line 1's latency (each from its edge's stamp to its marker)
 * and line 0's stamp to the later marker fall (both serviced).
 */
static volatile uint32_t pair_lat[2], pair_exit[2], pair_stamp0, pair_done, pair_iter;

static uint32_t pair_isr(void *arg)
{
    unsigned line = (unsigned)(uintptr_t)arg;
    uint32_t marker = line != 0 ? RTRIG_SUITE_MARKER1 : RTRIG_SUITE_MARKER0;
    uint32_t c = suite_mark(marker);
    uint32_t stamp = suite_irq_stamp(line);
    if (line != 0)
        board_stim1_ack();
    else
        board_stim_ack();
    spin(IRQ_BUSY_CYCLES);
    uint32_t e = suite_unmark(marker);
    uint32_t wake = K_SYSINTR_NOP;
    arch_irq_key_t key = k_irq_lock();
    pair_lat[line] = c - stamp;
    pair_exit[line] = e;
    if (line == 0)
        pair_stamp0 = stamp;
    if ((pair_done | (1u << line)) == 3u) {
        pair_done = 0;
        uint32_t last = (int32_t)(pair_exit[0] - pair_exit[1]) > 0 ? pair_exit[0] : pair_exit[1];
        suite_count(pair_lat[0]);
        suite_count(pair_lat[1]);
        suite_count(last - pair_stamp0);
        if (++pair_iter >= iters)
            wake = SYSINTR_IRQ;
    } else {
        pair_done |= 1u << line;
    }
    k_irq_unlock(key);
    return wake;
}

static unsigned pair_high_line;

static K_COLD void setup_pair(void)
{
    pair_done = 0;
    pair_iter = 0;
    k_event_init(&irq_ev, false, false);
    (void)k_irq_attach(SYSINTR_IRQ, &irq_ev);
    board_stim_priorities(pair_high_line == 0 ? 2u : 1u, pair_high_line == 0 ? 1u : 2u);
    board_stim1_attach(pair_isr, (void *)1u);
    board_stim_attach(pair_isr, (void *)0u);
}

static K_COLD void setup_high_second(void)
{
    pair_high_line = 1;
    setup_pair();
}

static K_COLD void setup_high_first(void)
{
    pair_high_line = 0;
    setup_pair();
}

static K_COLD void test_pair(void)
{
    if (iters != 0)
        (void)k_event_wait(&irq_ev, K_FOREVER);
}

/* After an interrupt test: STIM0 starts a run again, STIM1 is off. */
static K_COLD void irq_restore(void)
{
    board_stim1_attach(NULL, NULL);
    board_stim_priorities(1u, 2u);
    board_stim_attach(go_isr, NULL);
}
#define IRQ_TEST(name, setup, run)                                                                 \
    {                                                                                              \
        name, run, setup, irq_restore                                                              \
    }
#else
#define IRQ_TEST(name, setup, run)                                                                 \
    {                                                                                              \
        name, NULL, NULL, NULL                                                                     \
    }
#endif

/* ---- the table ----------------------------------------------------------------------- */

struct suite_test {
    const char *name;
    void (*run)(void);
    void (*setup)(void); /* before MARKER2 rises (interrupt tests: ISRs attached) */
    void (*restore)(void);
};

/* irq_nested_<offset>ns<suffix> for the five offsets (rtrig_suite.h, 14..23). */
#define NESTED_TESTS(suffix, setup)                                                                \
    IRQ_TEST("irq_nested_1500ns" suffix, setup, test_pair),                                        \
        IRQ_TEST("irq_nested_3000ns" suffix, setup, test_pair),                                    \
        IRQ_TEST("irq_nested_4500ns" suffix, setup, test_pair),                                    \
        IRQ_TEST("irq_nested_6000ns" suffix, setup, test_pair),                                    \
        IRQ_TEST("irq_nested_7500ns" suffix, setup, test_pair)

static const struct suite_test tests[RTRIG_SUITE_TESTS] = {
    {"event_wake", test_event_wake, NULL, NULL},
    {"sem_uncontended", test_sem_uncontended, NULL, NULL},
    {"sem_wake", test_sem_wake, NULL, NULL},
    {"mutex_uncontended", test_mutex_uncontended, NULL, NULL},
    {"mutex_handoff", test_mutex_handoff, NULL, NULL},
    {"critical_section", test_critical_section, NULL, NULL},
    {"yield", test_yield, NULL, NULL},
    {"thread_switch_2", test_switch_2, NULL, NULL},
    {"thread_switch_10", test_switch_10, NULL, NULL},
    {"thread_switch_128", test_switch_128, NULL, NULL},
    {"priority_inversion", test_priority_inversion, NULL, NULL},
    {"priority_inversion_no_pi", test_priority_inversion_no_pi, NULL, NULL},
    IRQ_TEST("isr_to_ist", setup_isr_to_ist, test_isr_to_ist),
    IRQ_TEST("irq_simultaneous", setup_high_second, test_pair),
    NESTED_TESTS("", setup_high_second),
    NESTED_TESTS("_high_first", setup_high_first),
};

/* ---- TRACE words as console text (boards without a trace port) -------------------- */

#if SUITE_TEXT_TRACE
static uint32_t text_count, text_errors;

/*
 * One line per test: "suite: <name> loaded|unloaded: <count> <count> ...", and a check
 * of the framing (iterations counts per test).
 */
K_COLD void suite_trace(uint32_t word)
{
    if (word == RTRIG_SUITE_TRACE_RUN_END) {
        board_puts("suite: run end\n");
    } else if ((word & 0xFFFF0000u) == 0x5EFF0000u) {
        board_puts("\n");
        if (text_count != iters) {
            board_puts("suite: FAIL: wrong number of counts\n");
            text_errors++;
        }
    } else if ((word & 0xFF000000u) == RTRIG_SUITE_TRACE_FRAME) {
        unsigned t = word & 0xFFFFu;
        board_puts("suite: ");
        board_puts(t < RTRIG_SUITE_TESTS ? tests[t].name : "?");
        board_puts((word & 0x10000u) ? " loaded:" : " unloaded:");
        text_count = 0;
    } else {
        board_putc(' ');
        board_put_u32(word);
        text_count++;
    }
}
#endif

/* ---- controller and LOAD --------------------------------------------------------------- */

static uint32_t go_isr(void *arg)
{
    (void)arg;
    board_stim_ack();
    return SYSINTR_GO;
}

static K_COLD void run_once(void)
{
    iters = suite_config.iterations;
    pause_cycles = suite_config.pause_cycles;
    uint32_t mask = suite_config.test_mask & SUITE_ALL_TESTS;
    for (unsigned t = 0; t < RTRIG_SUITE_TESTS; t++) {
        if (!(mask & (1u << t)))
            continue;
        if (tests[t].setup != NULL)
            tests[t].setup();
        rtrig_suite_test_begin(t, rig_load_enabled());
        tests[t].run();
        rtrig_suite_test_end(t);
        if (tests[t].restore != NULL)
            tests[t].restore();
        pause();
    }
    rtrig_suite_run_end();
}

static K_COLD void ctl_entry(void *arg)
{
    (void)arg;
    for (uint32_t run = 1;; run++) {
#if SUITE_HAS_STIM
        (void)k_event_wait(&go_event, K_FOREVER);
#endif
        run_once();
        board_puts("suite: run ");
        board_put_u32(run);
        board_puts(" done; head-room ");
        board_put_u32(sw_least_unused);
        board_putc('\n');
#if !SUITE_HAS_STIM
        board_puts(text_errors == 0 ? "suite: PASS\n" : "suite: FAIL\n");
        board_exit(text_errors == 0 ? 0 : 1);
#endif
    }
}

#if !defined(__riscv)
#define DEMCR    (*(volatile uint32_t *)0xE000EDFCu)
#define DWT_CTRL (*(volatile uint32_t *)0xE0001000u)
#endif

K_COLD int main(void)
{
    board_init();
#if !defined(__riscv) && SUITE_HAS_STIM
    DEMCR |= 1u << 24; /* TRCENA: DWT on */
    SUITE_DWT_CYCCNT = 0;
    DWT_CTRL |= 1u; /* CYCCNTENA */
#endif
    k_init();
    k_event_init(&go_event, false, false);
    k_irq_attach(SYSINTR_GO, &go_event);
    k_thread_create(&ctl_thread, "ctl", ctl_entry, NULL, ctl_stack, sizeof ctl_stack, PRIO_CTL, 0);
    k_thread_create(&load_thread, "load", rt_load_entry, NULL, load_stack, sizeof load_stack,
                    PRIO_LOAD, K_QUANTUM_DEFAULT);
#if SUITE_HAS_STIM
    board_stim_attach(go_isr, NULL);
#else
    (void)go_isr;
#endif
    board_puts("suite: ready\n");
    k_start();
    return 0;
}

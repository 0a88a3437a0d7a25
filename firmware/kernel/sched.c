/* SPDX-License-Identifier: BSD-2-Clause
 * Threads, the ready queue, ticks, timeouts and the idle thread.
 *
 * Ready queue: one FIFO list per priority plus a two-level bitmap (8 words of
 * 32 bits and a summary word), so finding the highest ready priority is two
 * count-trailing-zeros steps whatever the number of threads. The running
 * thread stays at the head of its level: a thread preempted by a higher
 * priority resumes before its peers, and round-robin moves it to the tail.
 */
#include "k_internal.h"

struct k_thread *volatile k_current;

static struct k_list ready_lists[K_NUM_PRIO];
static uint32_t ready_summary; /* bit g: ready_words[g] != 0 */
static uint32_t ready_words[K_NUM_PRIO / 32u];
/*
 * The scheduler's decision (the head of the highest ready level, or the idle
 * thread), computed once: sched_highest() fills it, a removal or rotation clears
 * it, and an insertion updates it in O(1) (the inserted thread either becomes the
 * head of the highest level or leaves the decision as it was). So a wake-up never
 * searches the bitmap: the tick and the IST hand-off decide with one comparison,
 * and the switch at the trap's end reuses the decision.
 */
static struct k_thread *sched_next;
static struct k_list timeouts; /* sorted by deadline, earliest first */
static volatile uint32_t ticks;
static bool started;
static bool idle_tickless; /* idle programmed the timer beyond 1 tick */

/* Not static: the riscv32 port's switch leaves its stack check to idle_entry. */
struct k_thread k_idle_thread;
static uint64_t idle_stack[K_CONFIG_IDLE_STACK_WORDS / 2u];
/* Stands for the boot context during the first switch; never scheduled. */
static struct k_thread boot_thread;

#define THREAD_OF(l) K_CONTAINER_OF(l, struct k_thread, link)

/*
 * Constant time on every port. rv32im has no ctz instruction (no Zbb): isolate
 * the lowest set bit (x & -x), multiply by a de Bruijn constant (every 5-bit
 * window of 0x077CB531 is distinct) and look the top 5 bits up: one mul, one
 * load, no branch. x != 0.
 */
#if defined(__riscv) && !defined(__riscv_zbb)
static const uint8_t ctz_table[32] = {0,  1,  28, 2,  29, 14, 24, 3, 30, 22, 20, 15, 25, 17, 4,  8,
                                      31, 27, 13, 23, 21, 19, 16, 7, 26, 12, 18, 6,  11, 5,  10, 9};
#endif

static K_INLINE unsigned ctz32(uint32_t x)
{
#if defined(__riscv) && !defined(__riscv_zbb)
    return ctz_table[((x & (0u - x)) * 0x077CB531u) >> 27];
#else
    return (unsigned)__builtin_ctz(x);
#endif
}

/* ---- ready queue -------------------------------------------------------- */

/*
 * Returns the scheduler's choice after the insertion (NULL: left to a search). With
 * test_empty (an insertion at the tail), a level that held threads keeps its bits as
 * they are (set): one test instead of two read-modify-writes, on the IST hand-off.
 */
static K_INLINE struct k_thread *ready_insert_at(struct k_thread *t, bool at_head,
                                                 bool test_empty)
{
    unsigned p = t->prio;
    struct k_list *l = &ready_lists[p];
    struct k_list *pos = at_head ? l->next : l;
    struct k_list *before = pos->prev; /* at the tail: l itself if the level was empty */
    k_list_insert_before(pos, &t->link);
    if (!test_empty || before == l) {
        ready_words[p >> 5] |= 1u << (p & 31u);
        ready_summary |= 1u << (p >> 5);
    }
    struct k_thread *n = sched_next;
    if (n != NULL && (n == &k_idle_thread || p < n->prio || (at_head && p == n->prio)))
        sched_next = n = t; /* above the old choice, or first at its level */
    ARCH_COST(2);
    return n;
}

static K_INLINE struct k_thread *ready_insert(struct k_thread *t, bool at_head)
{
    return ready_insert_at(t, at_head, false);
}

static K_INLINE void ready_remove(struct k_thread *t);

#if K_CONFIG_SCHED_LINEAR
/*
 * Test-only (K_CONFIG_SCHED_LINEAR=1, the suite's scaling check, docs/suite.md): a
 * search that visits every ready thread of the level, as a scheduler that scans its
 * threads does. It picks the same thread (the first of the highest priority) in time
 * that grows with the number of ready threads.
 */
static __attribute__((noinline)) struct k_thread *level_scan(struct k_list *l)
{
    struct k_list *best = l->next;
    for (struct k_list *n = best->next; n != l; n = n->next)
        if (THREAD_OF(n)->prio < THREAD_OF(best)->prio)
            best = n;
    return THREAD_OF(best);
}
#define LEVEL_PICK(l) level_scan(l)
#else
#define LEVEL_PICK(l) THREAD_OF((l)->next)
#endif

/*
 * Removing the scheduler's choice from a level that still holds threads leaves the
 * next of that level as the choice (the level stays the highest): no search, which
 * keeps the switch that follows short (a thread blocking while a peer is ready).
 * Removing any other thread leaves the choice as it was.
 */
static K_INLINE void ready_remove(struct k_thread *t)
{
    unsigned p = t->prio;
    struct k_list *l = &ready_lists[p];
    k_list_unlink(&t->link); /* every caller links it again, or the thread is dead */
    if (k_list_empty(l)) {
        ready_words[p >> 5] &= ~(1u << (p & 31u));
        if (ready_words[p >> 5] == 0)
            ready_summary &= ~(1u << (p >> 5));
        /* Nothing left ready (a thread going to sleep on an idle system): no search. */
        if (sched_next == t)
            sched_next = ready_summary == 0 ? &k_idle_thread : NULL;
    } else if (sched_next == t) {
        sched_next = LEVEL_PICK(l);
    }
    ARCH_COST(2);
}

/* The bitmap search, out of line: only after a removal or rotation. */
static struct k_thread *sched_search(void)
{
    struct k_thread *t;
    if (ready_summary == 0) {
        t = &k_idle_thread;
    } else {
        unsigned g = ctz32(ready_summary);
        unsigned p = (g << 5) + ctz32(ready_words[g]);
        t = LEVEL_PICK(&ready_lists[p]);
    }
    sched_next = t;
    return t;
}

static K_INLINE struct k_thread *sched_highest(void)
{
    ARCH_COST(2);
    struct k_thread *t = sched_next;
    return t != NULL ? t : sched_search();
}

/*
 * Move t to the tail of its level: round-robin among equals. When t was the
 * scheduler's choice its level is the highest ready one, so the new head is the
 * choice: no bitmap search at the switch (a yield to a peer). A choice above t stays.
 * The test build's scan (K_CONFIG_SCHED_LINEAR) stays in the switch's search.
 */
static K_INLINE bool level_rotate(struct k_thread *t)
{
    struct k_list *l = &ready_lists[t->prio];
    if (l->next == l->prev)
        return false; /* alone at its level */
    k_list_unlink(&t->link);
    k_list_insert_before(l, &t->link);
    if (sched_next == t)
        sched_next = K_CONFIG_SCHED_LINEAR ? NULL : THREAD_OF(l->next);
    return true;
}

/*
 * A new quantum for t and t at the tail of its level, masked with the caller's key;
 * then the mask as the key had it and, if t has peers, the switch asked for: a
 * yield's from its thread (unmasked before the switch, as k_sched_block does: the
 * switch takes the scheduler's choice again, so an interrupt in between changes
 * nothing but which thread comes next; with an outer lock held, key 0, the switch
 * happens masked), or the tick's, pended to its trap's end (key 0, from_thread false).
 * One copy for both; its calls are tail calls, so the yield needs no stack frame.
 */
K_HOT static __attribute__((noinline)) void rotate_and_switch(struct k_thread *t,
                                                             arch_irq_key_t key,
                                                             bool from_thread)
{
    t->slice_left = t->quantum;
    bool rotated = level_rotate(t);
    arch_irq_unlock(key);
    if (!rotated)
        return;
    if (from_thread)
        ARCH_SWITCH_FROM_THREAD();
    else
        arch_switch_pend();
}

static K_INLINE void resched(void)
{
    if (started && sched_highest() != k_current)
        arch_switch_pend();
}

K_WARM void k_sched_resched(void)
{
    resched();
}

/* Inlined into the wake-up paths of this file (tick, wait queues). */
static K_INLINE void make_ready(struct k_thread *t)
{
    t->state = K_STATE_READY;
    t->slice_left = t->quantum;
    ready_insert(t, false);
}

/* Out of line: thread creation, and the second step of a timeout's wake-up. */
__attribute__((noinline)) void k_sched_make_ready(struct k_thread *t)
{
    make_ready(t);
}

void k_sched_set_prio(struct k_thread *t, unsigned prio)
{
    unsigned old = t->prio;
    if (old == prio)
        return;
    switch (t->state) {
    case K_STATE_READY:
        ready_remove(t);
        t->prio = (uint8_t)prio;
        /* A raised thread goes first: it was raised because someone waits on it. */
        ready_insert(t, prio < old);
        break;
    case K_STATE_BLOCKED: {
        struct k_waitq *q = t->waitq;
        k_list_remove(&t->link);
        t->prio = (uint8_t)prio;
        struct k_list *pos = q->head.next;
        while (pos != &q->head && THREAD_OF(pos)->prio <= t->prio) {
            ARCH_COST(1);
            pos = pos->next;
        }
        k_list_insert_before(pos, &t->link);
        break;
    }
    default:
        t->prio = (uint8_t)prio;
        break;
    }
}

/* ---- timeouts ------------------------------------------------------------ */

static void timeout_add(struct k_thread *t, uint32_t deadline)
{
    struct k_list *pos = timeouts.next;
    t->deadline = deadline;
    /* O(sleeping threads), with interrupts masked: see docs/kernel.md. */
    while (pos != &timeouts &&
           k_tick_reached(K_CONTAINER_OF(pos, struct k_thread, tlink)->deadline, deadline)) {
        ARCH_COST(1);
        pos = pos->next;
    }
    k_list_insert_before(pos, &t->tlink);
}

/* The first timeout due by tick count now, unlinked from the list; NULL if none. */
static __attribute__((noinline)) struct k_thread *timeout_pop_due(uint32_t now)
{
    if (k_list_empty(&timeouts))
        return NULL;
    struct k_thread *t = K_CONTAINER_OF(timeouts.next, struct k_thread, tlink);
    if (!k_tick_reached(t->deadline, now))
        return NULL;
    k_list_remove(&t->tlink);
    return t;
}

/*
 * A timed-out thread's wake-up, in two steps that the tick masks separately (as
 * the IST hand-off's): timeout_take takes it off its wait queue (timeout_pop_due
 * took it off the timeout list), and it stays on no list (K_STATE_WAKING) until
 * k_sched_make_ready makes it ready, after the mask has opened once.
 */
static __attribute__((noinline)) void timeout_take(struct k_thread *t)
{
    if (t->state == K_STATE_BLOCKED) {
        k_list_unlink(&t->link); /* make_ready links it into the ready queue */
        t->waitq = NULL;
    }
    t->wake_result = K_TIMEOUT;
    t->state = K_STATE_WAKING;
}

/* Masked by the caller (the switch at a tickless idle's exit, where nothing is due). */
static void tick_process(uint32_t n)
{
    ticks += n;
    struct k_thread *t;
    while ((t = timeout_pop_due(ticks)) != NULL) {
        timeout_take(t);
        k_sched_make_ready(t);
    }
}

void k_tick_announce_from_isr(uint32_t n)
{
    TRACE_TICK_ENTER();
    arch_irq_key_t key = arch_irq_lock();
    /* Any announcement means the port is back on the periodic tick. */
    idle_tickless = false;
    ticks += n;
    /*
     * One expired timeout per two masked sections: the mask opens between taking a
     * thread off its lists and making it ready, and between wake-ups, so each
     * section stays short however many threads wake on this tick (a device interrupt
     * that nests in between sees consistent lists; the loop reads the list's head
     * again each time).
     */
    struct k_thread *t;
    while ((t = timeout_pop_due(ticks)) != NULL) {
        timeout_take(t);
        arch_irq_unlock(key);
        key = arch_irq_lock();
        k_sched_make_ready(t);
        arch_irq_unlock(key);
        key = arch_irq_lock();
    }
    struct k_thread *cur = k_current;
    if (cur != &k_idle_thread && cur->state == K_STATE_READY && cur->quantum != 0) {
        if (cur->slice_left > n) {
            cur->slice_left -= n;
        } else {
            rotate_and_switch(cur, 0, false); /* pends the switch if cur had peers */
        }
    }
    /*
     * Taken from idle, the tick leaves the switch to the thread it woke to the idle
     * thread (its loop asks for it): the tick's trap stays short, and an interrupt
     * that arrives meanwhile is taken between the two instead of waiting for both
     * (docs/kernel.md, non-preemptible sections).
     */
    if (cur != &k_idle_thread)
        resched();
    arch_irq_unlock(key);
    TRACE_TICK_EXIT();
}

uint32_t k_uptime_ticks(void)
{
    return ticks;
}

/* ---- waiting ---------------------------------------------------------------- */

K_COLD void k_waitq_init(struct k_waitq *q)
{
    k_list_init(&q->head);
}

/* The first waiter of q, taken off its wait queue and the timeout list for a wake-up
 * that the caller completes: at once (k_waitq_wake_one) or in a second masked step
 * (k_waitq_hand_off). NULL if none waits. */
static K_INLINE struct k_thread *waitq_take_first(struct k_waitq *q)
{
    struct k_thread *t = k_waitq_first(q);
    if (K_UNLIKELY(t == NULL))
        return NULL;
    k_list_unlink(&t->link); /* make_ready links it into the ready queue */
    t->waitq = NULL;
    if (K_UNLIKELY(!k_list_empty(&t->tlink)))
        k_list_remove(&t->tlink);
    else
        ARCH_COST(1); /* same cost either way on the host's cycle model */
    return t;
}

K_WARM struct k_thread *k_waitq_wake_one(struct k_waitq *q, int result)
{
    struct k_thread *t = waitq_take_first(q);
    if (t == NULL)
        return NULL;
    t->wake_result = result;
    make_ready(t);
    return t;
}

/*
 * The IST hand-off (an auto-reset event set, by an ISR or a thread; a semaphore given
 * to its waiter): called masked with the caller's key (0: an outer lock is held, and
 * both steps are one section), it wakes the first waiter of q with K_OK in two masked
 * steps, or, when none waits, sets *signaled (an event's: the next wait returns at
 * once). First the waiter leaves its wait queue and the timeout list
 * (K_STATE_WAKING: on no list, so no other wake-up, timeout or priority change can
 * move it meanwhile), then the mask opens once and it is made ready with the
 * scheduler's decision (one comparison in ready_insert). Returns with the caller's
 * mask back; a switch the wake-up makes due is asked for after that, as after
 * k_sched_block's unlock: the switch takes the scheduler's choice again, and in a
 * handler it is only pended (the trap's end reuses the decision). A decision left to
 * a search (sched_next NULL: only between a removal and the next switch) is left to
 * the switch too. The only call is the last: no stack frame.
 */
K_HOT void k_waitq_hand_off(struct k_waitq *q, bool *signaled, arch_irq_key_t key)
{
    struct k_thread *t = waitq_take_first(q);
    if (K_UNLIKELY(t == NULL)) {
        if (signaled != NULL)
            *signaled = true;
        arch_irq_unlock(key);
        return;
    }
    t->state = K_STATE_WAKING;
    arch_irq_unlock(key);
    (void)arch_irq_lock();
    t->wake_result = K_OK;
    t->state = K_STATE_READY;
    t->slice_left = t->quantum;
    struct k_thread *n = ready_insert_at(t, false, true);
    bool due = n != k_current && started;
    arch_irq_unlock(key);
    if (due)
        arch_switch_pend();
}

K_HOT int k_sched_block(struct k_waitq *q, uint32_t timeout_ms, arch_irq_key_t key)
{
    struct k_thread *t = k_current;
    K_ASSERT(!ARCH_IN_ISR());
    ready_remove(t);
    t->wake_result = K_TIMEOUT;
    if (q != NULL) {
        struct k_list *pos = q->head.next;
        while (pos != &q->head && THREAD_OF(pos)->prio <= t->prio) {
            ARCH_COST(1);
            pos = pos->next;
        }
        k_list_insert_before(pos, &t->link);
        t->waitq = q;
        t->state = K_STATE_BLOCKED;
    } else {
        t->state = K_STATE_SLEEPING;
    }
    if (timeout_ms != K_FOREVER)
        timeout_add(t, ticks + timeout_ms);
    /*
     * Unmask before asking for the switch, so the masked section and the switch's
     * trap are two short sections, not one long one. Race-free: the thread is
     * already off the ready queue, and the switch (at the end of an interrupt taken
     * in between, or this call's own) takes the scheduler's decision again in
     * k_sched_switch_hook. An interrupt in the gap that wakes another thread
     * switches away at its trap's end; one that wakes this thread leaves it
     * running (it is k_current and ready again) and the switch below finds nothing
     * better. Either way nothing is lost, at worst one switch that keeps the
     * thread. With an outer lock held (key 0) the switch happens masked, as before.
     */
    arch_irq_unlock(key);
    ARCH_SWITCH_FROM_THREAD();
    return t->wake_result;
}

void k_sleep_ms(uint32_t ms)
{
    if (ms == 0) {
        k_thread_yield();
        return;
    }
    arch_irq_key_t key = arch_irq_lock();
    (void)k_sched_block(NULL, ms, key);
}

/* ---- threads ------------------------------------------------------------------ */

K_COLD static void stack_prepare(struct k_thread *t, void *stack, size_t size)
{
    uintptr_t lo = ((uintptr_t)stack + 7u) & ~(uintptr_t)7u;
    uintptr_t hi = ((uintptr_t)stack + size) & ~(uintptr_t)(ARCH_STACK_ALIGN - 1u);
    uint32_t *w = (uint32_t *)lo;
    size_t words = (hi - lo) / 4u;
    for (size_t i = 0; i < words; i++)
        w[i] = i < K_CONFIG_STACK_CANARY_WORDS ? K_STACK_CANARY : K_STACK_FILL;
    t->stack_limit = w;
    t->stack_size = hi - lo;
}

static K_INLINE bool stack_intact(const struct k_thread *t)
{
    /* Every word compared, one branch: this runs on each switch. */
    uint32_t diff = 0;
#pragma GCC unroll 8
    for (unsigned i = 0; i < K_CONFIG_STACK_CANARY_WORDS; i++)
        diff |= t->stack_limit[i] ^ K_STACK_CANARY;
    return diff == 0;
}

size_t k_thread_stack_unused(const struct k_thread *t)
{
    size_t n = 0;
    size_t words = t->stack_size / 4u;
    for (size_t i = K_CONFIG_STACK_CANARY_WORDS; i < words; i++, n++)
        if (t->stack_limit[i] != K_STACK_FILL)
            break;
    return n;
}

K_COLD static void thread_setup(struct k_thread *t, const char *name, k_entry_fn entry, void *arg,
                                void *stack, size_t size, unsigned prio, uint32_t quantum)
{
    t->name = name;
    t->entry = entry;
    t->arg = arg;
    t->prio = t->base_prio = (uint8_t)prio;
    t->quantum = quantum == K_QUANTUM_DEFAULT ? K_CONFIG_DEFAULT_QUANTUM_MS : quantum;
    t->mutexes_held = 0;
    t->waitq = NULL;
    k_list_init(&t->link);
    k_list_init(&t->tlink);
    k_waitq_init(&t->joiners);
    stack_prepare(t, stack, size);
    arch_thread_init(t, t->stack_limit, t->stack_size);
}

K_COLD int k_thread_create(struct k_thread *t, const char *name, k_entry_fn entry, void *arg,
                           void *stack, size_t stack_size, unsigned prio, uint32_t quantum_ms)
{
    if (t == NULL || entry == NULL || stack == NULL || prio >= K_NUM_PRIO ||
        stack_size < 64u + 4u * K_CONFIG_STACK_CANARY_WORDS)
        return K_EINVAL;
    if (t->state != K_STATE_DEAD)
        return K_EINVAL;
    /* Stack filling is O(stack size): done before masking, the thread is not visible yet. */
    thread_setup(t, name, entry, arg, stack, stack_size, prio, quantum_ms);
    arch_irq_key_t key = arch_irq_lock();
    k_sched_make_ready(t);
    k_sched_resched();
    arch_irq_unlock(key);
    return K_OK;
}

K_COLD void k_thread_entry(void)
{
    struct k_thread *t = k_current;
    t->entry(t->arg);
    arch_irq_key_t key = arch_irq_lock();
    ready_remove(t);
    t->state = K_STATE_DEAD;
    while (k_waitq_wake_one(&t->joiners, K_OK) != NULL)
        ;
    arch_switch_pend();
    arch_irq_unlock(key);
    for (;;)
        ; /* not reached: a dead thread is never scheduled again */
}

struct k_thread *k_thread_self(void)
{
    return k_current;
}

void k_thread_set_priority(struct k_thread *t, unsigned prio)
{
    K_ASSERT(prio < K_NUM_PRIO);
    arch_irq_key_t key = arch_irq_lock();
    t->base_prio = (uint8_t)prio;
    /* A boosted owner keeps its boost until it releases its mutexes. */
    if (t->mutexes_held == 0 || prio < t->prio)
        k_sched_set_prio(t, prio);
    k_sched_resched();
    arch_irq_unlock(key);
}

void k_thread_set_quantum(struct k_thread *t, uint32_t quantum_ms)
{
    arch_irq_key_t key = arch_irq_lock();
    t->quantum = quantum_ms == K_QUANTUM_DEFAULT ? K_CONFIG_DEFAULT_QUANTUM_MS : quantum_ms;
    t->slice_left = t->quantum;
    arch_irq_unlock(key);
}

K_HOT void k_thread_yield(void)
{
    arch_irq_key_t key = arch_irq_lock();
    rotate_and_switch(k_current, key, true);
}

int k_thread_join(struct k_thread *t, uint32_t timeout_ms)
{
    arch_irq_key_t key = arch_irq_lock();
    if (t->state == K_STATE_DEAD) {
        arch_irq_unlock(key);
        return K_OK;
    }
    if (timeout_ms == K_NO_WAIT) {
        arch_irq_unlock(key);
        return K_TIMEOUT;
    }
    return k_sched_block(&t->joiners, timeout_ms, key);
}

/* ---- context switch hook ------------------------------------------------------ */

static K_INLINE struct k_thread *switch_to(struct k_thread *out, struct k_thread *in)
{
    if (in != out)
        TRACE_SWITCH(out, in);
    k_current = in;
    ARCH_COST(4);
    return in;
}

/*
 * The switch out of a tickless idle, or with the choice left to a search: out of line,
 * so the hook saves no registers on every other switch. K_WARM: only a switch out of
 * an idle longer than one tick, or after a removal, comes here (rt_test's never does).
 */
K_WARM static __attribute__((noinline)) struct k_thread *switch_hook_slow(struct k_thread *out)
{
    if (out == &k_idle_thread && idle_tickless) {
        idle_tickless = false;
        uint32_t n = arch_timer_idle_exit();
        if (n != 0)
            tick_process(n);
        TRACE_IDLE_EXIT();
    }
    return switch_to(out, sched_highest());
}

/* The kept choice; the rest out of line, so the common path calls nothing. */
K_HOT struct k_thread *k_sched_switch_hook(struct k_thread *out)
{
#ifndef ARCH_SWITCH_CHECKS_STACK
    /* Checked here because every thread passes through: cheap and deterministic. */
    if (out->stack_limit != NULL && !stack_intact(out))
        k_panic(K_ERR_STACK_OVERFLOW, out->base_prio);
#endif
    struct k_thread *in = sched_next;
    if (K_UNLIKELY(in == NULL || (out == &k_idle_thread && idle_tickless)))
        return switch_hook_slow(out);
    return switch_to(out, in);
}

/* ---- idle ------------------------------------------------------------------------ */

K_HOT static void idle_entry(void *arg)
{
    (void)arg;
    for (;;) {
#ifdef ARCH_IDLE_CHECK_STACK
        /* The port's switch checks every thread's canary but this one's (it would
         * delay the first thread after idle): checked here, open, before each wait. */
        ARCH_IDLE_CHECK_STACK(&k_idle_thread);
#endif
        arch_irq_key_t key = arch_irq_lock();
        if (sched_highest() == &k_idle_thread) {
            uint32_t n = K_CONFIG_MAX_IDLE_TICKS;
            if (!k_list_empty(&timeouts)) {
                uint32_t d = K_CONTAINER_OF(timeouts.next, struct k_thread, tlink)->deadline;
                int32_t left = (int32_t)(d - ticks);
                if (left < 1)
                    left = 1;
                if ((uint32_t)left < n)
                    n = (uint32_t)left;
            }
            /* One tick: the periodic tick is already due, nothing to program or undo. */
            if (n > 1u) {
                idle_tickless = true;
                arch_timer_set_idle(n);
            }
            TRACE_IDLE_ENTER();
            arch_idle_wait();
            TRACE_IDLE_WAKE();
            arch_irq_unlock(key);
        } else {
            /* A tick taken from idle woke a thread: switch to it, unmasked (as in
             * k_sched_block, the switch decides again). */
            arch_irq_unlock(key);
            arch_switch_pend();
        }
    }
}

/* ---- start-up -------------------------------------------------------------------- */

K_COLD void k_init(void)
{
    for (unsigned p = 0; p < K_NUM_PRIO; p++)
        k_list_init(&ready_lists[p]);
    for (unsigned g = 0; g < K_NUM_PRIO / 32u; g++)
        ready_words[g] = 0;
    ready_summary = 0;
    sched_next = NULL;
    k_list_init(&timeouts);
    ticks = 0;
    started = false;
    idle_tickless = false;
    k_current = NULL;
    extern void k_irq_reset(void);
    k_irq_reset();
    /* The idle thread is not in the ready queue: it runs when the bitmap is empty. */
    thread_setup(&k_idle_thread, "idle", idle_entry, NULL, idle_stack, sizeof idle_stack,
                 K_NUM_PRIO - 1u, 0);
    k_idle_thread.state = K_STATE_READY;
    boot_thread.state = K_STATE_DEAD;
    boot_thread.stack_limit = NULL;
    boot_thread.name = "boot";
}

K_COLD void k_start(void)
{
    arch_irq_key_t key = arch_irq_lock();
    (void)key; /* stays masked: arch_start unmasks as it enters the first thread */
    k_current = &boot_thread;
    started = true;
    arch_timer_start();
    arch_start();
}

K_COLD void k_panic(uint32_t code, uint32_t detail)
{
    (void)arch_irq_lock();
    arch_halt(code, detail);
}

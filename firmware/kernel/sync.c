/* SPDX-License-Identifier: BSD-2-Clause */
/* Events, counting semaphores, mutexes with priority inheritance, critical sections. */
#include "k_internal.h"

/* ---- events ---------------------------------------------------------------- */

K_COLD void k_event_init(struct k_event *ev, bool manual_reset, bool initially_signaled)
{
    k_waitq_init(&ev->waiters);
    ev->manual_reset = manual_reset;
    ev->signaled = initially_signaled;
}

/* A manual-reset event's set, masked with the caller's key: every waiter is woken. */
static __attribute__((noinline)) void event_set_manual(struct k_event *ev, arch_irq_key_t key)
{
    ev->signaled = true;
    /* O(waiters) with interrupts masked; see docs/kernel.md. */
    while (k_waitq_wake_one(&ev->waiters, K_OK) != NULL)
        ;
    k_sched_resched();
    arch_irq_unlock(key);
}

/* Both paths end in a tail call: the auto-reset one (the IST hand-off) has no frame. */
K_HOT void k_event_set(struct k_event *ev)
{
    arch_irq_key_t key = arch_irq_lock();
    if (!ev->manual_reset)
        k_waitq_hand_off(&ev->waiters, &ev->signaled, key);
    else
        event_set_manual(ev, key);
}

void k_event_set_from_isr(struct k_event *ev)
{
    /* Same body: arch_switch_pend defers the switch to the end of the interrupt. */
    k_event_set(ev);
}

/*
 * The IST hand-off: the event attached to an interrupt id (irq.c) is set here,
 * straight into k_event_set; an auto-reset event's waiter is woken and the
 * scheduler's decision made in one call (k_waitq_hand_off), with no stack frame on
 * the way.
 */
K_HOT void k_isr_signal(uint32_t id)
{
    struct k_event *ev = id < K_SYSINTR_MAX ? k_sysintr_events[id] : NULL;
    if (ev != NULL) {
        k_event_set(ev);
        TRACE_IST_WAKE();
    }
}

void k_event_reset(struct k_event *ev)
{
    arch_irq_key_t key = arch_irq_lock();
    ev->signaled = false;
    arch_irq_unlock(key);
}

K_HOT int k_event_wait(struct k_event *ev, uint32_t timeout_ms)
{
    arch_irq_key_t key = arch_irq_lock();
    if (ev->signaled) {
        if (!ev->manual_reset)
            ev->signaled = false;
        arch_irq_unlock(key);
        return K_OK;
    }
    if (timeout_ms == K_NO_WAIT) {
        arch_irq_unlock(key);
        return K_TIMEOUT;
    }
    return k_sched_block(&ev->waiters, timeout_ms, key);
}

/* ---- semaphores ------------------------------------------------------------ */

K_COLD void k_sem_init(struct k_sem *s, uint32_t initial, uint32_t max)
{
    k_waitq_init(&s->waiters);
    s->max = max == 0 ? 1 : max;
    s->count = initial > s->max ? s->max : initial;
}

/*
 * A waiter takes the unit directly (k_waitq_hand_off), so a higher-priority thread
 * cannot steal it.
 */
K_HOT int k_sem_give(struct k_sem *s)
{
    arch_irq_key_t key = arch_irq_lock();
    if (!k_list_empty(&s->waiters.head)) {
        k_waitq_hand_off(&s->waiters, NULL, key);
        return K_OK;
    }
    int r = K_OK;
    if (s->count >= s->max)
        r = K_EOVERFLOW;
    else
        s->count++;
    arch_irq_unlock(key);
    return r;
}

int k_sem_give_from_isr(struct k_sem *s)
{
    /* Same body: arch_switch_pend defers the switch to the end of the interrupt. */
    return k_sem_give(s);
}

K_HOT int k_sem_take(struct k_sem *s, uint32_t timeout_ms)
{
    arch_irq_key_t key = arch_irq_lock();
    if (s->count > 0) {
        s->count--;
        arch_irq_unlock(key);
        return K_OK;
    }
    if (timeout_ms == K_NO_WAIT) {
        arch_irq_unlock(key);
        return K_TIMEOUT;
    }
    return k_sched_block(&s->waiters, timeout_ms, key);
}

uint32_t k_sem_count(const struct k_sem *s)
{
    return s->count;
}

/* ---- mutexes ------------------------------------------------------------------ */

K_COLD void k_mutex_init(struct k_mutex *m)
{
    k_waitq_init(&m->waiters);
    m->owner = NULL;
    m->depth = 0;
}

/*
 * Recompute the owner's effective priority after a waiter left without the
 * mutex. Inheritance is one level: an owner holding several mutexes keeps its
 * boost until it releases the last one (it can only be too high, never too low).
 */
static void mutex_reprio_owner(struct k_mutex *m)
{
    struct k_thread *o = m->owner;
    if (o == NULL || o->mutexes_held > 1)
        return;
    unsigned want = o->base_prio;
    struct k_thread *w = k_waitq_first(&m->waiters);
    if (w != NULL && w->prio < want)
        want = w->prio;
    k_sched_set_prio(o, want);
}

K_HOT int k_mutex_lock(struct k_mutex *m, uint32_t timeout_ms)
{
    K_ASSERT(!arch_in_isr());
    arch_irq_key_t key = arch_irq_lock();
    struct k_thread *self = k_current;
    if (m->owner == NULL) {
        m->owner = self;
        m->depth = 1;
        self->mutexes_held++;
        arch_irq_unlock(key);
        return K_OK;
    }
    if (m->owner == self) {
        m->depth++;
        arch_irq_unlock(key);
        return K_OK;
    }
    if (timeout_ms == K_NO_WAIT) {
        arch_irq_unlock(key);
        return K_TIMEOUT;
    }
    /* One level: the owner is raised, but not whatever the owner is waiting for. */
    if (self->prio < m->owner->prio)
        k_sched_set_prio(m->owner, self->prio);
    int r = k_sched_block(&m->waiters, timeout_ms, key);
    if (r != K_OK) {
        key = arch_irq_lock();
        mutex_reprio_owner(m);
        k_sched_resched();
        arch_irq_unlock(key);
    }
    /* On K_OK the releasing thread already made us the owner. */
    return r;
}

K_HOT int k_mutex_unlock(struct k_mutex *m)
{
    arch_irq_key_t key = arch_irq_lock();
    struct k_thread *self = k_current;
    if (m->owner != self) {
        arch_irq_unlock(key);
        return K_EPERM;
    }
    if (--m->depth != 0) {
        arch_irq_unlock(key);
        return K_OK;
    }
    self->mutexes_held--;
    if (self->mutexes_held == 0 && self->prio != self->base_prio)
        k_sched_set_prio(self, self->base_prio);
    /* Hand over directly: the highest waiter owns the mutex before it even runs. */
    struct k_thread *next = k_waitq_wake_one(&m->waiters, K_OK);
    if (next != NULL) {
        m->owner = next;
        m->depth = 1;
        next->mutexes_held++;
    } else {
        m->owner = NULL;
    }
    k_sched_resched();
    arch_irq_unlock(key);
    return K_OK;
}

/* ---- critical sections ---------------------------------------------------------- */

K_COLD void k_crit_init(struct k_crit *c)
{
    k_mutex_init(&c->m);
}

void k_crit_enter(struct k_crit *c)
{
    struct k_mutex *m = &c->m;
    arch_irq_key_t key = arch_irq_lock();
    struct k_thread *self = k_current;
    if (m->owner == NULL || m->owner == self) {
        if (m->owner == NULL) {
            m->owner = self;
            self->mutexes_held++;
        }
        m->depth++;
        arch_irq_unlock(key);
        return;
    }
    arch_irq_unlock(key);
    (void)k_mutex_lock(m, K_FOREVER);
}

void k_crit_leave(struct k_crit *c)
{
    struct k_mutex *m = &c->m;
    arch_irq_key_t key = arch_irq_lock();
    struct k_thread *self = k_current;
    K_ASSERT(m->owner == self);
    if (m->depth > 1) {
        m->depth--;
        arch_irq_unlock(key);
        return;
    }
    /* Fast path only when nobody waits and no boost must be undone. */
    if (k_list_empty(&m->waiters.head) &&
        (self->mutexes_held > 1 || self->prio == self->base_prio)) {
        m->depth = 0;
        m->owner = NULL;
        self->mutexes_held--;
        arch_irq_unlock(key);
        return;
    }
    arch_irq_unlock(key);
    (void)k_mutex_unlock(m);
}

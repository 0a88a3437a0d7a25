/* SPDX-License-Identifier: BSD-2-Clause */
/* Kernel-internal helpers shared by the kernel's .c files. Not for programs. */
#ifndef K_INTERNAL_H
#define K_INTERNAL_H

#include "arch.h"
#include "kernel.h"

/*
 * arch_switch_pend where only a thread asks (a yield, a thread blocking; never an
 * interrupt handler): a port may define it in arch_port.h as a switch that skips the
 * handler check (riscv32: riscv_switch_thread).
 */
#ifndef ARCH_SWITCH_FROM_THREAD
#define ARCH_SWITCH_FROM_THREAD() arch_switch_pend()
#endif

#define K_CONTAINER_OF(ptr, type, member) ((type *)((char *)(ptr)-offsetof(type, member)))

static K_INLINE void k_list_init(struct k_list *l)
{
    l->next = l;
    l->prev = l;
}

static K_INLINE bool k_list_empty(const struct k_list *l)
{
    return l->next == l;
}

static K_INLINE void k_list_insert_before(struct k_list *pos, struct k_list *n)
{
    ARCH_COST(1);
    n->next = pos;
    n->prev = pos->prev;
    pos->prev->next = n;
    pos->prev = n;
}

static K_INLINE void k_list_remove(struct k_list *n)
{
    ARCH_COST(1);
    n->prev->next = n->next;
    n->next->prev = n->prev;
    n->next = n;
    n->prev = n;
}

/* Take n out of its list without re-linking it to itself: n is inserted elsewhere next. */
static K_INLINE void k_list_unlink(struct k_list *n)
{
    ARCH_COST(1);
    n->prev->next = n->next;
    n->next->prev = n->prev;
}

/* Wrap-safe "a is at or before b" for tick counts. */
static inline bool k_tick_reached(uint32_t deadline, uint32_t now)
{
    return (int32_t)(deadline - now) <= 0;
}

/* The event attached to each interrupt id (irq.c; NULL: none). */
extern struct k_event *k_sysintr_events[K_SYSINTR_MAX];

/* Scheduler primitives (sched.c); all need interrupts masked. */
void k_sched_make_ready(struct k_thread *t);
/* The idle thread; the riscv32 port's switch leaves its stack check to it (trap.S). */
extern struct k_thread k_idle_thread;
void k_sched_resched(void);
void k_sched_set_prio(struct k_thread *t, unsigned prio);
/* Block k_current on q (may be NULL for a plain sleep) and unlock; returns wake_result. */
int k_sched_block(struct k_waitq *q, uint32_t timeout_ms, arch_irq_key_t key);
void k_waitq_init(struct k_waitq *q);
/* Wake the first waiter of q with result; returns it or NULL. */
struct k_thread *k_waitq_wake_one(struct k_waitq *q, int result);
/* The IST hand-off, called masked with key: wake the first waiter of q (K_OK) or, with
 * none, set *signaled (if not NULL); returns with the mask as key had it, and asks for
 * the switch the wake-up makes due. */
void k_waitq_hand_off(struct k_waitq *q, bool *signaled, arch_irq_key_t key);
static inline struct k_thread *k_waitq_first(const struct k_waitq *q)
{
    return k_list_empty(&q->head) ? NULL : K_CONTAINER_OF(q->head.next, struct k_thread, link);
}

#endif /* K_INTERNAL_H */

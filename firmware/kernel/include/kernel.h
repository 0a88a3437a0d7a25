/* SPDX-License-Identifier: BSD-2-Clause
 * rtrig kernel: public API.
 *
 * A small preemptive real-time kernel for the rtrig target programs. Every
 * object (thread, stack, event, semaphore, mutex) is allocated by the caller;
 * the kernel never allocates memory. See docs/kernel.md for the guarantees.
 */
#ifndef KERNEL_H
#define KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch_port.h"
#include "k_config.h"
#include "k_trace.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- results and special timeouts ------------------------------------- */

#define K_OK        0
#define K_TIMEOUT   (-1)
#define K_EINVAL    (-2)
#define K_EPERM     (-3)
#define K_EOVERFLOW (-4)

#define K_NO_WAIT 0u
#define K_FOREVER 0xFFFFFFFFu

/* Error codes passed to k_panic() and shown by the board's halt routine. */
#define K_ERR_STACK_OVERFLOW 0xE1u
#define K_ERR_ASSERT         0xE2u
#define K_ERR_BAD_EXCEPTION  0xE3u
#define K_ERR_DEADLOCK       0xE4u

/* ---- assertions --------------------------------------------------------- */

#if K_CONFIG_ASSERT
#define K_ASSERT(cond)                                                                             \
    do {                                                                                           \
        if (!(cond))                                                                               \
            k_panic(K_ERR_ASSERT, __LINE__);                                                       \
    } while (0)
#else
#define K_ASSERT(cond) ((void)0)
#endif

/* ---- intrusive list (kernel internal, visible for static allocation) ---- */

struct k_list {
    struct k_list *next;
    struct k_list *prev;
};

struct k_waitq {
    struct k_list head; /* waiters, highest priority first, FIFO within a level */
};

/* ---- threads ------------------------------------------------------------ */

enum k_thread_state {
    K_STATE_DEAD = 0,
    K_STATE_READY,    /* in the ready queue; the running thread is also READY */
    K_STATE_BLOCKED,  /* in a wait queue, maybe also in the timeout list */
    K_STATE_SLEEPING, /* only in the timeout list */
    K_STATE_WAKING,   /* taken off its wait queue, about to be made ready: on no list */
};

typedef void (*k_entry_fn)(void *arg);

struct k_mutex;

struct k_thread {
    struct arch_thread arch; /* first: the context-switch code finds the saved SP at offset 0 */
    struct k_list link;      /* ready queue or wait queue (never both) */
    struct k_list tlink;     /* timeout list */
    uint32_t deadline;       /* absolute tick of the timeout, valid while in tlink */
    struct k_waitq *waitq;   /* queue the thread is blocked on, or NULL */
    int wake_result;         /* K_OK or K_TIMEOUT, written by the waker */
    uint8_t prio;            /* effective priority (inherited while boosted) */
    uint8_t base_prio;       /* priority set by the application */
    uint8_t state;
    uint8_t mutexes_held;
    uint32_t quantum;      /* ms, 0 = run to completion */
    uint32_t slice_left;   /* ms left of the current quantum */
    uint32_t *stack_limit; /* lowest stack word: the canary sits here */
    size_t stack_size;
    k_entry_fn entry;
    void *arg;
    const char *name;
    struct k_waitq joiners;
};

/* Initialise the kernel. Call once, before anything else (tests call it per test). */
void k_init(void);

/*
 * Start scheduling. On a target this never returns; the calling context is
 * abandoned. On the host port it returns when a thread calls host_stop().
 */
void k_start(void);

/*
 * Create a thread on a caller-provided stack and make it ready.
 * prio: 0 (highest) .. 255 (lowest). quantum_ms: round-robin slice among
 * threads of the same priority, 0 = run to completion.
 */
int k_thread_create(struct k_thread *t, const char *name, k_entry_fn entry, void *arg, void *stack,
                    size_t stack_size, unsigned prio, uint32_t quantum_ms);
struct k_thread *k_thread_self(void);
void k_thread_set_priority(struct k_thread *t, unsigned prio);
void k_thread_set_quantum(struct k_thread *t, uint32_t quantum_ms);
/* Give the CPU to the next ready thread of the same priority, if any. */
void k_thread_yield(void);
/* Wait until t has returned from its entry function. */
int k_thread_join(struct k_thread *t, uint32_t timeout_ms);
/* Words of the stack never written so far (stack fill is checked from the bottom). */
size_t k_thread_stack_unused(const struct k_thread *t);

/* ---- time --------------------------------------------------------------- */

/* Sleep until the ms-th tick boundary after the call (duration in (ms-1, ms] ms). */
void k_sleep_ms(uint32_t ms);
/* Ticks (ms) since k_start. Wraps after 49 days; compare with differences. */
uint32_t k_uptime_ticks(void);

/* ---- events ------------------------------------------------------------- */

struct k_event {
    struct k_waitq waiters;
    bool signaled;
    bool manual_reset;
};

/*
 * Auto-reset: k_event_set releases exactly one waiter (or the next caller of
 * k_event_wait) and the event resets itself. Manual-reset: k_event_set releases
 * every waiter and the event stays signalled until k_event_reset.
 */
void k_event_init(struct k_event *ev, bool manual_reset, bool initially_signaled);
void k_event_set(struct k_event *ev);
void k_event_set_from_isr(struct k_event *ev);
void k_event_reset(struct k_event *ev);
int k_event_wait(struct k_event *ev, uint32_t timeout_ms);

/* ---- counting semaphores ------------------------------------------------ */

struct k_sem {
    struct k_waitq waiters;
    uint32_t count;
    uint32_t max;
};

void k_sem_init(struct k_sem *s, uint32_t initial, uint32_t max);
/* K_EOVERFLOW when the count is already at max (the give is dropped). */
int k_sem_give(struct k_sem *s);
int k_sem_give_from_isr(struct k_sem *s);
int k_sem_take(struct k_sem *s, uint32_t timeout_ms);
uint32_t k_sem_count(const struct k_sem *s);

/* ---- mutexes (recursive, priority inheritance one level deep) ----------- */

struct k_mutex {
    struct k_waitq waiters;
    struct k_thread *owner;
    uint32_t depth;
};

void k_mutex_init(struct k_mutex *m);
int k_mutex_lock(struct k_mutex *m, uint32_t timeout_ms);
/* K_EPERM if the caller does not own the mutex. */
int k_mutex_unlock(struct k_mutex *m);

/* ---- critical sections (thread-to-thread exclusion) --------------------- */

/*
 * A critical section is a mutex whose uncontended enter and leave never reach
 * the scheduler: a few instructions with interrupts masked. Contention falls
 * back to k_mutex_lock / k_mutex_unlock, so priority inheritance still applies.
 */
struct k_crit {
    struct k_mutex m;
};

void k_crit_init(struct k_crit *c);
void k_crit_enter(struct k_crit *c);
void k_crit_leave(struct k_crit *c);

/* ---- interrupt masking ---------------------------------------------------- */

/* Mask interrupts that may call the kernel; nests; keep the masked span short. */
static inline arch_irq_key_t k_irq_lock(void)
{
    return arch_irq_lock();
}

static inline void k_irq_unlock(arch_irq_key_t key)
{
    arch_irq_unlock(key);
}

/* ---- interrupts: short ISR + interrupt service thread (IST) -------------- */

/*
 * An ISR does the least possible work, silences its source and returns an
 * interrupt id. The kernel then sets the event attached to that id, which
 * wakes the IST. K_SYSINTR_NOP means "nothing for a thread to do".
 */
#define K_SYSINTR_NOP 0u
#define K_SYSINTR_MAX 16u

typedef uint32_t (*k_isr_fn)(void *arg);

int k_irq_attach(uint32_t sysintr, struct k_event *ist_event);
/* Set the event attached to sysintr (ISR context; K_SYSINTR_NOP is not passed). */
void k_isr_signal(uint32_t sysintr);

/*
 * Called by a board's vector: runs isr with trace hooks and returns its interrupt
 * id, for a port that wakes the IST later itself (with k_isr_signal; the riscv32
 * port does it with interrupts open). Inline so the vector calls the ISR itself:
 * one call less before the ISR's first instruction.
 */
static K_INLINE uint32_t k_isr_call(k_isr_fn isr, void *arg)
{
    TRACE_ISR_ENTER();
    uint32_t id = isr(arg);
    TRACE_ISR_EXIT();
    return id;
}

/* k_isr_call, then the IST's wake-up at once. */
static K_INLINE void k_isr_run(k_isr_fn isr, void *arg)
{
    uint32_t id = k_isr_call(isr, arg);
    if (id != K_SYSINTR_NOP)
        k_isr_signal(id);
}
bool k_in_isr(void);

/* ---- fatal errors ---------------------------------------------------------- */

/* Mask interrupts and halt with a visible code (board LED, sim exit, semihosting). */
void k_panic(uint32_t code, uint32_t detail) K_NORETURN;

#ifdef __cplusplus
}
#endif

#endif /* KERNEL_H */

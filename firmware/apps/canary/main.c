/* SPDX-License-Identifier: BSD-2-Clause
 * canary: the stack check of a port whose switch does it in its own code (riscv32:
 * riscv_check_stack in trap.S, and the idle thread's own check), on the target
 * (tests/host/test_soc_kernel.py). A thread breaks one canary word and gives up the
 * CPU; the kernel must halt with K_ERR_STACK_OVERFLOW and the owner's priority.
 *
 * CANARY_IDLE=0  the thread breaks its own canary and yields to a peer: the switch's
 *                check of the outgoing thread.
 * CANARY_IDLE=1  the thread breaks the idle thread's canary and sleeps: the idle
 *                thread's check of itself before its wait.
 */
#include "board.h"
#include "k_internal.h"

#ifndef CANARY_IDLE
#define CANARY_IDLE 0
#endif

#define VICTIM_PRIO 7u

static struct k_thread victim;
static uint64_t victim_stack[512u / 8u];

#if !CANARY_IDLE
/* The victim's peer at its priority, so that its yield switches. */
static struct k_thread peer;
static uint64_t peer_stack[512u / 8u];

static void peer_entry(void *arg)
{
    (void)arg;
    for (;;)
        k_thread_yield();
}
#endif

static void victim_entry(void *arg)
{
    (void)arg;
#if CANARY_IDLE
    board_puts("canary: breaking the idle thread's\n");
    k_idle_thread.stack_limit[K_CONFIG_STACK_CANARY_WORDS - 1u] ^= 1u;
    k_sleep_ms(2);
#else
    board_puts("canary: breaking this thread's\n");
    k_thread_self()->stack_limit[K_CONFIG_STACK_CANARY_WORDS - 1u] ^= 1u;
    k_thread_yield();
#endif
    board_puts("canary: not detected\n");
    board_exit(1);
}

K_COLD int main(void)
{
    board_init();
    k_init();
    k_thread_create(&victim, "victim", victim_entry, NULL, victim_stack, sizeof victim_stack,
                    VICTIM_PRIO, 0);
#if !CANARY_IDLE
    k_thread_create(&peer, "peer", peer_entry, NULL, peer_stack, sizeof peer_stack, VICTIM_PRIO, 0);
#endif
    k_start();
    return 0;
}

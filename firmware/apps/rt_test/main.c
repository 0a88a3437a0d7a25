/* SPDX-License-Identifier: BSD-2-Clause
 * rt_test: the rig's test program (docs/firmware.md, docs/method.md).
 *
 * ISR_TEST  the stimulus ISR raises ISR_OUT first thing and drops it when done.
 * APP_TEST  a thread at priority 0, quantum 0, blocked on the event the ISR
 *           signals; on wake it raises APP_OUT, drops it, and waits again.
 * LOAD      integer work at APP_TEST's priority, toggling HEARTBEAT every unit
 *           of work, while the LOAD_EN input is high (rt_load.h).
 */
#include "rt_load.h"
#include "rt_paths.h"

#define APP_PRIO 0u

static struct k_thread app_thread, load_thread;
/*
 * Room for the thread (~64 bytes when it blocks) and for the interrupt frames stacked
 * on it: with K_CONFIG_NESTING a device interrupt inside the tick's open window,
 * ~400 bytes in all (docs/kernel.md). 512, not more: larger stacks put APP's stack
 * top on the same D-cache lines as the scheduler's data (4 KiB direct-mapped
 * cache) and cost ~40 cycles of APP latency (measured, docs/kernel.md).
 */
#ifndef RT_STACK_BYTES
#define RT_STACK_BYTES 512u
#endif
static uint64_t app_stack[RT_STACK_BYTES / 8u];
static uint64_t load_stack[RT_STACK_BYTES / 8u];
volatile uint32_t rt_load_sink;

K_COLD int main(void)
{
    board_init();
    k_init();
    k_event_init(&stim_event, false, false);
    k_irq_attach(SYSINTR_STIM, &stim_event);
    k_thread_create(&app_thread, "app", app_entry, NULL, app_stack, sizeof app_stack, APP_PRIO, 0);
    k_thread_create(&load_thread, "load", rt_load_entry, NULL, load_stack, sizeof load_stack,
                    APP_PRIO, K_QUANTUM_DEFAULT);
    board_stim_attach(stim_isr, NULL);
    board_puts("rt_test: ready\n");
    k_start();
    return 0;
}

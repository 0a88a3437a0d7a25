/* SPDX-License-Identifier: BSD-2-Clause
 * qemu_paths: the rt_test interrupt path on the Cortex-M port, for counting its
 * instructions under QEMU (mps2-an385), where no rig can reach (tools/qemu_paths.py).
 *
 * The ISR and the APP thread are rt_test's: the ISR raises and drops ISR_OUT and
 * returns the interrupt id, whose event wakes APP (priority 0), which raises and
 * drops APP_OUT. A driver thread at priority 1 pends the stimulus line (NVIC,
 * software) QP_PULSES times, once APP waits again, then exits. The labels
 * qp_isr_out and qp_app_out mark the instructions that raise the two outputs.
 */
/* A global label qp_<name> in front of each output's store. */
#define RT_PATH_LABEL(name) __asm__ volatile(".globl qp_" #name "\nqp_" #name ":" ::: "memory")
#include "rt_paths.h"

#define QP_PULSES 64u
static struct k_thread app_thread, drv_thread;
static uint64_t app_stack[512u / 8u];
static uint64_t drv_stack[512u / 8u];

static void drv_entry(void *arg)
{
    (void)arg;
    for (unsigned i = 0; i < QP_PULSES; i++)
        board_irq_trigger(0, stim_isr, NULL); /* APP has run and waits again on return */
    board_exit(0);
}

int main(void)
{
    board_init();
    k_init();
    k_event_init(&stim_event, false, false);
    k_irq_attach(SYSINTR_STIM, &stim_event);
    k_thread_create(&app_thread, "app", app_entry, NULL, app_stack, sizeof app_stack, 0, 0);
    k_thread_create(&drv_thread, "drv", drv_entry, NULL, drv_stack, sizeof drv_stack, 1, 0);
    k_start();
    return 0;
}

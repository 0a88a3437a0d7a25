/* SPDX-License-Identifier: BSD-2-Clause
 * masked: rt_test's ISR and APP paths beside a thread that keeps interrupts masked for
 * a known time, MASKED_CYCLES SoC cycles at a stretch (function masked_section), then
 * open for UNMASKED_CYCLES: the ground truth of `rtrig explain`'s masked time
 * (tests/host/test_explain.py, docs/explain.md).
 */
#include "rt_paths.h"

#ifndef MASKED_CYCLES
#define MASKED_CYCLES 500u
#endif
#ifndef UNMASKED_CYCLES
#define UNMASKED_CYCLES 311u
#endif

static struct k_thread app_thread, masker_thread;
static uint64_t app_stack[512u / 8u];
static uint64_t masker_stack[512u / 8u];

static inline uint32_t cycles_now(void)
{
    uint32_t c;
    __asm__ volatile("csrr %0, mcycle" : "=r"(c));
    return c;
}

/* Interrupts off from the csrci to the csrsi: MASKED_CYCLES and the loop's last turn. */
__attribute__((noinline)) static void masked_section(void)
{
    __asm__ volatile("csrci mstatus, 8" ::: "memory");
    uint32_t t0 = cycles_now();
    while (cycles_now() - t0 < MASKED_CYCLES) {
    }
    __asm__ volatile("csrsi mstatus, 8" ::: "memory");
}

__attribute__((noinline)) static void unmasked_section(void)
{
    uint32_t t0 = cycles_now();
    while (cycles_now() - t0 < UNMASKED_CYCLES) {
    }
}

static void masker_entry(void *arg)
{
    (void)arg;
    for (;;) {
        masked_section();
        unmasked_section();
    }
}

K_COLD int main(void)
{
    board_init();
    k_init();
    k_event_init(&stim_event, false, false);
    k_irq_attach(SYSINTR_STIM, &stim_event);
    k_thread_create(&app_thread, "app", app_entry, NULL, app_stack, sizeof app_stack, 0u, 0);
    k_thread_create(&masker_thread, "masker", masker_entry, NULL, masker_stack,
                    sizeof masker_stack, 1u, 0);
    board_stim_attach(stim_isr, NULL);
    board_puts("masked: ready\n");
    k_start();
    return 0;
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* Interrupt ids and the ISR -> IST hand-off. */
#include "k_internal.h"

struct k_event *k_sysintr_events[K_SYSINTR_MAX]; /* read by k_isr_signal (sync.c) */

K_COLD void k_irq_reset(void)
{
    for (unsigned i = 0; i < K_SYSINTR_MAX; i++)
        k_sysintr_events[i] = NULL;
}

K_COLD int k_irq_attach(uint32_t sysintr, struct k_event *ist_event)
{
    if (sysintr == K_SYSINTR_NOP || sysintr >= K_SYSINTR_MAX)
        return K_EINVAL;
    arch_irq_key_t key = arch_irq_lock();
    k_sysintr_events[sysintr] = ist_event;
    arch_irq_unlock(key);
    return K_OK;
}

bool k_in_isr(void)
{
    return arch_in_isr();
}

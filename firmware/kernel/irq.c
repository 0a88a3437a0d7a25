/* Interrupt ids and the ISR -> IST hand-off. */
#include "k_internal.h"

static struct k_event *sysintr_events[K_SYSINTR_MAX];

K_COLD void k_irq_reset(void)
{
    for (unsigned i = 0; i < K_SYSINTR_MAX; i++)
        sysintr_events[i] = NULL;
}

K_COLD int k_irq_attach(uint32_t sysintr, struct k_event *ist_event)
{
    if (sysintr == K_SYSINTR_NOP || sysintr >= K_SYSINTR_MAX)
        return K_EINVAL;
    arch_irq_key_t key = arch_irq_lock();
    sysintr_events[sysintr] = ist_event;
    arch_irq_unlock(key);
    return K_OK;
}

void k_isr_signal(uint32_t id)
{
    if (id < K_SYSINTR_MAX && sysintr_events[id] != NULL) {
        k_event_set_from_isr(sysintr_events[id]);
        TRACE_IST_WAKE();
    }
}

bool k_in_isr(void)
{
    return arch_in_isr();
}

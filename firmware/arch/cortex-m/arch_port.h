/* SPDX-License-Identifier: BSD-2-Clause */
/* ARMv7-M (Cortex-M3/M4, no FPU context) port types and interrupt mask. */
#ifndef ARCH_PORT_H
#define ARCH_PORT_H

#include <stdint.h>

#define ARCH_STACK_ALIGN 8u
#define ARCH_COST(n)     ((void)0)

struct arch_thread {
    void *sp; /* process stack pointer, r4-r11 saved below the hardware frame */
};

typedef uint32_t arch_irq_key_t;

/*
 * PRIMASK masks every configurable interrupt. Nesting between ISRs still
 * follows NVIC priorities whenever the kernel is not inside a masked section.
 */
static inline arch_irq_key_t arch_irq_lock(void)
{
    uint32_t key;
    __asm__ volatile("mrs %0, primask\n\tcpsid i" : "=r"(key) : : "memory");
    return key;
}

static inline void arch_irq_unlock(arch_irq_key_t key)
{
    __asm__ volatile("msr primask, %0" : : "r"(key) : "memory");
}

#endif /* ARCH_PORT_H */

/* SPDX-License-Identifier: BSD-2-Clause */
/* ARMv7-M helpers shared by Cortex-M boards: NVIC access and start-up symbols. */
#ifndef CORTEXM_H
#define CORTEXM_H

#include <stdint.h>

#define NVIC_ISER(n) (*(volatile uint32_t *)(0xE000E100u + 4u * (n)))
#define NVIC_ICER(n) (*(volatile uint32_t *)(0xE000E180u + 4u * (n)))
#define NVIC_ISPR(n) (*(volatile uint32_t *)(0xE000E200u + 4u * (n)))
#define NVIC_ICPR(n) (*(volatile uint32_t *)(0xE000E280u + 4u * (n)))
#define NVIC_IPR(n)  (*(volatile uint8_t *)(0xE000E400u + (n)))

static inline void nvic_enable(unsigned irq, uint8_t prio)
{
    NVIC_IPR(irq) = prio;
    NVIC_ICPR(irq / 32u) = 1u << (irq % 32u);
    NVIC_ISER(irq / 32u) = 1u << (irq % 32u);
}

static inline void nvic_pend(unsigned irq)
{
    NVIC_ISPR(irq / 32u) = 1u << (irq % 32u);
    __asm__ volatile("dsb\n\tisb" : : : "memory");
}

typedef void (*cortexm_vector_t)(void);

void Reset_Handler(void);
void Fault_Handler(void);
void PendSV_Handler(void);
void SysTick_Handler(void);
extern uint32_t __stack_top[];

#endif /* CORTEXM_H */

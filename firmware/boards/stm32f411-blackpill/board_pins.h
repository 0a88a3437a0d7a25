/* SPDX-License-Identifier: BSD-2-Clause
 * STM32F411CEU6 "Black Pill" rig pins: the one place that says which pin is
 * which signal (docs/firmware.md has the wiring table).
 *
 *   PA4 ISR_OUT   PA5 APP_OUT   PA6 HEARTBEAT
 *   PA7 MARKER0   PA8 MARKER1   PA15 MARKER2
 *   PB0 IRQ in (rig STIM0, EXTI0 rising)   PB1 LOAD_EN in (pull-down)
 *   PA2 USART2 TX console 115200 8N1        PC13 on-board LED (panic)
 */
#ifndef BOARD_PINS_H
#define BOARD_PINS_H

#include <stdbool.h>
#include <stdint.h>

#define BP_GPIOA  0x40020000u
#define BP_GPIOB  0x40020400u
#define BP_GPIOC  0x40020800u
#define BP_REG(a) (*(volatile uint32_t *)(a))
#define GPIO_IDR  0x10u
#define GPIO_ODR  0x14u
#define GPIO_BSRR 0x18u

/* All outputs on port A so one BSRR store sets or clears any mix of them. */
#define RIG_ISR_OUT   (1u << 4)
#define RIG_APP_OUT   (1u << 5)
#define RIG_HEARTBEAT (1u << 6)
#define RIG_MARKER0   (1u << 7)
#define RIG_MARKER1   (1u << 8)
#define RIG_MARKER2   (1u << 15)
#define RIG_OUT_MASK                                                                               \
    (RIG_ISR_OUT | RIG_APP_OUT | RIG_HEARTBEAT | RIG_MARKER0 | RIG_MARKER1 | RIG_MARKER2)

#define RIG_IRQ_PIN     0u /* PB0 -> EXTI0 */
#define RIG_LOAD_EN_PIN 1u /* PB1 */

static inline void rig_out_set(uint32_t mask)
{
    BP_REG(BP_GPIOA + GPIO_BSRR) = mask;
}

static inline void rig_out_clear(uint32_t mask)
{
    BP_REG(BP_GPIOA + GPIO_BSRR) = mask << 16;
}

static inline void rig_out_toggle(uint32_t mask)
{
    BP_REG(BP_GPIOA + GPIO_ODR) ^= mask;
}

static inline bool rig_load_enabled(void)
{
    return (BP_REG(BP_GPIOB + GPIO_IDR) & (1u << RIG_LOAD_EN_PIN)) != 0;
}

#endif /* BOARD_PINS_H */

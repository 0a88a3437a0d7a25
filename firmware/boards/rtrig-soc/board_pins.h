/* SPDX-License-Identifier: BSD-2-Clause */
/* rtrig-soc rig pins: the one place that says which bit is which signal. */
#ifndef BOARD_PINS_H
#define BOARD_PINS_H

#include <stdbool.h>

#include "soc_map.h"

#define RIG_ISR_OUT   SOC_OUT_ISR_OUT
#define RIG_APP_OUT   SOC_OUT_APP_OUT
#define RIG_HEARTBEAT SOC_OUT_HEARTBEAT
#define RIG_MARKER0   SOC_OUT_MARKER0
#define RIG_MARKER1   SOC_OUT_MARKER1
#define RIG_MARKER2   SOC_OUT_MARKER2

/* mcycle read just before the store that raised ISR_OUT (self-timing, board.c). */
extern volatile uint32_t soc_isr_out_cycle;

/*
 * One store each: the rig sees the edge one bus write after the call. Raising
 * ISR_OUT also records mcycle right before the store, so the board can report
 * its own interrupt latency (ILTiming style) next to the rig's figure; mask is
 * a constant at every call, so the test costs nothing elsewhere.
 */
static inline void rig_out_set(uint32_t mask)
{
    if (mask & SOC_OUT_ISR_OUT) {
        uint32_t c;
        /*
         * The read and the store are adjacent and 8-byte aligned, so they share an
         * I-cache line: no line fill can fall between them, and the offset to the
         * pin is the same on every pulse, cold cache or not.
         */
        __asm__ volatile(".balign 8\n\tcsrr %0, mcycle\n\tsw %1, 0(%2)"
                         : "=&r"(c)
                         : "r"(mask), "r"(SOC_GPIO_OUT_SET)
                         : "memory");
        soc_isr_out_cycle = c;
        return;
    }
    SOC_REG(SOC_GPIO_OUT_SET) = mask;
}

static inline void rig_out_clear(uint32_t mask)
{
    SOC_REG(SOC_GPIO_OUT_CLR) = mask;
}

static inline void rig_out_toggle(uint32_t mask)
{
    SOC_REG(SOC_GPIO_OUT) ^= mask;
}

/* The stimulus line's acknowledgement (board.h): one store, inline in the ISR. */
#define BOARD_STIM_ACK_INLINE 1
static inline void board_stim_ack(void)
{
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM;
}

static inline bool rig_load_enabled(void)
{
    return (SOC_REG(SOC_GPIO_IN) & SOC_IN_LOAD_EN) != 0;
}

#endif /* BOARD_PINS_H */

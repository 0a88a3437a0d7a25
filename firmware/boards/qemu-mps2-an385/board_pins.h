/* SPDX-License-Identifier: BSD-2-Clause
 * QEMU mps2-an385 has no rig wiring: the rig outputs are bits of a variable
 * (visible in a debugger) and LOAD_EN reads a variable. The stimulus is NVIC
 * line 0, pended by software in tests. One place, as on real boards.
 */
#ifndef BOARD_PINS_H
#define BOARD_PINS_H

#include <stdbool.h>
#include <stdint.h>

#define RIG_ISR_OUT   (1u << 0)
#define RIG_APP_OUT   (1u << 1)
#define RIG_HEARTBEAT (1u << 2)
#define RIG_MARKER0   (1u << 3)
#define RIG_MARKER1   (1u << 4)
#define RIG_MARKER2   (1u << 5)

#define QEMU_IRQ_STIM 0u /* NVIC line used as the stimulus interrupt */
#define QEMU_IRQ_HIGH 1u /* second line, higher priority, for nesting tests */

extern volatile uint32_t qemu_rig_out;
extern volatile uint32_t qemu_load_en;

static inline void rig_out_set(uint32_t mask)
{
    qemu_rig_out |= mask;
}

static inline void rig_out_clear(uint32_t mask)
{
    qemu_rig_out &= ~mask;
}

static inline void rig_out_toggle(uint32_t mask)
{
    qemu_rig_out ^= mask;
}

static inline bool rig_load_enabled(void)
{
    return qemu_load_en != 0;
}

#endif /* BOARD_PINS_H */

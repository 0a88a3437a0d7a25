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

/* One store each: the rig sees the edge one bus write after the call. */
static inline void rig_out_set(uint32_t mask)
{
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

static inline bool rig_load_enabled(void)
{
    return (SOC_REG(SOC_GPIO_IN) & SOC_IN_LOAD_EN) != 0;
}

#endif /* BOARD_PINS_H */

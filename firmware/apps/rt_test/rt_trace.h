/*
 * rt_test's trace hooks: kernel events become marker pulses the rig can time.
 * MARKER0 high during the tick interrupt, MARKER1 pulses on every context
 * switch, MARKER2 high while the CPU idles in tickless mode.
 */
#ifndef RT_TRACE_H
#define RT_TRACE_H

#include "board_pins.h"

#define TRACE_TICK_ENTER() rig_out_set(RIG_MARKER0)
#define TRACE_TICK_EXIT()  rig_out_clear(RIG_MARKER0)
#define TRACE_SWITCH(from, to)                                                                     \
    do {                                                                                           \
        (void)(from);                                                                              \
        (void)(to);                                                                                \
        rig_out_set(RIG_MARKER1);                                                                  \
        rig_out_clear(RIG_MARKER1);                                                                \
    } while (0)
#define TRACE_IDLE_ENTER() rig_out_set(RIG_MARKER2)
#define TRACE_IDLE_EXIT()  rig_out_clear(RIG_MARKER2)

#endif /* RT_TRACE_H */

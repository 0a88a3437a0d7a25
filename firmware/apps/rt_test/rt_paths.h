/* SPDX-License-Identifier: BSD-2-Clause
 * rt_paths.h: rt_test's interrupt path, ISR_TEST and APP_TEST (rt_test/main.c), also
 * built by qemu_paths to count its instructions under QEMU. One copy, so the counted
 * path is the measured one.
 *
 * ISR_TEST  the stimulus ISR raises ISR_OUT first thing, acknowledges, drops it and
 *           returns the interrupt id, whose event wakes APP_TEST.
 * APP_TEST  blocked on that event; on wake it raises APP_OUT, drops it, waits again.
 *
 * RT_PATH_LABEL(name): a hook in front of each output's store (qemu_paths puts a
 * global label there); empty by default, so rt_test's code is unchanged.
 */
#ifndef RT_PATHS_H
#define RT_PATHS_H

#include "board.h"
#include "board_pins.h"
#include "kernel.h"

#ifndef RT_PATH_LABEL
#define RT_PATH_LABEL(name)
#endif

#define SYSINTR_STIM 1u

static struct k_event stim_event;

static uint32_t stim_isr(void *arg)
{
    (void)arg;
    RT_PATH_LABEL(isr_out);
    rig_out_set(RIG_ISR_OUT);
    board_stim_ack();
    rig_out_clear(RIG_ISR_OUT);
    return SYSINTR_STIM;
}

static void app_entry(void *arg)
{
    (void)arg;
    for (;;) {
        (void)k_event_wait(&stim_event, K_FOREVER);
        RT_PATH_LABEL(app_out);
        rig_out_set(RIG_APP_OUT);
        rig_out_clear(RIG_APP_OUT);
    }
}

#endif /* RT_PATHS_H */

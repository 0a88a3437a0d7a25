/* SPDX-License-Identifier: BSD-2-Clause
 * rt_load.h: LOAD, the rig's background load (docs/firmware.md), run by rt_test and by
 * the suite. One copy, so the suite's loaded runs load the kernel as rt_test's do.
 *
 * LOAD  integer work (xorshift, RT_LOAD_UNIT iterations per unit), toggling HEARTBEAT
 *       every unit, while the LOAD_EN input is high; while it is low, LOAD polls it
 *       once per tick. The program creates the thread on rt_load_entry, at its own
 *       priority, with quantum K_QUANTUM_DEFAULT, and defines rt_load_sink.
 */
#ifndef RT_LOAD_H
#define RT_LOAD_H

#include "board.h"
#include "board_pins.h"
#include "kernel.h"

/* Iterations of the integer kernel per heartbeat toggle. */
#ifndef RT_LOAD_UNIT
#define RT_LOAD_UNIT 200u
#endif
/*
 * 1: LOAD yields after every unit, so a woken thread of its priority waits at most
 * one unit (the papers' same-priority load). 0: LOAD keeps the CPU for its full
 * quantum, so such a thread waits up to K_CONFIG_DEFAULT_QUANTUM_MS.
 */
#ifndef RT_LOAD_YIELD
#define RT_LOAD_YIELD 1
#endif

/*
 * The work's result, stored so that the compiler keeps the work. Defined by the
 * program, among its own data: where it sits decides whether the store reaches it
 * gp-relative (one instruction, not two), and rt_test's hot code is laid out to the
 * byte (4 KiB I-cache, link.ld).
 */
extern volatile uint32_t rt_load_sink;

static void rt_load_entry(void *arg)
{
    (void)arg;
    uint32_t x = 2463534242u;
    for (;;) {
        if (!rig_load_enabled()) {
            k_sleep_ms(1); /* poll LOAD_EN once per tick while the load is off */
            continue;
        }
        for (unsigned i = 0; i < RT_LOAD_UNIT; i++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
        }
        rt_load_sink = x;
        rig_out_toggle(RIG_HEARTBEAT);
#if RT_LOAD_YIELD
        k_thread_yield();
#endif
    }
}

#endif /* RT_LOAD_H */

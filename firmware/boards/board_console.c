/* SPDX-License-Identifier: BSD-2-Clause
 * The console's number output, the same on every board: each board's board_puts
 * writes the digits (board.h).
 */
#include "board.h"

K_COLD void board_put_u32(uint32_t v)
{
    char buf[11];
    int i = 10;
    buf[i] = 0;
    do {
        /* A division: console output only, never on a measured path. */
        buf[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    board_puts(&buf[i]);
}

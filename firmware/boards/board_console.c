/* SPDX-License-Identifier: BSD-2-Clause
 * The console's formatted output, the same on every board: each board's board_puts
 * writes the characters (board.h).
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

/* Not K_COLD: a board that does not call it (rtrig-soc prints its own, in hex) has it
 * dropped by the linker, which cannot drop a part of the one .coldtext section. */
void board_put_panic(uint32_t code, uint32_t detail)
{
    board_puts("\nPANIC code ");
    board_put_u32(code);
    board_puts(" detail ");
    board_put_u32(detail);
    board_puts("\n");
}

/* What a board must provide to the riscv32 port (timer and interrupt glue). */
#ifndef RISCV_BOARD_H
#define RISCV_BOARD_H

#include <stdint.h>

#include "board.h"

uint64_t riscv_board_mtime(void);
void riscv_board_set_mtimecmp(uint64_t when);
/* Machine external interrupt: find the source, run its ISR (k_isr_run). */
void riscv_board_ext_irq(void);

#endif /* RISCV_BOARD_H */

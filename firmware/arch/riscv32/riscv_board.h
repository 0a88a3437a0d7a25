/* What a board must provide to the riscv32 port (timer and interrupt glue). */
#ifndef RISCV_BOARD_H
#define RISCV_BOARD_H

#include <stdint.h>

#include "board.h"

uint64_t riscv_board_mtime(void);
/* The low word of mtime: one bus read, for differences shorter than 2^32 cycles. */
uint32_t riscv_board_mtime_lo(void);
/* Program mtimecmp (high and low word) so that no intermediate value fires early. */
void riscv_board_set_mtimecmp(uint32_t hi, uint32_t lo);
/* Program the low word of mtimecmp only (the high word stays). */
void riscv_board_set_mtimecmp_lo(uint32_t lo);
/*
 * Machine external interrupt, called from trap.S with interrupts masked: run the
 * source's ISR through k_isr_run. Keep it direct: it is the interrupt latency.
 */
void riscv_board_ext_irq(void);
/* The kernel side of the port called by trap.S (arch_riscv32.c). */
void riscv_timer_irq(void);

#endif /* RISCV_BOARD_H */

/* SPDX-License-Identifier: BSD-2-Clause */
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
 * source's ISR (k_isr_call) and return its interrupt id, which trap.S signals with
 * interrupts open (K_SYSINTR_NOP: nothing to signal; a handler may also signal
 * itself through k_isr_run and return K_SYSINTR_NOP). Keep it direct: it is the
 * interrupt latency.
 * With K_CONFIG_NESTING, once the line cannot re-enter (the interrupt block's
 * threshold raised to its priority), open interrupts with riscv_nest_open(MIE_MTIE)
 * (the tick does not preempt a device interrupt) and close them with
 * riscv_nest_close before returning.
 */
uint32_t riscv_board_ext_irq(void);
/*
 * One source on the external interrupt (rtrig-soc: line 0 alone): the board sets
 * riscv_ext_direct to its ISR and riscv_ext_direct_arg to its argument (both with
 * interrupts masked, the argument first), and trap.S calls that ISR itself, in place
 * of riscv_board_ext_irq: no board code before the ISR's first instruction, and none
 * between the ISR and the trap's exit. NULL: trap.S calls riscv_board_ext_irq.
 */
extern k_isr_fn volatile riscv_ext_direct;
extern void *volatile riscv_ext_direct_arg;
/*
 * Called by trap.S for the interrupt id riscv_board_ext_irq or the direct ISR
 * returned: wake its IST with k_isr_signal, after any work of the board's that need
 * not run masked (rtrig-soc: its self-timing report). In the switch's window
 * (interrupts open); for a nested trap, later, in the outermost trap's window. The
 * direct ISR's K_SYSINTR_NOP comes here too, at once and masked: the board's work
 * only.
 */
void riscv_board_signal(uint32_t sysintr);
/*
 * The board's last step before the first thread runs (arch_start, interrupts
 * masked): rtrig-soc loads every D-cache line of its data once (board.c).
 */
void riscv_board_start(void);
/* The kernel side of the port called by trap.S (arch_riscv32.c). */
void riscv_timer_irq(void);

#define RISCV_MIE_MTIE (1u << 7)

/* trap.S: 1 while a handler runs; a switch asked for in one; handlers that opened. */
extern volatile uint32_t riscv_isr_depth, riscv_switch_pending, riscv_nest_depth;

/*
 * Nesting inside a handler (K_CONFIG_NESTING): keep mepc and mstatus (a nested trap
 * overwrites them), clear the mie bits in keep_off (sources that must not preempt
 * this handler), set mstatus.MIE. riscv_nest_close masks again and puts all three
 * back. Without K_CONFIG_NESTING both are empty and the handler stays masked.
 */
struct riscv_nest {
    uint32_t mie, mepc, mstatus;
};

static inline __attribute__((always_inline)) struct riscv_nest riscv_nest_open(uint32_t keep_off)
{
    struct riscv_nest n = {0, 0, 0};
#if K_CONFIG_NESTING
    __asm__ volatile("csrr %0, mepc" : "=r"(n.mepc));
    __asm__ volatile("csrr %0, mstatus" : "=r"(n.mstatus));
    __asm__ volatile("csrrc %0, mie, %1" : "=r"(n.mie) : "r"(keep_off) : "memory");
    riscv_nest_depth = riscv_nest_depth + 1u;
    TRACE_TRAP_UNMASK();
    __asm__ volatile("csrsi mstatus, 8" : : : "memory");
#else
    (void)keep_off;
#endif
    return n;
}

static inline __attribute__((always_inline)) void riscv_nest_close(struct riscv_nest n)
{
#if K_CONFIG_NESTING
    __asm__ volatile("csrci mstatus, 8" : : : "memory");
    TRACE_TRAP_MASK();
    riscv_nest_depth = riscv_nest_depth - 1u;
    __asm__ volatile("csrw mie, %0" : : "r"(n.mie) : "memory");
    __asm__ volatile("csrw mepc, %0" : : "r"(n.mepc) : "memory");
    __asm__ volatile("csrw mstatus, %0" : : "r"(n.mstatus) : "memory");
#else
    (void)n;
#endif
}

#endif /* RISCV_BOARD_H */

/* SPDX-License-Identifier: BSD-2-Clause
 * The contract between programs/ports and a board (third layer, below the
 * arch port). Pin numbers live in boards/<board>/board_pins.h, and nowhere else.
 */
#ifndef BOARD_H
#define BOARD_H

#include <stdbool.h>
#include <stdint.h>

#include "kernel.h"

/* Clocks, pins, interrupt controller; called first thing in main(). */
void board_init(void);
uint32_t board_cpu_hz(void);

/* Console (rtrig-soc: debug register, QEMU: semihosting, STM32: USART2 TX). */
void board_putc(char c);
void board_puts(const char *s);
void board_put_u32(uint32_t v);
/* "\nPANIC code <code> detail <detail>\n", in decimal (board_console.c). */
void board_put_panic(uint32_t code, uint32_t detail);

/* End the program: sim-exit register / semihosting exit code / LED pattern. */
void board_exit(int code) K_NORETURN;
/* Fatal error: show code (console, sim exit, LEDs) and stop. */
void board_halt(uint32_t code, uint32_t detail) K_NORETURN;

/* The stimulus interrupt (rig STIM0): isr runs through k_isr_run on each rising edge. */
void board_stim_attach(k_isr_fn isr, void *arg);
/*
 * Acknowledge the stimulus edge; call from the ISR. A board whose acknowledgement is
 * one store may define it inline in its board_pins.h (BOARD_STIM_ACK_INLINE): the ISR
 * then makes no call and needs no stack frame.
 */
#include "board_pins.h"
#ifndef BOARD_STIM_ACK_INLINE
void board_stim_ack(void);
#endif

/* Boards with a second stimulus line (rig STIM1, by default of higher priority than
 * STIM0; board_stim_priorities sets each line's priority, 1..3, higher preempts). */
void board_stim1_attach(k_isr_fn isr, void *arg);
void board_stim1_ack(void);
void board_stim_priorities(unsigned line0, unsigned line1);
/* (board_stim_attach / board_stim1_attach with isr NULL disable the line.) */

/* Self-test: make interrupt line 0 (low) or 1 (high priority) pending by software. */
void board_irq_trigger(unsigned line, k_isr_fn isr, void *arg);
bool board_irq_nesting(void);

#endif /* BOARD_H */

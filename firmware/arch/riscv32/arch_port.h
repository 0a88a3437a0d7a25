/* SPDX-License-Identifier: BSD-2-Clause */
/* RISC-V rv32 (machine mode only, Zicsr) port types and interrupt mask. */
#ifndef ARCH_PORT_H
#define ARCH_PORT_H

#include <stdint.h>

#include "k_trace.h"

#define ARCH_STACK_ALIGN 16u
#define ARCH_COST(n)     ((void)0)

/*
 * K_HOT code (k_config.h): GCC's hot functions, each in its own .text.hot.* section
 * (an unused one is still dropped), which rtrig-soc's link.ld places right after
 * trap.S's code (the build that names K_COLD's section has that layout).
 */
#if defined(__GNUC__) && defined(K_COLD_SECTION)
#define K_HOT __attribute__((hot))
#endif

/* Trap frame size in bytes (see trap.S): mepc, mstatus, s0..s11, then the caller-saved
 * registers. */
#define RISCV_FRAME_BYTES 128u

/*
 * trap.S checks the outgoing thread's stack canary in the switch's first window,
 * except the idle thread's, which its loop checks with ARCH_IDLE_CHECK_STACK (the
 * same code, riscv_check_stack in trap.S).
 */
#define ARCH_SWITCH_CHECKS_STACK 1
#define ARCH_IDLE_CHECK_STACK(t)                                                                   \
    __asm__ volatile("mv t0, %0\n\tcall riscv_check_stack"                                         \
                     :                                                                             \
                     : "r"(t)                                                                      \
                     : "ra", "t0", "t2", "t3", "t4", "t5", "t6", "memory")

/* trap.S: a thread's own switch, called as a function (arch_switch_pend outside a
 * handler). */
void riscv_switch_thread(void);
#define ARCH_SWITCH_FROM_THREAD() riscv_switch_thread()

struct arch_thread {
    void *sp; /* points at the saved trap frame */
};

typedef uint32_t arch_irq_key_t;

#define MSTATUS_MIE 0x8u

/* trap.S: not 0 while a handler runs (arch_in_isr), read inline on masked paths. */
extern volatile uint32_t riscv_isr_depth;
#define ARCH_IN_ISR() (riscv_isr_depth != 0)

static inline __attribute__((always_inline)) arch_irq_key_t arch_irq_lock(void)
{
    uint32_t old;
    /* "memory": the compiler must not move loads/stores across the mask. */
    __asm__ volatile("csrrci %0, mstatus, 8" : "=r"(old) : : "memory");
    if (old & MSTATUS_MIE)
        TRACE_IRQ_OFF();
    return old & MSTATUS_MIE;
}

static inline __attribute__((always_inline)) void arch_irq_unlock(arch_irq_key_t key)
{
    if (key) {
        TRACE_IRQ_ON();
        __asm__ volatile("csrsi mstatus, 8" : : : "memory");
    }
}

#endif /* ARCH_PORT_H */

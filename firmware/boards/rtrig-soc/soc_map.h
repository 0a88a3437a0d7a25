/* SPDX-License-Identifier: BSD-2-Clause
 * rtrig-soc memory map: the single source for firmware. The gateware and
 * docs/soc-memory-map.md follow this file.
 *
 * VexRiscv ("Full" variant, rv32im + Zicsr) with 64 KiB RAM at 0x0 (reset
 * vector and entry at 0x00000000) and all I/O at or above 0x80000000, which
 * VexRiscv never caches. All registers are 32 bit, word access only.
 */
#ifndef SOC_MAP_H
#define SOC_MAP_H

#define SOC_CPU_HZ 50000000u /* CPU clock, also the mtime clock */

/* VexRiscv's data cache: 4 KiB, direct mapped, write-through, no allocation on a store miss. */
#define SOC_DCACHE_LINE 32u

#define SOC_RAM_BASE 0x00000000u
#define SOC_RAM_SIZE 0x00010000u
#define SOC_RESET_PC 0x00000000u
#define SOC_IO_BASE  0x80000000u

/* ---- GPIO ---------------------------------------------------------------- */
#define SOC_GPIO_BASE    0x80000000u
#define SOC_GPIO_OUT_SET (SOC_GPIO_BASE + 0x00u) /* W: 1 bits set outputs */
#define SOC_GPIO_OUT_CLR (SOC_GPIO_BASE + 0x04u) /* W: 1 bits clear outputs */
#define SOC_GPIO_OUT     (SOC_GPIO_BASE + 0x08u) /* R/W: output register */
#define SOC_GPIO_IN      (SOC_GPIO_BASE + 0x0Cu) /* R: input pins (synchronised) */

/* Output bits */
#define SOC_OUT_ISR_OUT   (1u << 0)
#define SOC_OUT_APP_OUT   (1u << 1)
#define SOC_OUT_HEARTBEAT (1u << 2)
#define SOC_OUT_MARKER0   (1u << 3)
#define SOC_OUT_MARKER1   (1u << 4)
#define SOC_OUT_MARKER2   (1u << 5)
#define SOC_OUT_COUNT     6u
/* Input bits */
#define SOC_IN_LOAD_EN (1u << 0)

/* ---- edge-latched interrupt input (IRQ pin <- rig STIM0) --------------------- */
/*
 * A rising edge of the IRQ pin sets PENDING bit 0. (PENDING & ENABLE) != 0
 * drives the CPU's machine external interrupt (mip.MEIP), level sensitive.
 */
#define SOC_IRQ_BASE    0x80001000u
#define SOC_IRQ_PENDING (SOC_IRQ_BASE + 0x00u) /* R; W1C: write 1 to clear */
#define SOC_IRQ_ENABLE  (SOC_IRQ_BASE + 0x04u) /* R/W */
#define SOC_IRQ_TRIGGER (SOC_IRQ_BASE + 0x08u) /* W: 1 bits set PENDING (self-test) */
#define SOC_IRQ_PIN     (SOC_IRQ_BASE + 0x0Cu) /* R: current level of the IRQ pin */
/* R: mtime (low word) when the last IRQ pin edge was latched (self-timing) */
#define SOC_IRQ_STAMP (SOC_IRQ_BASE + 0x10u)
#define SOC_IRQ_STIM  (1u << 0)
/* Line 1 (pin <- rig STIM1): PENDING/ENABLE/TRIGGER/PIN bit 1, its own stamp. */
#define SOC_IRQ_STIM1  (1u << 1)
#define SOC_IRQ_STAMP1 (SOC_IRQ_BASE + 0x14u) /* R: mtime when line 1 last latched */
/* R/W: line n's priority (0..3) in bits 4n..4n+1; reset 1 and 1. Priority 0 never
 * interrupts. */
#define SOC_IRQ_PRIORITY (SOC_IRQ_BASE + 0x18u)
/* R/W: only lines with a priority above THRESHOLD (0..3, reset 0) interrupt. */
#define SOC_IRQ_THRESHOLD (SOC_IRQ_BASE + 0x1Cu)
/* R: the pending, enabled line of highest priority above THRESHOLD (the lower line on
 * a tie), or 0xFFFFFFFF when none. */
#define SOC_IRQ_CLAIM (SOC_IRQ_BASE + 0x20u)
#define SOC_IRQ_NONE  0xFFFFFFFFu

/* ---- machine timer ------------------------------------------------------------ */
/*
 * mtime counts CPU clock cycles from reset. mip.MTIP is (mtime >= mtimecmp),
 * level sensitive; mtimecmp resets to all ones.
 */
#define SOC_TIMER_BASE  0x80002000u
#define SOC_MTIME_LO    (SOC_TIMER_BASE + 0x00u)
#define SOC_MTIME_HI    (SOC_TIMER_BASE + 0x04u)
#define SOC_MTIMECMP_LO (SOC_TIMER_BASE + 0x08u)
#define SOC_MTIMECMP_HI (SOC_TIMER_BASE + 0x0Cu)

/* ---- system: debug console and simulation control ------------------------------ */
#define SOC_SYS_BASE   0x80003000u
#define SOC_CONSOLE_TX (SOC_SYS_BASE + 0x00u) /* W: low byte is one console character */
#define SOC_SIM_EXIT   (SOC_SYS_BASE + 0x04u) /* W: a simulation ends with this exit code */
#define SOC_SYS_ID     (SOC_SYS_BASE + 0x08u) /* R: SOC_ID_VALUE */
#define SOC_SYS_TRACE  (SOC_SYS_BASE + 0x0Cu) /* W: one 32-bit value for the simulation log */
#define SOC_ID_VALUE   0x52545247u            /* "RTRG" */

/* VexRiscv CSR: mask of its external interrupt array; bit 0 = the IRQ block. */
#define SOC_CSR_EXT_IRQ_MASK 0xBC0

#ifndef __ASSEMBLER__
#include <stdint.h>
#define SOC_REG(addr) (*(volatile uint32_t *)(uintptr_t)(addr))
#endif

#endif /* SOC_MAP_H */

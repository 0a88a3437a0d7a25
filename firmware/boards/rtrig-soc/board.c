/* SPDX-License-Identifier: BSD-2-Clause */
/* rtrig-soc board layer (VexRiscv SoC, see soc_map.h). */
#include "board.h"
#include "board_pins.h"
#include "riscv_board.h"
#include "soc_map.h"

/*
 * The interrupt block's two lines (soc_map.h): line 0 <- STIM0 (the stimulus),
 * line 1 <- STIM1, by default of higher priority, so with K_CONFIG_NESTING its ISR
 * preempts line 0's (board_stim_priorities() swaps them). line_prio mirrors the
 * PRIORITY register and irq_threshold THRESHOLD, so the handler reads neither over
 * the bus.
 */
#define LINE0_PRIO 1u
#define LINE1_PRIO 2u
static k_isr_fn line_isr[2];
static void *line_arg[2];
static uint32_t line_prio[2] = {LINE0_PRIO, LINE1_PRIO};
#if K_CONFIG_NESTING
static uint32_t irq_threshold;
#endif
volatile uint32_t soc_isr_out_cycle;

K_COLD void board_init(void)
{
    SOC_REG(SOC_GPIO_OUT) = 0;
    SOC_REG(SOC_IRQ_ENABLE) = 0;
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM | SOC_IRQ_STIM1;
    board_stim_priorities(LINE0_PRIO, LINE1_PRIO);
    SOC_REG(SOC_IRQ_THRESHOLD) = 0;
#if K_CONFIG_NESTING
    irq_threshold = 0;
#endif
    /* VexRiscv gates its external interrupt array with this CSR; it resets to 0. */
    __asm__ volatile("csrw 0xBC0, %0" : : "r"(1u) : "memory");
}

K_COLD uint32_t board_cpu_hz(void)
{
    return SOC_CPU_HZ;
}

K_COLD void board_putc(char c)
{
    SOC_REG(SOC_CONSOLE_TX) = (uint8_t)c;
}

K_COLD void board_puts(const char *s)
{
    while (*s)
        board_putc(*s++);
}

K_COLD void board_exit(int code)
{
    (void)arch_irq_lock();
    SOC_REG(SOC_SIM_EXIT) = (uint32_t)code;
    for (;;)
        __asm__ volatile("wfi");
}

K_COLD void board_halt(uint32_t code, uint32_t detail)
{
    (void)arch_irq_lock();
    board_puts("\nPANIC 0x");
    static const char hex[] = "0123456789ABCDEF";
    for (int s = 28; s >= 0; s -= 4)
        board_putc(hex[(code >> s) & 0xFu]);
    board_puts(" detail ");
    board_put_u32(detail);
    board_putc('\n');
    /* On hardware the code stays visible on the marker pins (low 3 bits). */
    SOC_REG(SOC_GPIO_OUT) = RIG_ISR_OUT | RIG_APP_OUT | ((code & 7u) << 3);
    SOC_REG(SOC_SIM_EXIT) = code;
    for (;;)
        __asm__ volatile("wfi");
}

K_COLD static void line_attach(unsigned line, k_isr_fn isr, void *arg)
{
    arch_irq_key_t key = arch_irq_lock();
    line_isr[line] = isr;
    line_arg[line] = arg;
    /* Line 0 alone: trap.S calls its ISR directly (riscv_board.h). */
    riscv_ext_direct = NULL;
    riscv_ext_direct_arg = line_arg[0];
    if (line_isr[1] == NULL)
        riscv_ext_direct = line_isr[0];
    SOC_REG(SOC_IRQ_PENDING) = 1u << line;
    /* No ISR: the line is disabled (a pending line with nothing to run would trap
     * again and again). */
    if (isr != NULL)
        SOC_REG(SOC_IRQ_ENABLE) |= 1u << line;
    else
        SOC_REG(SOC_IRQ_ENABLE) &= ~(1u << line);
    arch_irq_unlock(key);
}

K_COLD void board_stim_attach(k_isr_fn isr, void *arg)
{
    line_attach(0, isr, arg);
}

K_COLD void board_stim1_attach(k_isr_fn isr, void *arg)
{
    line_attach(1, isr, arg);
}

void board_stim1_ack(void)
{
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM1;
}

K_COLD void board_stim_priorities(unsigned line0, unsigned line1)
{
    arch_irq_key_t key = arch_irq_lock();
    line_prio[0] = line0 & 3u;
    line_prio[1] = line1 & 3u;
    SOC_REG(SOC_IRQ_PRIORITY) = line_prio[0] | (line_prio[1] << 4);
    arch_irq_unlock(key);
}

static k_isr_fn test_isr[2];
static void *test_arg[2];

K_COLD static uint32_t test_isr_wrapper(void *arg)
{
    unsigned line = (unsigned)(uintptr_t)arg;
    SOC_REG(SOC_IRQ_PENDING) = 1u << line;
    return test_isr[line] != NULL ? test_isr[line](test_arg[line]) : K_SYSINTR_NOP;
}

K_COLD void board_irq_trigger(unsigned line, k_isr_fn isr, void *arg)
{
    line = line != 0 ? 1u : 0u;
    test_isr[line] = isr;
    test_arg[line] = arg;
    line_attach(line, test_isr_wrapper, (void *)(uintptr_t)line);
#if K_CONFIG_NESTING
    /* Line 1 attached (an ISR that does nothing until a test sets one), so line 0's
     * handler opens and a test can trigger line 1 from inside it. */
    if (line_isr[1] == NULL)
        line_attach(1, test_isr_wrapper, (void *)1u);
#endif
    SOC_REG(SOC_IRQ_TRIGGER) = 1u << line;
    /* The read-back orders the trigger before we go on; the trap follows within a few cycles. */
    (void)SOC_REG(SOC_IRQ_PENDING);
    __asm__ volatile("nop; nop; nop; nop" : : : "memory");
}

bool board_irq_nesting(void)
{
    return K_CONFIG_NESTING != 0;
}

/* ---- riscv32 port glue ---- */

/*
 * Load one word of every D-cache line of the program's data (.rodata to .bss, the
 * thread stacks included), once, before the first thread runs. The D-cache does not
 * allocate on a store miss, so a line that had only been written (the trap frame of
 * an interrupt nested at a stack depth not reached before) would be refilled the
 * first time it is read, and the nested trap reads its registers back masked: ~10
 * cycles per line (docs/kernel.md). rt_test's data is ~4.2 KiB: the lines of its
 * first and last ~170 bytes share cache slots, as they do at run time.
 */
K_COLD void riscv_board_start(void)
{
    extern const uint32_t __data_first[], __bss_end[];
    uintptr_t first = (uintptr_t)__data_first & ~(uintptr_t)(SOC_DCACHE_LINE - 1u);
    for (uintptr_t a = first; a < (uintptr_t)__bss_end; a += SOC_DCACHE_LINE)
        (void)*(const volatile uint32_t *)a;
}

K_COLD uint64_t riscv_board_mtime(void)
{
    uint32_t hi, lo;
    do {
        hi = SOC_REG(SOC_MTIME_HI);
        lo = SOC_REG(SOC_MTIME_LO);
    } while (hi != SOC_REG(SOC_MTIME_HI));
    return ((uint64_t)hi << 32) | lo;
}

uint32_t riscv_board_mtime_lo(void)
{
    return SOC_REG(SOC_MTIME_LO);
}

void riscv_board_set_mtimecmp(uint32_t hi, uint32_t lo)
{
    /* Low word to all ones first so no intermediate value fires early. */
    SOC_REG(SOC_MTIMECMP_LO) = 0xFFFFFFFFu;
    SOC_REG(SOC_MTIMECMP_HI) = hi;
    SOC_REG(SOC_MTIMECMP_LO) = lo;
}

void riscv_board_set_mtimecmp_lo(uint32_t lo)
{
    SOC_REG(SOC_MTIMECMP_LO) = lo;
}

#if K_CONFIG_NESTING
/*
 * The ISR of the line of lower priority with interrupts open. Raise THRESHOLD to the
 * line's priority first (the line, level sensitive until its ISR acknowledges it,
 * cannot re-enter; the other line can) and keep the tick off (it waits for the
 * device interrupt, as without nesting). K_WARM: rt_test attaches line 0 only and
 * never comes here.
 */
K_WARM static void line_preemptible(unsigned line, k_isr_fn isr, void *arg)
{
    uint32_t outer = irq_threshold;
    irq_threshold = line_prio[line];
    SOC_REG(SOC_IRQ_THRESHOLD) = line_prio[line];
    struct riscv_nest nest = riscv_nest_open(RISCV_MIE_MTIE);
    TRACE_DISPATCH();
    k_isr_run(isr, arg);
    riscv_nest_close(nest);
    irq_threshold = outer;
    SOC_REG(SOC_IRQ_THRESHOLD) = outer;
}
#endif

/*
 * Self-timed latency of line 0: edge latch (IRQ_STAMP, mtime) to the ISR_OUT store
 * (mcycle; both count CPU cycles from reset). Reported after the ISR so it does not
 * delay ISR_OUT; only if this ISR raised ISR_OUT (0: it did not; mcycle is never 0
 * after reset's first cycles).
 */
static K_INLINE void line0_report(void)
{
    uint32_t out = soc_isr_out_cycle;
    if (out != 0) {
        soc_isr_out_cycle = 0;
        SOC_REG(SOC_SYS_TRACE) = out - SOC_REG(SOC_IRQ_STAMP);
    }
}

/*
 * Line 1 attached, or none (line 0 alone is riscv_ext_direct's: trap.S calls its ISR
 * itself): CLAIM names the pending line of highest priority above THRESHOLD, and the
 * ISR wakes its IST itself (k_isr_run). K_WARM: rt_test never comes here.
 */
K_WARM uint32_t riscv_board_ext_irq(void)
{
    uint32_t line = SOC_REG(SOC_IRQ_CLAIM);
    if (line > 1u)
        return K_SYSINTR_NOP; /* withdrawn meanwhile: nothing to serve */
    k_isr_fn isr = line_isr[line];
    if (isr == NULL) {
        SOC_REG(SOC_IRQ_ENABLE) &= ~(1u << line); /* nothing attached: do not loop on it */
        return K_SYSINTR_NOP;
    }
#if K_CONFIG_NESTING
    /* The lower line opens (the higher can preempt it); the higher runs masked. */
    if (line_prio[line] < line_prio[line ^ 1u])
        line_preemptible(line, isr, line_arg[line]);
    else
#endif
    {
        TRACE_DISPATCH();
        k_isr_run(isr, line_arg[line]);
    }
    if (line == 0)
        line0_report();
    return K_SYSINTR_NOP;
}

/*
 * Line 0's self-timing report, with interrupts open when an IST follows (trap.S's
 * window), masked for an ISR that wakes none. A stimulus nested in that window
 * before the report costs the outer pulse's report (the stamp is the new edge's by
 * then; the nested one is reported): only pulses < ~2 us apart, above MF-ISR.
 */
void riscv_board_signal(uint32_t sysintr)
{
    line0_report();
    if (sysintr != K_SYSINTR_NOP)
        k_isr_signal(sysintr);
}

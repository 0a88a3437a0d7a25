/* rtrig-soc board layer (VexRiscv SoC, see soc_map.h). */
#include "board.h"
#include "board_pins.h"
#include "riscv_board.h"
#include "soc_map.h"

static k_isr_fn stim_isr;
static void *stim_arg;
volatile uint32_t soc_isr_out_cycle;

K_COLD void board_init(void)
{
    SOC_REG(SOC_GPIO_OUT) = 0;
    SOC_REG(SOC_IRQ_ENABLE) = 0;
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM;
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

K_COLD void board_put_u32(uint32_t v)
{
    char buf[11];
    int i = 10;
    buf[i] = 0;
    do {
        /* divu: console output only, never on a hot path. */
        buf[--i] = (char)('0' + v % 10u);
        v /= 10u;
    } while (v != 0);
    board_puts(&buf[i]);
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

K_COLD void board_stim_attach(k_isr_fn isr, void *arg)
{
    stim_isr = isr;
    stim_arg = arg;
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM;
    SOC_REG(SOC_IRQ_ENABLE) = SOC_IRQ_STIM;
}

void board_stim_ack(void)
{
    SOC_REG(SOC_IRQ_PENDING) = SOC_IRQ_STIM;
}

static k_isr_fn test_isr;
static void *test_arg;

K_COLD static uint32_t test_isr_wrapper(void *arg)
{
    (void)arg;
    board_stim_ack();
    return test_isr(test_arg);
}

K_COLD void board_irq_trigger(unsigned line, k_isr_fn isr, void *arg)
{
    (void)line; /* one interrupt line: both self-test lines share it */
    test_isr = isr;
    test_arg = arg;
    board_stim_attach(test_isr_wrapper, NULL);
    SOC_REG(SOC_IRQ_TRIGGER) = SOC_IRQ_STIM;
    /* The read-back orders the trigger before we go on; the trap follows within a few cycles. */
    (void)SOC_REG(SOC_IRQ_PENDING);
    __asm__ volatile("nop; nop; nop; nop" : : : "memory");
}

bool board_irq_nesting(void)
{
    return false;
}

/* ---- riscv32 port glue ---- */

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

void riscv_board_ext_irq(void)
{
    /*
     * The stimulus is the SoC's only interrupt source, and ENABLE is set only
     * with an ISR attached (board_stim_attach): call it without reading
     * PENDING, which would cost two bus reads before ISR_OUT.
     */
    k_isr_fn isr = stim_isr;
    if (isr != NULL) {
        TRACE_DISPATCH();
        k_isr_run(isr, stim_arg);
        /*
         * Self-timed latency: edge latch (IRQ_STAMP, mtime) to the ISR_OUT store
         * (mcycle; both count CPU cycles from reset). Reported after the ISR so
         * it does not delay ISR_OUT; only if this ISR raised ISR_OUT (0: it did
         * not; mcycle is never 0 after reset's first cycles).
         */
        uint32_t out = soc_isr_out_cycle;
        if (out != 0) {
            soc_isr_out_cycle = 0;
            SOC_REG(SOC_SYS_TRACE) = out - SOC_REG(SOC_IRQ_STAMP);
        }
    } else {
        SOC_REG(SOC_IRQ_ENABLE) = 0; /* nothing attached: do not loop on it */
    }
}

/* SPDX-License-Identifier: BSD-2-Clause */
/* QEMU mps2-an385 board: vectors, semihosting console and exit code. */
#include "board.h"
#include "board_pins.h"
#include "cortexm.h"

#define CPU_HZ 25000000u /* AN385 SYSCLK; QEMU clocks SysTick from it */

#define PRIO_HIGH 0x40u
#define PRIO_STIM 0x80u

volatile uint32_t qemu_rig_out;
volatile uint32_t qemu_load_en = 1;

static k_isr_fn line_isr[2];
static void *line_arg[2];

static void irq0_handler(void)
{
    k_isr_run(line_isr[0], line_arg[0]);
}

static void irq1_handler(void)
{
    k_isr_run(line_isr[1], line_arg[1]);
}

__attribute__((section(".vectors"), used)) static const cortexm_vector_t vectors[16 + 32] = {
    [0] = (cortexm_vector_t)__stack_top,
    [1] = Reset_Handler,
    [2] = Fault_Handler,  /* NMI */
    [3] = Fault_Handler,  /* HardFault */
    [4] = Fault_Handler,  /* MemManage */
    [5] = Fault_Handler,  /* BusFault */
    [6] = Fault_Handler,  /* UsageFault */
    [11] = Fault_Handler, /* SVCall: unused */
    [14] = PendSV_Handler,
    [15] = SysTick_Handler,
    [16 + QEMU_IRQ_STIM] = irq0_handler,
    [16 + QEMU_IRQ_HIGH] = irq1_handler,
};

void board_init(void)
{
}

uint32_t board_cpu_hz(void)
{
    return CPU_HZ;
}

/* ---- semihosting ---- */

static uint32_t semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm__("r0") = op;
    register const void *r1 __asm__("r1") = arg;
    __asm__ volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return r0;
}

#define SYS_WRITEC        0x03u
#define SYS_WRITE0        0x04u
#define SYS_EXIT          0x18u
#define SYS_EXIT_EXTENDED 0x20u
#define ADP_APP_EXIT      0x20026u

void board_putc(char c)
{
    (void)semihost(SYS_WRITEC, &c);
}

void board_puts(const char *s)
{
    (void)semihost(SYS_WRITE0, s);
}

void board_exit(int code)
{
    (void)arch_irq_lock();
    uint32_t block[2] = {ADP_APP_EXIT, (uint32_t)code};
    (void)semihost(SYS_EXIT_EXTENDED, block);
    /* Older hosts: plain SYS_EXIT only tells success from failure. */
    (void)semihost(SYS_EXIT, (const void *)(uintptr_t)(code == 0 ? ADP_APP_EXIT : 0x20024u));
    for (;;)
        ;
}

void board_halt(uint32_t code, uint32_t detail)
{
    (void)arch_irq_lock();
    board_put_panic(code, detail);
    board_exit((int)code);
}

void board_stim_attach(k_isr_fn isr, void *arg)
{
    line_isr[0] = isr;
    line_arg[0] = arg;
    nvic_enable(QEMU_IRQ_STIM, PRIO_STIM);
}

void board_stim_ack(void)
{
    /* Software-pended NVIC line: nothing to clear at a device. */
}

void board_irq_trigger(unsigned line, k_isr_fn isr, void *arg)
{
    unsigned irq = line ? QEMU_IRQ_HIGH : QEMU_IRQ_STIM;
    line_isr[line ? 1 : 0] = isr;
    line_arg[line ? 1 : 0] = arg;
    nvic_enable(irq, line ? PRIO_HIGH : PRIO_STIM);
    nvic_pend(irq);
}

bool board_irq_nesting(void)
{
    return true;
}

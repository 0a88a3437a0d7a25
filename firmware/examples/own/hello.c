/* SPDX-License-Identifier: BSD-2-Clause
 * A complete rtrig-soc firmware without a kernel (docs/own-firmware.md):
 * ISR_OUT from the stimulus interrupt, APP_OUT from the main loop that the
 * interrupt wakes, HEARTBEAT toggled per unit of load work while LOAD_EN is
 * high. Build: see the Makefile next to this file.
 */
#include <stdint.h>

#define REG(addr)    (*(volatile uint32_t *)(addr))
#define GPIO_OUT_SET REG(0x80000000u)
#define GPIO_OUT_CLR REG(0x80000004u)
#define GPIO_IN      REG(0x8000000Cu)
#define IRQ_PENDING  REG(0x80001000u)
#define IRQ_ENABLE   REG(0x80001004u)
#define CONSOLE_TX   REG(0x80003000u)

#define ISR_OUT   (1u << 0)
#define APP_OUT   (1u << 1)
#define HEARTBEAT (1u << 2)
#define LOAD_EN   (1u << 0)

static volatile uint32_t app_wake; /* set by the ISR, taken by the main loop */

/* Reset lands here (address 0): a stack, then C. */
__attribute__((naked, section(".text.start"))) void _start(void)
{
    __asm__ volatile("la sp, __stack_top\n"
                     "j main\n");
}

/* mtvec is direct mode: every trap comes here (the SoC ignores the mode bits). */
__attribute__((interrupt("machine"), aligned(4))) static void trap(void)
{
    GPIO_OUT_SET = ISR_OUT; /* the rig times this rising edge */
    IRQ_PENDING = 1;        /* acknowledge the edge: the interrupt line drops */
    app_wake = 1;
    GPIO_OUT_CLR = ISR_OUT; /* back low before the next stimulus */
}

static void puts_console(const char *s)
{
    while (*s)
        CONSOLE_TX = (uint8_t)*s++;
}

static uint32_t xorshift(uint32_t x)
{
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return x;
}

int main(void)
{
    app_wake = 0; /* the one variable in .bss: no zeroing loop needed */

    uint32_t hart;
    __asm__ volatile("csrr %0, mhartid" : "=r"(hart));
    puts_console(hart == 0 ? "hello: hart 0, ready\n" : "hello: unexpected hart\n");

    __asm__ volatile("csrw mtvec, %0" ::"r"(&trap));
    IRQ_PENDING = 1;                                     /* drop an edge from before */
    IRQ_ENABLE = 1;                                      /* PENDING -> mip.MEIP */
    __asm__ volatile("csrw 0xBC0, %0" ::"r"(1u));        /* VexRiscv external IRQ mask */
    __asm__ volatile("csrs mie, %0" ::"r"(1u << 11));    /* MEIE */
    __asm__ volatile("csrs mstatus, %0" ::"r"(1u << 3)); /* MIE */

    uint32_t x = 1, hb = 0;
    for (;;) {
        if (app_wake) {
            app_wake = 0;
            GPIO_OUT_SET = APP_OUT; /* APP latency: this rising edge */
            GPIO_OUT_CLR = APP_OUT;
        }
        if (GPIO_IN & LOAD_EN) {
            for (int i = 0; i < 200; i++) /* one unit of load work */
                x = xorshift(x);
            hb ^= HEARTBEAT; /* one toggle (either edge) per unit */
            if (hb)
                GPIO_OUT_SET = HEARTBEAT;
            else
                GPIO_OUT_CLR = HEARTBEAT;
        }
    }
}

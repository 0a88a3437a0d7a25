/* SPDX-License-Identifier: BSD-2-Clause */
/* STM32F411 "Black Pill" board: 96 MHz from the 25 MHz crystal, rig pins, EXTI. */
#include "board.h"
#include "board_pins.h"
#include "cortexm.h"

#define CPU_HZ 96000000u

#define RCC            0x40023800u
#define RCC_CR         BP_REG(RCC + 0x00u)
#define RCC_PLLCFGR    BP_REG(RCC + 0x04u)
#define RCC_CFGR       BP_REG(RCC + 0x08u)
#define RCC_AHB1ENR    BP_REG(RCC + 0x30u)
#define RCC_APB1ENR    BP_REG(RCC + 0x40u)
#define RCC_APB2ENR    BP_REG(RCC + 0x44u)
#define FLASH_ACR      BP_REG(0x40023C00u)
#define SYSCFG_EXTICR1 BP_REG(0x40013808u)
#define EXTI           0x40013C00u
#define EXTI_IMR       BP_REG(EXTI + 0x00u)
#define EXTI_RTSR      BP_REG(EXTI + 0x08u)
#define EXTI_SWIER     BP_REG(EXTI + 0x10u)
#define EXTI_PR        BP_REG(EXTI + 0x14u)
#define USART2         0x40004400u
#define USART_SR       BP_REG(USART2 + 0x00u)
#define USART_DR       BP_REG(USART2 + 0x04u)
#define USART_BRR      BP_REG(USART2 + 0x08u)
#define USART_CR1      BP_REG(USART2 + 0x0Cu)

#define IRQ_EXTI0 6u
#define IRQ_EXTI2 8u
#define PRIO_HIGH 0x40u
#define PRIO_STIM 0x80u

static k_isr_fn line_isr[2];
static void *line_arg[2];

static void exti0_handler(void)
{
    k_isr_run(line_isr[0], line_arg[0]);
}

static void exti2_handler(void)
{
    EXTI_PR = 1u << 2;
    k_isr_run(line_isr[1], line_arg[1]);
}

__attribute__((section(".vectors"), used)) static const cortexm_vector_t vectors[16 + 86] = {
    [0] = (cortexm_vector_t)__stack_top,
    [1] = Reset_Handler,
    [2] = Fault_Handler,
    [3] = Fault_Handler,
    [4] = Fault_Handler,
    [5] = Fault_Handler,
    [6] = Fault_Handler,
    [11] = Fault_Handler,
    [14] = PendSV_Handler,
    [15] = SysTick_Handler,
    [16 + IRQ_EXTI0] = exti0_handler,
    [16 + IRQ_EXTI2] = exti2_handler,
};

static void gpio_mode(uint32_t port, unsigned pin, uint32_t mode)
{
    uint32_t m = BP_REG(port + 0x00u);
    m &= ~(3u << (2 * pin));
    BP_REG(port + 0x00u) = m | (mode << (2 * pin));
}

static void clock_init(void)
{
    RCC_CR |= 1u << 16; /* HSE on */
    while (!(RCC_CR & (1u << 17)))
        ;
    /* 25 MHz / M=25 * N=192 / P=2 = 96 MHz; Q=4 gives 48 MHz for USB. */
    RCC_PLLCFGR = 25u | (192u << 6) | (0u << 16) | (1u << 22) | (4u << 24);
    RCC_CR |= 1u << 24;
    while (!(RCC_CR & (1u << 25)))
        ;
    FLASH_ACR = 3u | (1u << 8) | (1u << 9) | (1u << 10); /* 3 wait states, prefetch, caches */
    RCC_CFGR = (4u << 10) | 2u;                          /* APB1 = HCLK/2, SYSCLK = PLL */
    while (((RCC_CFGR >> 2) & 3u) != 2u)
        ;
}

void board_init(void)
{
    clock_init();
    RCC_AHB1ENR |= 0x7u;     /* GPIOA, B, C */
    RCC_APB2ENR |= 1u << 14; /* SYSCFG */
    RCC_APB1ENR |= 1u << 17; /* USART2 */
    (void)RCC_APB1ENR;
    BP_REG(BP_GPIOA + GPIO_BSRR) = RIG_OUT_MASK << 16;
    for (unsigned pin = 0; pin < 16; pin++)
        if (RIG_OUT_MASK & (1u << pin)) {
            gpio_mode(BP_GPIOA, pin, 1u);
            BP_REG(BP_GPIOA + 0x08u) |= 3u << (2 * pin); /* very high speed: sharp edges */
        }
    gpio_mode(BP_GPIOB, RIG_IRQ_PIN, 0u);
    gpio_mode(BP_GPIOB, RIG_LOAD_EN_PIN, 0u);
    BP_REG(BP_GPIOB + 0x0Cu) |= 2u << (2 * RIG_LOAD_EN_PIN); /* pull-down: load off if open */
    gpio_mode(BP_GPIOC, 13, 1u);
    BP_REG(BP_GPIOC + GPIO_BSRR) = 1u << 13; /* LED off (active low) */
    /* USART2 TX on PA2 (AF7), 115200 baud from APB1 = 48 MHz. */
    gpio_mode(BP_GPIOA, 2, 2u);
    BP_REG(BP_GPIOA + 0x20u) = (BP_REG(BP_GPIOA + 0x20u) & ~(0xFu << 8)) | (7u << 8);
    USART_BRR = 0x1A1u;
    USART_CR1 = (1u << 13) | (1u << 3);
    /* EXTI0 <- PB0 rising edge (the stimulus). */
    SYSCFG_EXTICR1 = (SYSCFG_EXTICR1 & ~0xFu) | 1u;
    EXTI_RTSR |= 1u << 0;
}

uint32_t board_cpu_hz(void)
{
    return CPU_HZ;
}

void board_putc(char c)
{
    while (!(USART_SR & (1u << 7)))
        ;
    USART_DR = (uint8_t)c;
}

void board_puts(const char *s)
{
    while (*s)
        board_putc(*s++);
}

static void delay(uint32_t n)
{
    for (volatile uint32_t i = 0; i < n; i++)
        ;
}

/* The LED says it: slow blink = pass (code 0), otherwise `code` short flashes then a pause. */
static void K_NORETURN blink_forever(uint32_t code)
{
    for (;;) {
        uint32_t flashes = code == 0 ? 1 : (code & 0xFu) + 1u;
        for (uint32_t i = 0; i < flashes; i++) {
            BP_REG(BP_GPIOC + GPIO_BSRR) = 1u << (13 + 16);
            delay(code == 0 ? 4000000u : 600000u);
            BP_REG(BP_GPIOC + GPIO_BSRR) = 1u << 13;
            delay(code == 0 ? 4000000u : 600000u);
        }
        delay(6000000u);
    }
}

void board_exit(int code)
{
    (void)arch_irq_lock();
    blink_forever((uint32_t)code);
}

void board_halt(uint32_t code, uint32_t detail)
{
    (void)arch_irq_lock();
    board_put_panic(code, detail);
    blink_forever(code);
}

void board_stim_attach(k_isr_fn isr, void *arg)
{
    line_isr[0] = isr;
    line_arg[0] = arg;
    EXTI_PR = 1u << 0;
    EXTI_IMR |= 1u << 0;
    nvic_enable(IRQ_EXTI0, PRIO_STIM);
}

void board_stim_ack(void)
{
    EXTI_PR = 1u << 0;
}

void board_irq_trigger(unsigned line, k_isr_fn isr, void *arg)
{
    if (line == 0) {
        /* Pend the NVIC line directly: self-test ISRs need no EXTI edge to ack. */
        board_stim_attach(isr, arg);
        nvic_pend(IRQ_EXTI0);
        return;
    }
    line_isr[1] = isr;
    line_arg[1] = arg;
    EXTI_IMR |= 1u << 2;
    nvic_enable(IRQ_EXTI2, PRIO_HIGH);
    EXTI_SWIER = 1u << 2;
    __asm__ volatile("dsb\n\tisb" : : : "memory");
}

bool board_irq_nesting(void)
{
    return true;
}

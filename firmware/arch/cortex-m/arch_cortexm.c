/* SPDX-License-Identifier: BSD-2-Clause
 * ARMv7-M port: PendSV context switch, SysTick tick, NVIC nesting.
 *
 * Threads run on the process stack (PSP); handlers on the main stack (MSP),
 * so thread stacks need no room for interrupt nesting beyond the 8-word
 * hardware frame. PendSV has the lowest priority: a switch requested by any
 * number of nested ISRs happens once, after the last one, tail-chained.
 * SysTick sits below every device interrupt so a stimulus ISR preempts the tick.
 */
#include "arch.h"
#include "board.h"
#include "kernel.h"

#define REG(a)         (*(volatile uint32_t *)(a))
#define SCB_ICSR       REG(0xE000ED04u)
#define SCB_SHPR3      REG(0xE000ED20u)
#define SYST_CSR       REG(0xE000E010u)
#define SYST_RVR       REG(0xE000E014u)
#define SYST_CVR       REG(0xE000E018u)
#define ICSR_PENDSVSET (1u << 28)
#define ICSR_PENDSTSET (1u << 26)
#define ICSR_PENDSTCLR (1u << 25)
#define SYST_ENABLE    (1u << 0)
#define SYST_TICKINT   (1u << 1)
#define SYST_CLKSOURCE (1u << 2)
#define SYST_MAX       0x00FFFFFFu
#define PRIO_PENDSV    0xFFu
#define PRIO_SYSTICK   0xC0u

static uint32_t cyc; /* SysTick counts per tick */
static uint32_t idle_ticks;
static uint32_t idle_total;  /* cycles the idle reload spans */
static uint32_t idle_offset; /* cycles already past the last boundary when idle began */
static bool resync;          /* next SysTick must restore the 1 ms reload */
static uint64_t boot_psp_stack[16];

void arch_thread_init(struct k_thread *t, void *stack, size_t size)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)7u;
    uint32_t *sp = (uint32_t *)top - 16;
    for (unsigned i = 0; i < 16; i++)
        sp[i] = 0;
    /* r4-r11 at sp[0..7], then the hardware frame r0 r1 r2 r3 r12 lr pc xpsr. */
    sp[8 + 6] = (uint32_t)(uintptr_t)k_thread_entry & ~1u;
    sp[8 + 7] = 0x01000000u; /* Thumb state */
    t->arch.sp = sp;
}

void arch_switch_pend(void)
{
    SCB_ICSR = ICSR_PENDSVSET;
    /* From a thread with interrupts enabled, take it before the next instruction. */
    __asm__ volatile("dsb\n\tisb" : : : "memory");
}

void arch_start(void)
{
    /* The boot context gets a scratch process stack; it is saved once and never resumed. */
    uintptr_t psp = (uintptr_t)&boot_psp_stack[16];
    __asm__ volatile("msr psp, %0\n\t"
                     "mov r0, #2\n\t"
                     "msr control, r0\n\t"
                     "isb" ::"r"(psp)
                     : "r0", "memory");
    SCB_SHPR3 = (SCB_SHPR3 & 0x0000FFFFu) | (PRIO_SYSTICK << 24) | (PRIO_PENDSV << 16);
    arch_switch_pend();
    __asm__ volatile("cpsie i" : : : "memory");
    for (;;)
        ;
}

bool arch_in_isr(void)
{
    uint32_t ipsr;
    __asm__ volatile("mrs %0, ipsr" : "=r"(ipsr));
    return ipsr != 0;
}

void arch_idle_wait(void)
{
    /* PRIMASK set: a pending interrupt ends wfi without being taken yet. */
    __asm__ volatile("dsb\n\twfi" : : : "memory");
}

void arch_halt(uint32_t code, uint32_t detail)
{
    board_halt(code, detail);
}

/* ---- context switch ---- */

__attribute__((naked)) void PendSV_Handler(void)
{
    __asm__ volatile("mrs r0, psp\n\t"
                     "cpsid i\n\t"
                     "stmdb r0!, {r4-r11}\n\t"
                     "ldr r1, =k_current\n\t"
                     "ldr r2, [r1]\n\t"
                     "str r0, [r2]\n\t" /* out->arch.sp, offset 0 */
                     "mov r0, r2\n\t"
                     "push {r3, lr}\n\t"
                     "bl k_sched_switch_hook\n\t"
                     "pop {r3, lr}\n\t"
                     "ldr r0, [r0]\n\t"
                     "ldmia r0!, {r4-r11}\n\t"
                     "msr psp, r0\n\t"
                     "cpsie i\n\t"
                     "bx lr\n\t"
                     ".ltorg");
}

/* ---- SysTick ---- */

void SysTick_Handler(void)
{
    uint32_t n = 1;
    if (idle_ticks != 0) {
        n = idle_ticks;
        idle_ticks = 0;
        resync = true;
    }
    if (resync) {
        /* Back to 1 ms periods; the phase slips by this handler's entry latency. */
        resync = false;
        SYST_RVR = cyc - 1u;
        SYST_CVR = 0;
    }
    k_tick_announce_from_isr(n);
}

void arch_timer_start(void)
{
    cyc = board_cpu_hz() / 1000u;
    idle_ticks = 0;
    resync = false;
    SYST_CSR = 0;
    SYST_RVR = cyc - 1u;
    SYST_CVR = 0;
    SYST_CSR = SYST_ENABLE | SYST_TICKINT | SYST_CLKSOURCE;
}

void arch_timer_set_idle(uint32_t ticks)
{
    if (ticks <= 1u || (SCB_ICSR & ICSR_PENDSTSET) || resync)
        return; /* a tick is due anyway: stay periodic */
    uint32_t max = SYST_MAX / cyc;
    if (ticks > max)
        ticks = max;
    uint32_t left = SYST_CVR; /* counts to the next boundary */
    idle_offset = cyc - left;
    idle_total = left + (ticks - 1u) * cyc;
    idle_ticks = ticks;
    SYST_RVR = idle_total - 1u;
    SYST_CVR = 0;
}

uint32_t arch_timer_idle_exit(void)
{
    if (idle_ticks == 0)
        return 0;
    if (SCB_ICSR & ICSR_PENDSTSET)
        return 0; /* the idle period is over; its interrupt announces it */
    uint32_t cur = SYST_CVR;
    uint32_t since = idle_offset + (idle_total - 1u - cur);
    uint32_t n = since / cyc;
    uint32_t into = since - n * cyc;
    idle_ticks = 0;
    /* Finish the current tick, then the handler restores 1 ms periods. */
    SYST_RVR = cyc - into - 1u;
    SYST_CVR = 0;
    resync = true;
    return n;
}

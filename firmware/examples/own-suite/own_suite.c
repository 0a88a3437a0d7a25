/* SPDX-License-Identifier: BSD-2-Clause
 * A suite firmware for rtrig-soc without a kernel (docs/suite.md, "Timing your own
 * firmware"): three of the suite's tests, in an order of its own, timed by the rig and
 * by the firmware's own cycle count, with nothing from rtrig but rtrig_suite.h.
 *
 *   3  mutex_uncontended  lock then unlock a flag "mutex", nobody waits
 *   12 isr_to_ist         the ISR raises MARKER0 and sets a flag; the main loop (the
 *                         "interrupt service thread", polling) raises MARKER1
 *   1  sem_uncontended    give then take a counting "semaphore", nobody waits
 *
 * Each runs only if the configuration block's test_mask asks for it. Build: see the
 * Makefile next to this file. The -D switches below make the broken firmwares of
 * tests/host/test_own_suite.py; the example defines none of them.
 *   OWN_SUITE_SKIP         never runs sem_uncontended, even when asked for
 *   OWN_SUITE_NEVER_BEGIN  takes the go pulse, then begins no test
 *   OWN_SUITE_WRONG_INDEX  frames sem_uncontended's iterations with this test index
 */
#include <stdint.h>

#include "rtrig_suite.h" /* on rtrig-soc every hook has its default */

#define REG(addr)   (*(volatile uint32_t *)(addr))
#define GPIO_IN     REG(0x8000000Cu)
#define IRQ_PENDING REG(0x80001000u)
#define IRQ_ENABLE  REG(0x80001004u)
#define CONSOLE_TX  REG(0x80003000u)
#define LOAD_EN     (1u << 0)

#ifndef OWN_SUITE_SKIP
#define OWN_SUITE_SKIP 0
#endif
#ifndef OWN_SUITE_WRONG_INDEX
#define SEM_INDEX RTRIG_SUITE_SEM_UNCONTENDED
#else
#define SEM_INDEX OWN_SUITE_WRONG_INDEX
#endif

/*
 * The configuration block: the host finds the magic and overwrites the four words
 * after it. GCC places a volatile const object in .data, which the .bin holds.
 */
struct suite_config {
    uint32_t magic[2]; /* "RTSUITE1" */
    uint32_t iterations;
    uint32_t test_mask; /* bit i: run test i */
    uint32_t pause_cycles;
    uint32_t flags;
};

__attribute__((aligned(4), used)) volatile const struct suite_config suite_config = {
    .magic = {0x55535452u, 0x31455449u}, /* 'R','T','S','U', 'I','T','E','1' */
    .iterations = 100u,
    .test_mask = 1u << RTRIG_SUITE_MUTEX_UNCONTENDED | 1u << RTRIG_SUITE_SEM_UNCONTENDED |
                 1u << RTRIG_SUITE_ISR_TO_IST,
    .pause_cycles = 1000u,
    .flags = 0u,
};

volatile uint32_t rtrig_suite_c0, rtrig_suite_c1;

static uint32_t iterations, pause_cycles;
static volatile uint32_t mutex_owner, sem_count;
static volatile uint32_t ist_wake, ist_isr_latency;

__attribute__((naked, section(".text.start"))) void _start(void)
{
    __asm__ volatile("la sp, __stack_top\n"
                     "j main\n");
}

static void puts_console(const char *s)
{
    while (*s)
        CONSOLE_TX = (uint8_t)*s++;
}

static inline uint32_t irq_save(void)
{
    uint32_t k;
    __asm__ volatile("csrrci %0, mstatus, 8" : "=r"(k) : : "memory");
    return k & 8u;
}

static inline void irq_restore(uint32_t k)
{
    __asm__ volatile("csrs mstatus, %0" : : "r"(k) : "memory");
}

static void pause(void)
{
    uint32_t t0 = RTRIG_SUITE_CYCLES();
    while (RTRIG_SUITE_CYCLES() - t0 < pause_cycles)
        ;
}

static void test_begin(unsigned test)
{
    rtrig_suite_test_begin(test, (GPIO_IN & LOAD_EN) != 0);
}

/* After the iterations: MARKER2 falls, the END word, a pause with MARKER2 low. */
static void test_end(unsigned test)
{
    rtrig_suite_test_end(test);
    pause();
}

static void mutex_uncontended(void)
{
    test_begin(RTRIG_SUITE_MUTEX_UNCONTENDED);
    for (uint32_t i = 0; i < iterations; i++) {
        rtrig_suite_mark0();
        uint32_t k = irq_save(); /* lock: take the flag if free */
        if (mutex_owner == 0u)
            mutex_owner = 1u;
        irq_restore(k);
        k = irq_save(); /* unlock */
        mutex_owner = 0u;
        irq_restore(k);
        rtrig_suite_mark1();
        rtrig_suite_iteration_end();
        pause();
    }
    test_end(RTRIG_SUITE_MUTEX_UNCONTENDED);
}

static void sem_uncontended(void)
{
    test_begin(SEM_INDEX);
    for (uint32_t i = 0; i < iterations; i++) {
        rtrig_suite_mark0();
        uint32_t k = irq_save(); /* give */
        sem_count = sem_count + 1u;
        irq_restore(k);
        k = irq_save(); /* take */
        if (sem_count != 0u)
            sem_count = sem_count - 1u;
        irq_restore(k);
        rtrig_suite_mark1();
        rtrig_suite_iteration_end();
        pause();
    }
    test_end(SEM_INDEX);
}

/* mtvec is direct mode: every trap lands here; only line 0 is enabled. */
__attribute__((interrupt("machine"), aligned(4))) static void trap(void)
{
    ist_isr_latency = rtrig_suite_isr_mark0(); /* MARKER0 rises; count - STAMP */
    IRQ_PENDING = 1u;                          /* acknowledge the edge */
    ist_wake = 1u;
}

static void isr_to_ist(void)
{
    ist_wake = 0u;
    IRQ_PENDING = 1u; /* an edge from before (the go pulse) is not an iteration */
    IRQ_ENABLE = 1u;
    __asm__ volatile("csrs mstatus, %0" : : "r"(8u)); /* MIE */
    /* The ISR is in place: MARKER2 rises, the rig sends one pulse per iteration. */
    test_begin(RTRIG_SUITE_ISR_TO_IST);
    for (uint32_t i = 0; i < iterations; i++) {
        while (!ist_wake)
            ;
        ist_wake = 0u;
        rtrig_suite_mark1();
        rtrig_suite_isr_to_ist_end(ist_isr_latency);
    }
    /* Every pulse was taken: stop listening, then MARKER2 falls (the rig stops its
     * pulses when it sees that; none is left to come). */
    __asm__ volatile("csrc mstatus, %0" : : "r"(8u));
    IRQ_ENABLE = 0u;
    IRQ_PENDING = 1u;
    test_end(RTRIG_SUITE_ISR_TO_IST);
}

static int asked(unsigned test)
{
    return (suite_config.test_mask >> test) & 1u;
}

int main(void)
{
    mutex_owner = sem_count = ist_wake = 0u; /* .bss: no zeroing loop */
    __asm__ volatile("csrw mtvec, %0" : : "r"(&trap));
    __asm__ volatile("csrw 0xBC0, %0" : : "r"(1u));     /* VexRiscv external IRQ mask */
    __asm__ volatile("csrs mie, %0" : : "r"(1u << 11)); /* MEIE; MIE stays off for now */
    IRQ_PENDING = 1u;                                   /* drop an edge latched before we listen */
    puts_console("suite: ready\n");
    for (;;) {
        while (!(IRQ_PENDING & 1u)) /* the go pulse, polled */
            ;
        IRQ_PENDING = 1u;
        iterations = suite_config.iterations;
        pause_cycles = suite_config.pause_cycles;
#ifdef OWN_SUITE_NEVER_BEGIN
        for (;;)
            ;
#endif
        if (asked(RTRIG_SUITE_MUTEX_UNCONTENDED))
            mutex_uncontended();
        if (asked(RTRIG_SUITE_ISR_TO_IST))
            isr_to_ist();
        if (asked(RTRIG_SUITE_SEM_UNCONTENDED) && !OWN_SUITE_SKIP)
            sem_uncontended();
        rtrig_suite_run_end();
        puts_console("suite: run done\n");
    }
}

/* SPDX-License-Identifier: BSD-2-Clause
 * selftest: the shared kernel tests (tests/kernel_tests.c) on a real target.
 * Result: console lines, a "selftest: PASS|FAIL" summary, then board_exit(0 = pass).
 * QEMU turns that into the semihosting exit code; rtrig-soc into the
 * sim-exit register.
 */
#include "board.h"
#include "ktest.h"

#define SELFTEST_STACK_BYTES 1536u

static uint64_t stacks[T_MAX_THREADS][SELFTEST_STACK_BYTES / 8u];
static uint64_t ctrl_stack[2048u / 8u];
static struct k_thread ctrl;

void *t_stack(unsigned i, size_t *size)
{
    *size = sizeof stacks[i];
    return stacks[i];
}

void t_burn_ms(uint32_t ms)
{
    /* Wall-clock busy wait: preemption shortens the CPU time it gets, by design. */
    uint32_t t0 = k_uptime_ticks();
    while (k_uptime_ticks() - t0 < ms)
        ;
}

void t_trigger_irq(k_isr_fn isr, void *arg)
{
    board_irq_trigger(0, isr, arg);
}

void t_trigger_irq_high(k_isr_fn isr, void *arg)
{
    board_irq_trigger(1, isr, arg);
}

bool t_nesting_supported(void)
{
    return board_irq_nesting();
}

static void ctrl_entry(void *arg)
{
    (void)arg;
    unsigned passed = 0, failed = 0;
#ifdef SELFTEST_FORCE_FAIL
    /* Build variant that proves a failure reaches the exit code (make test). */
    t_fail("forced failure", __LINE__);
    failed++;
#endif
    board_puts("selftest: kernel tests\n");
    for (unsigned i = 0; i < ktests_count; i++) {
        t_failed = 0;
        ktests[i].fn();
        if (t_failed) {
            failed++;
            board_puts("FAIL ");
            board_puts(ktests[i].name);
            board_puts(": line ");
            board_put_u32((uint32_t)t_fail_line);
            board_puts(": ");
            board_puts(t_fail_expr);
            board_puts("\n");
            /* Threads of a failed test may still hold stacks: stop here. */
            break;
        }
        passed++;
        board_puts("PASS ");
        board_puts(ktests[i].name);
        board_puts("\n");
    }
    board_puts(failed == 0 ? "selftest: PASS, " : "selftest: FAIL, ");
    board_put_u32(passed);
    board_puts(" of ");
    board_put_u32(ktests_count);
    board_puts(" tests passed\n");
    board_puts("selftest: controller stack unused bytes ");
    board_put_u32((uint32_t)(4u * k_thread_stack_unused(&ctrl)));
    board_puts("\n");
    board_exit(failed == 0 && passed == ktests_count ? 0 : 1);
}

int main(void)
{
    board_init();
    k_init();
    k_thread_create(&ctrl, "selftest", ctrl_entry, NULL, ctrl_stack, sizeof ctrl_stack, T_CTRL_PRIO,
                    0);
    k_start();
    return 0;
}

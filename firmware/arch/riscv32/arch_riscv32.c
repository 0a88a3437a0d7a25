/* SPDX-License-Identifier: BSD-2-Clause
 * RISC-V rv32 machine-mode port.
 *
 * Every handler runs on the interrupted thread's stack and a switch is decided
 * once, at the outermost trap's exit. With K_CONFIG_NESTING a handler opens
 * interrupts once its source cannot re-enter (riscv_nest_open): the timer after
 * re-arming the compare, the board's external handler after raising the interrupt
 * block's threshold; nested frames stack on the same stack and riscv_nest_depth
 * counts the handlers that opened. Without it, mstatus.MIE stays clear from trap
 * entry to mret. Kernel data is masked (arch_irq_lock) wherever it is touched, in
 * handlers as in threads. A thread gives up the CPU by calling trap.S's
 * riscv_switch_thread, without a trap, with interrupts open or masked; the masked
 * state travels with the thread in its saved mstatus.
 *
 * trap.S is the fast path: it saves what C may clobber, calls the handler
 * of the interrupt directly and completes the frame only for a switch. The
 * machine timer and the external interrupt come from the board
 * (riscv_board_* in riscv_board.h), so the port knows no addresses.
 */
#include "arch.h"
#include "kernel.h"
#include "riscv_board.h"

/* trap.S's copies of these (its stack canary check in the switch's window). */
_Static_assert(__builtin_offsetof(struct k_thread, stack_limit) == 44, "trap.S THREAD_STACK_LIMIT");
_Static_assert(__builtin_offsetof(struct k_thread, base_prio) == 33, "trap.S THREAD_BASE_PRIO");
_Static_assert(K_STACK_CANARY == 0xC0DEC0DEu && K_CONFIG_STACK_CANARY_WORDS == 4u,
               "trap.S STACK_CANARY, four words");

#define MIE_MTIE      (1u << 7)
#define MIE_MEIE      (1u << 11)
#define MSTATUS_MPP_M (3u << 11)
#define MSTATUS_MPIE  (1u << 7)

/* riscv_isr_depth, riscv_switch_pending, riscv_nest_depth: in trap.S (one cache line). */

/*
 * Timer state. Everything on the tick and idle paths is 32-bit except one
 * add-with-carry for the 64-bit compare value: no libgcc calls, no divide on the
 * tick path and at most one on a tickless idle exit (docs/kernel.md).
 */
static uint32_t cycles_per_tick;
static uint32_t tick_last_lo, tick_last_hi; /* mtime of the last announced tick boundary */
static uint32_t idle_ticks; /* != 0 while the timer is programmed for a tickless idle */
static uint32_t compare_hi; /* the high word of mtimecmp as last written */

static K_INLINE void tick_last_add(uint32_t cycles)
{
    uint32_t lo = tick_last_lo + cycles;
    tick_last_hi += lo < tick_last_lo;
    tick_last_lo = lo;
}

static K_INLINE void set_compare_after_last(uint32_t cycles)
{
    uint32_t lo = tick_last_lo + cycles;
    uint32_t hi = tick_last_hi + (lo < tick_last_lo);
    /* Same high word (all but once per 2^32 cycles): one write, no intermediate value. */
    if (hi == compare_hi) {
        riscv_board_set_mtimecmp_lo(lo);
    } else {
        compare_hi = hi;
        riscv_board_set_mtimecmp(hi, lo);
    }
}

K_COLD void arch_thread_init(struct k_thread *t, void *stack, size_t size)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)(ARCH_STACK_ALIGN - 1u);
    uint32_t *f = (uint32_t *)(top - RISCV_FRAME_BYTES);
    for (unsigned i = 0; i < RISCV_FRAME_BYTES / 4u; i++)
        f[i] = 0;
    /*
     * Marked as a call frame (bit 0, trap.S): the first switch to the thread loads
     * only its callee-saved registers, as for a thread that gave up the CPU, not the
     * caller-saved ones k_thread_entry does not use.
     */
    f[0] = (uint32_t)(uintptr_t)k_thread_entry | 1u;
    /* The thread starts with interrupts enabled (MPIE, the frame's second word). */
    f[1] = MSTATUS_MPP_M | MSTATUS_MPIE;
    /* gp and tp are not in the switched frame (trap.S): gp is the same for all. */
    t->arch.sp = f;
}

K_HOT void arch_switch_pend(void)
{
    if (riscv_isr_depth != 0) {
        riscv_switch_pending = 1;
        return;
    }
    riscv_switch_thread();
}

K_COLD void arch_start(void)
{
    riscv_board_start();
    uint32_t mie = MIE_MTIE | MIE_MEIE;
    __asm__ volatile("csrs mie, %0" : : "r"(mie) : "memory");
    /* The boot context is saved into a pseudo-thread that never runs again. */
    riscv_switch_thread();
    for (;;)
        ;
}

bool arch_in_isr(void)
{
    return riscv_isr_depth != 0;
}

K_HOT void arch_idle_wait(void)
{
    /*
     * Unmasked for the wait only: the interrupt is taken straight from wfi, not
     * after the idle thread's unlock. The idle thread holds nothing a handler
     * could change under it: a handler that wakes a thread switches away at its
     * trap exit (leaving tickless idle in k_sched_switch_hook), and when the idle
     * thread runs again it masks, returns, and recomputes its next wake-up.
     */
    __asm__ volatile("csrsi mstatus, 8\n\twfi\n\tcsrci mstatus, 8" : : : "memory");
}

K_COLD void arch_halt(uint32_t code, uint32_t detail)
{
    board_halt(code, detail);
}

/* ---- machine timer ---- */

void riscv_timer_irq(void)
{
    uint32_t n = 1;
    if (idle_ticks != 0) {
        n = idle_ticks;
        idle_ticks = 0;
        tick_last_add(n * cycles_per_tick); /* fits: arch_timer_set_idle bounds n */
    } else {
        tick_last_add(cycles_per_tick);
    }
    set_compare_after_last(cycles_per_tick);
    /*
     * Re-armed. A device interrupt may preempt the kernel's part (which masks around
     * its own data); the timer stays off until it is done: under a stimulus that keeps
     * the CPU busy, the kernel's part can take longer than a tick, and the next tick
     * must then wait for it instead of stacking on it (each one would, until the stack
     * overflowed: seen at 355 kHz on rtrig-soc).
     */
    struct riscv_nest nest = riscv_nest_open(RISCV_MIE_MTIE);
    k_tick_announce_from_isr(n);
    riscv_nest_close(nest);
}

K_COLD void arch_timer_start(void)
{
    cycles_per_tick = board_cpu_hz() / 1000u;
    uint64_t now = riscv_board_mtime();
    tick_last_lo = (uint32_t)now;
    tick_last_hi = (uint32_t)(now >> 32);
    idle_ticks = 0;
    compare_hi = ~tick_last_hi; /* differs: the first write sets both words */
    set_compare_after_last(cycles_per_tick);
}

/* K_WARM, as the kernel's idle exit: only idles longer than one tick come here. */
K_WARM void arch_timer_set_idle(uint32_t ticks)
{
    /* One tick: the periodic compare is already at the next boundary. */
    if (ticks <= 1u)
        return;
    /* Bound so ticks * cycles_per_tick, and the elapsed count at exit, fit 32 bits. */
    if (ticks > K_CONFIG_MAX_IDLE_TICKS)
        ticks = K_CONFIG_MAX_IDLE_TICKS;
    if (ticks > 0x7FFFFFFFu / cycles_per_tick)
        ticks = 0x7FFFFFFFu / cycles_per_tick;
    idle_ticks = ticks;
    set_compare_after_last(ticks * cycles_per_tick);
}

K_WARM uint32_t arch_timer_idle_exit(void)
{
    if (idle_ticks == 0)
        return 0;
    /* Wrap-safe 32-bit difference: less than idle_ticks ticks, which fit 31 bits. */
    uint32_t elapsed = riscv_board_mtime_lo() - tick_last_lo;
    uint32_t n = elapsed / cycles_per_tick; /* one divu: the only division, never on a tick */
    if (n >= idle_ticks) {
        n = idle_ticks - 1u; /* the idle interrupt itself will announce the last one */
        idle_ticks = 1u;
    } else {
        idle_ticks = 0;
    }
    tick_last_add(n * cycles_per_tick);
    if (idle_ticks == 0)
        set_compare_after_last(cycles_per_tick);
    return n;
}

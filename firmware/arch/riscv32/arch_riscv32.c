/*
 * RISC-V rv32 machine-mode port.
 *
 * Interrupts do not nest (mstatus.MIE is cleared on trap entry and restored by
 * mret), so every handler runs on the interrupted thread's stack and a switch
 * is decided once, at trap exit. A thread asks for a switch with ecall, which
 * traps synchronously even with interrupts masked; the masked state travels
 * with the thread in its saved mstatus.
 *
 * The machine timer and the external interrupt come from the board
 * (riscv_board_* below), so the port knows no addresses.
 */
#include "arch.h"
#include "kernel.h"
#include "riscv_board.h"

#define MCAUSE_INT    0x80000000u
#define IRQ_M_TIMER   7u
#define IRQ_M_EXT     11u
#define EXC_ECALL_M   11u
#define MIE_MTIE      (1u << 7)
#define MIE_MEIE      (1u << 11)
#define MSTATUS_MPP_M (3u << 11)
#define MSTATUS_MPIE  (1u << 7)

static volatile uint32_t isr_depth;
static volatile bool switch_pending;

static uint32_t cycles_per_tick;
static uint64_t tick_last;  /* mtime of the last announced tick boundary */
static uint32_t idle_ticks; /* != 0 while the timer is programmed for tickless idle */

static inline uint32_t csr_read_mcause(void)
{
    uint32_t v;
    __asm__ volatile("csrr %0, mcause" : "=r"(v) : : "memory");
    return v;
}

void arch_thread_init(struct k_thread *t, void *stack, size_t size)
{
    uintptr_t top = ((uintptr_t)stack + size) & ~(uintptr_t)(ARCH_STACK_ALIGN - 1u);
    uint32_t *f = (uint32_t *)(top - RISCV_FRAME_BYTES);
    for (unsigned i = 0; i < RISCV_FRAME_BYTES / 4u; i++)
        f[i] = 0;
    f[0] = (uint32_t)(uintptr_t)k_thread_entry;
    /* mret lands in machine mode with interrupts enabled. */
    f[2] = MSTATUS_MPP_M | MSTATUS_MPIE;
    uint32_t gp;
    __asm__ volatile("mv %0, gp" : "=r"(gp));
    f[3] = gp;
    t->arch.sp = f;
}

void arch_switch_pend(void)
{
    if (isr_depth != 0) {
        switch_pending = true;
        return;
    }
    __asm__ volatile("ecall" : : : "memory");
}

void arch_start(void)
{
    uint32_t mie = MIE_MTIE | MIE_MEIE;
    __asm__ volatile("csrs mie, %0" : : "r"(mie) : "memory");
    /* The boot context is saved into a pseudo-thread that never runs again. */
    __asm__ volatile("ecall" : : : "memory");
    for (;;)
        ;
}

bool arch_in_isr(void)
{
    return isr_depth != 0;
}

void arch_idle_wait(void)
{
    /* With MIE clear, wfi still wakes on a pending enabled interrupt: no lost wake-up. */
    __asm__ volatile("wfi" : : : "memory");
}

void arch_halt(uint32_t code, uint32_t detail)
{
    board_halt(code, detail);
}

/* ---- machine timer ---- */

static void timer_isr(void)
{
    uint32_t n = 1;
    if (idle_ticks != 0) {
        n = idle_ticks;
        idle_ticks = 0;
        tick_last += (uint64_t)n * cycles_per_tick;
    } else {
        tick_last += cycles_per_tick;
    }
    riscv_board_set_mtimecmp(tick_last + cycles_per_tick);
    k_tick_announce_from_isr(n);
}

void arch_timer_start(void)
{
    cycles_per_tick = board_cpu_hz() / 1000u;
    tick_last = riscv_board_mtime();
    idle_ticks = 0;
    riscv_board_set_mtimecmp(tick_last + cycles_per_tick);
}

void arch_timer_set_idle(uint32_t ticks)
{
    /* Bound so the elapsed cycle count still fits 32 bits at idle exit. */
    uint32_t max = 0xFFFFFFFFu / cycles_per_tick - 1u;
    if (ticks > max)
        ticks = max;
    idle_ticks = ticks;
    riscv_board_set_mtimecmp(tick_last + (uint64_t)ticks * cycles_per_tick);
}

uint32_t arch_timer_idle_exit(void)
{
    if (idle_ticks == 0)
        return 0;
    uint32_t elapsed = (uint32_t)(riscv_board_mtime() - tick_last);
    uint32_t n = elapsed / cycles_per_tick;
    if (n >= idle_ticks)
        n = idle_ticks - 1u; /* the idle interrupt itself will announce the last one */
    else
        idle_ticks = 0;
    tick_last += (uint64_t)n * cycles_per_tick;
    if (idle_ticks == 0)
        riscv_board_set_mtimecmp(tick_last + cycles_per_tick);
    else
        idle_ticks -= n;
    return n;
}

/* ---- trap dispatch ---- */

void *riscv_trap_handler(uint32_t *frame)
{
    uint32_t cause = csr_read_mcause();
    if (cause & MCAUSE_INT) {
        isr_depth = 1;
        switch (cause & ~MCAUSE_INT) {
        case IRQ_M_TIMER:
            timer_isr();
            break;
        case IRQ_M_EXT:
            riscv_board_ext_irq();
            break;
        default:
            k_panic(K_ERR_BAD_EXCEPTION, cause);
        }
        isr_depth = 0;
    } else if (cause == EXC_ECALL_M) {
        frame[0] += 4; /* resume after the ecall */
        switch_pending = true;
    } else {
        k_panic(K_ERR_BAD_EXCEPTION, cause);
    }
    if (!switch_pending)
        return frame;
    switch_pending = false;
    struct k_thread *out = k_current;
    out->arch.sp = frame;
    return k_sched_switch_hook(out)->arch.sp;
}

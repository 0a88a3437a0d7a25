/* SPDX-License-Identifier: BSD-2-Clause
 * The one trap entry (mtvec direct mode: VexRiscv ignores the vectored mode bits).
 *
 * Fast path. An interrupt saves only the registers a C function may clobber
 * (ra, t0..t6, a0..a7: 16 words) and calls its handler
 * directly: no trap decode in C, no table. The callee-saved registers (s0..s11; gp and
 * tp are the same for every thread) and mepc/mstatus are saved only when the trap
 * ends in a context switch or wakes an IST; without a switch the handler's C code has
 * preserved them.
 *
 * Nesting (K_CONFIG_NESTING=1): a handler may open interrupts once its source cannot
 * re-enter (the board's external handler raises the interrupt block's THRESHOLD to
 * the line's priority and keeps the timer off; the timer handler re-arms the compare
 * first). riscv_nest_open/close (riscv_board.h) keep mepc and mstatus, which a nested
 * trap overwrites, and put them back with interrupts closed again before the handler
 * returns, so this code finds them in their CSRs either way. riscv_nest_depth counts
 * the handlers that opened; a trap that ends while it is not 0 was nested and
 * returns into its handler, the outermost one switches. K_CONFIG_NESTING=0: MIE
 * stays clear from entry to mret.
 */
#include "k_config.h"
#include "k_trace.h"

#define FRAME 128

/* struct k_thread's stack_limit and base_prio, and the canary (K_STACK_CANARY,
 * K_CONFIG_STACK_CANARY_WORDS = 4): checked against the C side in arch_riscv32.c. */
#define THREAD_STACK_LIMIT 44
#define THREAD_BASE_PRIO   33
#define STACK_CANARY       0xC0DEC0DE

/*
 * The switch's windows (K_CONFIG_NESTING): interrupts open, the timer off, and
 * riscv_nest_depth set, so a trap taken in a window is a nested one: it leaves its
 * IST's wake-up to this code (riscv_ist_deferred) and returns without switching
 * (riscv_switch_pending tells this code, which looks at both after every window), and
 * nothing more can stack on it: at most one device interrupt's frame sits on a switch
 * frame. Closing clears both depths
 * (the trap taken in the window leaves riscv_isr_depth set). t0 and t1 are free
 * where they are used, and nothing in a window changes t1. Without nesting the
 * switch runs masked throughout.
 */
#define SWITCH_WINDOW 0x80                  /* riscv_nest_depth in a window (also mie.MTIE) */

#if K_CONFIG_NESTING
/* The trace hooks (t0, t1) sit next to the mstatus write, so a trace counts what
 * runs masked; with them, t1 is loaded again. */
#if TRACE_ASM_WINDOWS
#define WINDOW_T1_AGAIN li t1, SWITCH_WINDOW;
#else
#define WINDOW_T1_AGAIN
#endif
#define SWITCH_OPEN                                                                                \
    li      t1, SWITCH_WINDOW;      /* mie.MTIE, still in t1 at SWITCH_CLOSE */                   \
    csrc    mie, t1;                                                                               \
    sw      t1, riscv_nest_depth, t0;                                                              \
    TRACE_ASM_TRAP_UNMASK                                                                          \
    WINDOW_T1_AGAIN                                                                                \
    csrsi   mstatus, 8;
#define SWITCH_CLOSE                                                                               \
    csrci   mstatus, 8;                                                                            \
    TRACE_ASM_TRAP_MASK                                                                            \
    WINDOW_T1_AGAIN                                                                                \
    csrs    mie, t1;                                                                               \
    sw      zero, riscv_nest_depth, t0;                                                            \
    sw      zero, riscv_isr_depth, t0;
/* After SWITCH_CLOSE: an IST that a trap taken in the window deferred, woken at .Lsignal. */
#define DEFERRED_CHECK                                                                             \
    lw      a0, riscv_ist_deferred;                                                                \
    bnez    a0, .Lsignal;
#else
#define SWITCH_OPEN
#define SWITCH_CLOSE csrci mstatus, 8; sw zero, riscv_isr_depth, t0;
#define DEFERRED_CHECK
#endif

/*
 * The frame's layout (byte offsets). What a switch to a thread that gave up the CPU
 * itself (riscv_switch_thread) loads comes first, in 56 bytes: mepc, mstatus and the
 * callee-saved registers, two or three D-cache lines of 32 bytes instead of four or
 * five spread over the whole frame. The caller-saved registers follow.
 */
#define F_MEPC    0
#define F_MSTATUS 4
#define F_S0      8                         /* s0, s1 */
#define F_S2      16                        /* s2..s11 */
#define F_T0      56
#define F_T1      60
#define F_RA      64
#define F_T2      68
#define F_A0      72                        /* a0..a7 */
#define F_T3      104                       /* t3..t6; 120..127 unused */

/* The caller-saved part of the frame, but t0 and t1 (stored first and loaded last: the
 * trace hooks use them): ra, t2, a0..a7, t3..t6. */
#define SAVE_CALLER                                                                                \
    sw      x1, F_RA(sp);                                                                          \
    sw      x7, F_T2(sp);                                                                          \
    sw      x10, F_A0(sp);                                                                         \
    sw      x11, F_A0 + 4(sp);                                                                     \
    sw      x12, F_A0 + 8(sp);                                                                     \
    sw      x13, F_A0 + 12(sp);                                                                    \
    sw      x14, F_A0 + 16(sp);                                                                    \
    sw      x15, F_A0 + 20(sp);                                                                    \
    sw      x16, F_A0 + 24(sp);                                                                    \
    sw      x17, F_A0 + 28(sp);                                                                    \
    sw      x28, F_T3(sp);                                                                         \
    sw      x29, F_T3 + 4(sp);                                                                     \
    sw      x30, F_T3 + 8(sp);                                                                     \
    sw      x31, F_T3 + 12(sp);
#define LOAD_CALLER                                                                                \
    lw      x1, F_RA(sp);                                                                          \
    lw      x7, F_T2(sp);                                                                          \
    lw      x10, F_A0(sp);                                                                         \
    lw      x11, F_A0 + 4(sp);                                                                     \
    lw      x12, F_A0 + 8(sp);                                                                     \
    lw      x13, F_A0 + 12(sp);                                                                    \
    lw      x14, F_A0 + 16(sp);                                                                    \
    lw      x15, F_A0 + 20(sp);                                                                    \
    lw      x16, F_A0 + 24(sp);                                                                    \
    lw      x17, F_A0 + 28(sp);                                                                    \
    lw      x28, F_T3(sp);                                                                         \
    lw      x29, F_T3 + 4(sp);                                                                     \
    lw      x30, F_T3 + 8(sp);                                                                     \
    lw      x31, F_T3 + 12(sp);

/* The callee-saved part of the frame (s0..s11). */
#define SAVE_CALLEE                                                                                \
    sw      x8, F_S0(sp);                                                                          \
    sw      x9, F_S0 + 4(sp);                                                                      \
    sw      x18, F_S2(sp);                                                                         \
    sw      x19, F_S2 + 4(sp);                                                                     \
    sw      x20, F_S2 + 8(sp);                                                                     \
    sw      x21, F_S2 + 12(sp);                                                                    \
    sw      x22, F_S2 + 16(sp);                                                                    \
    sw      x23, F_S2 + 20(sp);                                                                    \
    sw      x24, F_S2 + 24(sp);                                                                    \
    sw      x25, F_S2 + 28(sp);                                                                    \
    sw      x26, F_S2 + 32(sp);                                                                    \
    sw      x27, F_S2 + 36(sp);
#define LOAD_CALLEE                                                                                \
    lw      x8, F_S0(sp);                                                                          \
    lw      x9, F_S0 + 4(sp);                                                                      \
    lw      x18, F_S2(sp);                                                                         \
    lw      x19, F_S2 + 4(sp);                                                                     \
    lw      x20, F_S2 + 8(sp);                                                                     \
    lw      x21, F_S2 + 12(sp);                                                                    \
    lw      x22, F_S2 + 16(sp);                                                                    \
    lw      x23, F_S2 + 20(sp);                                                                    \
    lw      x24, F_S2 + 24(sp);                                                                    \
    lw      x25, F_S2 + 28(sp);                                                                    \
    lw      x26, F_S2 + 32(sp);                                                                    \
    lw      x27, F_S2 + 36(sp);

/*
 * The port's interrupt state, in one 32-byte cache line: the entry loads only the
 * direct ISR and otherwise stores, the exit loads (a load at entry could wait for a
 * D-cache refill before the ISR; the direct ISR's pointer is loaded anyway).
 *   riscv_isr_depth       not 0 while a handler runs (arch_in_isr)
 *   riscv_switch_pending  set by arch_switch_pend in a handler
 *   riscv_nest_depth      handlers that opened interrupts (riscv_nest_open/close);
 *                         SWITCH_WINDOW while a switch's window is open
 *   riscv_ist_deferred    an interrupt id whose IST a nested trap left to the
 *                         outermost one to wake, or 0
 *   riscv_ext_direct      the one external source's ISR, or 0 (riscv_board.h)
 *   riscv_ext_direct_arg  its argument
 */
    .section .sbss.riscv_irq_state, "aw", @nobits
    .align  5
    .globl  riscv_isr_depth, riscv_switch_pending, riscv_nest_depth, riscv_ist_deferred
    .globl  riscv_ext_direct, riscv_ext_direct_arg
riscv_isr_depth:
    .zero   4
riscv_switch_pending:
    .zero   4
riscv_nest_depth:
    .zero   4
riscv_ist_deferred:
    .zero   4
riscv_ext_direct:
    .zero   4
riscv_ext_direct_arg:
    .zero   4

    .section .text.trap, "ax"
    .align  4
    .globl  riscv_trap_entry
riscv_trap_entry:
    addi    sp, sp, -FRAME
    sw      x5, F_T0(sp)              /* t0, t1 first: the trace hook may use them */
    sw      x6, F_T1(sp)
    TRACE_ASM_TRAP_ENTER
    csrr    t0, mcause
    SAVE_CALLER                     /* (mcause read meanwhile) */
    bgez    t0, .Lfatal             /* bit 31 clear: an exception (threads switch by call) */
    lw      t2, riscv_ext_direct    /* loaded early: used after the decode */
    sw      sp, riscv_isr_depth, t1 /* not 0: arch_in_isr() while the handler runs */
    andi    t0, t0, 0x1F
    li      t1, 11                  /* machine external interrupt */
    bne     t0, t1, .Lnot_ext
    /*
     * One source attached (riscv_ext_direct, riscv_board.h): its ISR is called from
     * here, without the board's handler in between. a0: its interrupt id, whose IST
     * riscv_board_signal wakes after the board's own work (in the switch's window,
     * or later for a nested trap); an ISR that wakes none gets that work at once
     * (.Ldirect_nop). The other cases (.Lext_board, .Lnot_ext) follow .Lreturn.
     */
    beqz    t2, .Lext_board
    TRACE_ASM_DISPATCH
    lw      a0, riscv_ext_direct_arg
    jalr    t2
    beqz    a0, .Ldirect_nop
.Lint_done:
    /* mepc read early (the loads meanwhile), into the frame at .Lwake_mepc. */
#if K_CONFIG_NESTING
    /* Taken inside a handler that opened interrupts: return to it, no switch. */
    lw      t0, riscv_nest_depth
    csrr    t1, mepc
    bnez    t0, .Lnested
#else
    csrr    t1, mepc
#endif
    beqz    a0, .Lno_ist            /* an IST to wake: straight on */
.Lwake_mepc:
    /*
     * Complete the outgoing frame, make the scheduler's choice, load its frame. From
     * .Lint_done with a0 an interrupt id: first wake its IST (below). t1: mepc.
     */
    sw      t1, F_MEPC(sp)
    csrr    t0, mstatus             /* MPIE: the thread's own interrupt mask */
    sw      t0, F_MSTATUS(sp)
    /*
     * With mepc and mstatus in the frame, the callee-saved registers are stored with
     * interrupts open (SWITCH_OPEN .. SWITCH_CLOSE), once a switch is known to follow
     * (.Lstore). gp and tp are not switched: gp is the same for every thread and the
     * kernel keeps no thread-local storage.
     */
    SWITCH_OPEN
.Lsignal_open:
    beqz    a0, .Lstore
    /*
     * The ISR returned an interrupt id: its IST is woken here, in the window
     * (k_isr_signal masks only around the kernel's lists). riscv_isr_depth is set, so
     * a switch the wake-up asks for is pended, and the frame is completed at .Lstore;
     * without one, the C code has kept the callee-saved registers and the trap
     * returns. An IST deferred by a trap taken meanwhile is woken after the window
     * closes (.Lsignal), or before the choice (.Lsaved).
     */
    call    riscv_board_signal      /* k_isr_signal after the board's open work */
    lw      t0, riscv_switch_pending
    li      t1, SWITCH_WINDOW
    bnez    t0, .Lstore
#if K_CONFIG_NESTING
    /*
     * SWITCH_CLOSE, reading riscv_isr_depth before it clears it: still sp unless a
     * trap was taken in the window (each trap's entry writes its own sp there), which
     * changed mepc and mstatus (.Lwindow_trapped puts them back). Without one, both
     * CSRs are the trap's own still, and no IST can have been deferred.
     */
    csrci   mstatus, 8
    TRACE_ASM_TRAP_MASK
    WINDOW_T1_AGAIN
    lw      t2, riscv_isr_depth
    lw      a0, riscv_ist_deferred
    csrs    mie, t1
    sw      zero, riscv_nest_depth, t0
    sw      zero, riscv_isr_depth, t0
    bne     t2, sp, .Lwindow_trapped
#else
    SWITCH_CLOSE
#endif
.Lreturn:
    LOAD_CALLER
    TRACE_ASM_TRAP_EXIT             /* t0, t1 last: the trace hook may use them */
    lw      x5, F_T0(sp)
    lw      x6, F_T1(sp)
    addi    sp, sp, FRAME
    mret

#if K_CONFIG_NESTING
.Lwindow_trapped:
    lw      t0, F_MEPC(sp)
    csrw    mepc, t0
    lw      t0, F_MSTATUS(sp)
    csrw    mstatus, t0
    bnez    a0, .Lsignal            /* the IST that trap deferred */
    j       .Lreturn
#endif

.Lno_ist:
#if K_CONFIG_NESTING
    lw      a0, riscv_ist_deferred  /* a nested trap's IST, left to this one */
    bnez    a0, .Lwake_deferred
#endif
    sw      zero, riscv_isr_depth, t0
    lw      t0, riscv_switch_pending
    beqz    t0, .Lreturn
.Lswitch:                           /* a0 is 0 here */
#if K_CONFIG_NESTING
.Lwake_deferred:                    /* a0: the IST a nested trap deferred */
    sw      zero, riscv_ist_deferred, t0 /* (0 already from .Lswitch) */
#endif
.Lwake:
    csrr    t1, mepc
    j       .Lwake_mepc

.Ldirect_nop:
    call    riscv_board_signal      /* K_SYSINTR_NOP: the board's work only */
    li      a0, 0
    j       .Lint_done
.Lext_board:
    call    riscv_board_ext_irq     /* a0: an interrupt id whose IST to wake, or 0 */
    j       .Lint_done
.Lnot_ext:
    li      t1, 7                   /* machine timer interrupt */
    bne     t0, t1, .Lfatal
    call    riscv_timer_irq
    li      a0, 0
    j       .Lint_done

#if K_CONFIG_NESTING
.Lnested:
    /*
     * Taken in a switch's window or in a handler that opened: the IST is left to the
     * outermost trap, which wakes it with interrupts open (riscv_ist_deferred, one at
     * a time) before it switches: the switch happens there anyway. With one already
     * deferred: woken here, masked like the handler.
     */
    beqz    a0, .Lreturn
    lw      t0, riscv_ist_deferred
    bnez    t0, 1f
    sw      a0, riscv_ist_deferred, t0
    j       .Lreturn
1:  call    riscv_board_signal
    j       .Lreturn
#endif

.Lstore:
    /*
     * A switch is due: the outgoing thread's stack canary (ARCH_SWITCH_CHECKS_STACK:
     * here, in the window, instead of masked in k_sched_switch_hook, where the bottom
     * of a stack is a cold D-cache line), but the idle thread's: it checks its own
     * before each wait (ARCH_IDLE_CHECK_STACK), so the first thread after idle (the
     * IST, typically) does not wait for that line. Then its callee-saved registers,
     * which the C code called in the window has preserved. A wake-up that asks for no
     * switch (an IST of the running thread's priority or below) does neither. Frames a
     * trap taken after this point stacks on the thread are checked at its next switch,
     * as before. ra is free here (saved in an interrupt's frame, clobbered for
     * riscv_switch_thread's caller); t1 stays SWITCH_WINDOW. riscv_switch_thread
     * comes here too, in its window, with the frame's mepc and mstatus written.
     */
    lw      t0, k_current
    la      t2, k_idle_thread
    beq     t0, t2, 2f
    jal     riscv_check_stack
2:
    SAVE_CALLEE
.Lsaved:
#if K_CONFIG_NESTING
    /*
     * SWITCH_CLOSE. A switch is due here (asked for, or a thread's own). An IST
     * deferred meanwhile is woken first; the switch must still follow whatever that
     * wake-up decides (a thread that blocked must not simply be resumed), so it is
     * pended again.
     */
    csrci   mstatus, 8
    TRACE_ASM_TRAP_MASK
    WINDOW_T1_AGAIN
    lw      a0, riscv_ist_deferred
    csrs    mie, t1
    sw      zero, riscv_nest_depth, t0
    sw      zero, riscv_isr_depth, t0
    bnez    a0, .Lsaved_deferred
#else
    SWITCH_CLOSE
#endif
.Lchoose:
    lw      a0, k_current
    sw      zero, riscv_switch_pending, t0
    sw      sp, 0(a0)               /* struct k_thread starts with arch.sp */
    call    k_sched_switch_hook     /* returns the incoming thread */
    lw      sp, 0(a0)
    LOAD_CALLEE
    lw      t0, F_MEPC(sp)
    andi    t1, t0, 1               /* 1: the incoming thread switched by call */
    beqz    t1, .Lload_preempted
.Lload_call:
    /*
     * riscv_switch_thread's frame (or a new thread's first, arch_thread_init): its
     * caller-saved registers are the call's to clobber, so t2 and t3 are free. No
     * mret: a jump to the saved pc, interrupts opened just before it if the thread
     * had them open (MPIE). An interrupt taken between the two is an outermost one
     * on the thread's own stack.
     */
    xor     t2, t0, t1              /* the resume address, without the mark */
    lw      t3, F_MSTATUS(sp)
    andi    t3, t3, 0x80            /* MPIE */
    TRACE_ASM_TRAP_EXIT
    addi    sp, sp, FRAME
    beqz    t3, 1f
    csrsi   mstatus, 8
1:  jr      t2

.Lload_preempted:
    /*
     * A thread that an interrupt preempted: its caller-saved registers are loaded in
     * a window. A trap taken there may ask for another switch; the frame at sp is
     * still whole, so the choice is simply made again. Its mepc and mstatus go to the
     * CSRs before an IST deferred meanwhile is woken (.Lsignal): a window's end
     * without a switch finds them there, as in the thread's own trap.
     */
    SWITCH_OPEN
    LOAD_CALLER
    SWITCH_CLOSE
    lw      t0, F_MEPC(sp)
    csrw    mepc, t0
    lw      t0, F_MSTATUS(sp)
    csrw    mstatus, t0
    DEFERRED_CHECK
    lw      t0, riscv_switch_pending
    bnez    t0, .Lchoose
    TRACE_ASM_TRAP_EXIT
    lw      x5, F_T0(sp)
    lw      x6, F_T1(sp)
    addi    sp, sp, FRAME
    mret

#if K_CONFIG_NESTING
.Lsaved_deferred:
    li      t0, 1
    sw      t0, riscv_switch_pending, t1
.Lsignal:
    /*
     * Masked, the frame at sp whole (stored, or just loaded into the registers), a0
     * an IST that a trap taken in a window deferred: wake it in a window of its own,
     * as at .Lwake, then switch or return. Where it may return without a switch
     * (.Lwindow_trapped, .Lload_preempted), the frame's mepc and mstatus are in the
     * CSRs already.
     */
    sw      zero, riscv_ist_deferred, t0
    sw      sp, riscv_isr_depth, t0
    SWITCH_OPEN
    j       .Lsignal_open
#endif


/*
 * riscv_switch_thread: a thread gives up the CPU (arch_switch_pend outside a handler,
 * and arch_start for the boot context), without a trap. Called as a C function, it
 * returns to its caller when the thread is switched back to. Its frame holds no
 * caller-saved registers (bit 0 of the saved mepc, the return address, marks it) and
 * the caller's MIE as MPIE (a caller holding an outer lock resumes masked); the
 * canary and s0..s11 are stored (.Lstore) in a window, with interrupts as the caller
 * had them, and the choice is made masked from SWITCH_CLOSE on. A trap taken in the
 * window is nested, as in a trap's switch: it defers its IST, which .Lsaved wakes
 * before the choice. Before the window an interrupt may switch away and back.
 */
    .globl  riscv_switch_thread
riscv_switch_thread:
    csrr    t2, mstatus             /* the caller's MIE, kept in the frame below */
#if K_CONFIG_NESTING
    /*
     * A window, as a trap's switch opens (interrupts as the caller had them), before
     * the frame is claimed: the timer off and riscv_nest_depth set, so an interrupt
     * taken from here on runs masked to its mret and defers its IST (.Lsaved wakes
     * it): one device frame at most on this frame, never a tick's with more nested
     * on it (an overload at 177 kHz overflowed LOAD's 512-byte stack without this).
     */
    li      t1, SWITCH_WINDOW
    csrc    mie, t1
    sw      t1, riscv_nest_depth, t0
#else
    csrci   mstatus, 8              /* without nesting the switch runs masked */
#endif
    addi    sp, sp, -FRAME
    ori     t0, ra, 1
    sw      t0, F_MEPC(sp)
    andi    t2, t2, 8               /* MIE */
    slli    t2, t2, 4               /* as MPIE: all that .Lload_call reads of it */
    sw      t2, F_MSTATUS(sp)
    j       .Lstore                 /* the canary, s0..s11; masked from SWITCH_CLOSE */

/*
 * riscv_check_stack: the canary of the thread at t0 (K_ERR_STACK_OVERFLOW if it is
 * not whole); uses t2..t6 only, returns through ra. From the switch's window, and
 * from the idle thread's loop (ARCH_IDLE_CHECK_STACK in arch_port.h).
 */
    .globl  riscv_check_stack
riscv_check_stack:
    lw      t2, THREAD_STACK_LIMIT(t0)
    li      t3, STACK_CANARY        /* (the load meanwhile) */
    beqz    t2, 1f                  /* no canary (the boot context) */
    lw      t4, 0(t2)
    lw      t5, 4(t2)
    lw      t6, 8(t2)
    lw      t2, 12(t2)
    xor     t4, t4, t3
    xor     t5, t5, t3
    xor     t6, t6, t3
    xor     t2, t2, t3
    or      t4, t4, t5
    or      t6, t6, t2
    or      t4, t4, t6
    bnez    t4, .Lstack_overflow
1:  ret

.Lstack_overflow:
    lbu     a1, THREAD_BASE_PRIO(t0)
    li      a0, 0xE1                /* K_ERR_STACK_OVERFLOW */
    call    k_panic                 /* does not return */

.Lfatal:
    li      a0, 0xE3                /* K_ERR_BAD_EXCEPTION */
    csrr    a1, mcause
    call    k_panic                 /* does not return */

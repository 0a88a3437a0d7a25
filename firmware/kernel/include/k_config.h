/* SPDX-License-Identifier: BSD-2-Clause */
/* Compile-time configuration; override with -D on the compiler command line. */
#ifndef K_CONFIG_H
#define K_CONFIG_H

#define K_NUM_PRIO 256u

/* Default round-robin quantum for new threads that pass K_QUANTUM_DEFAULT. */
#ifndef K_CONFIG_DEFAULT_QUANTUM_MS
#define K_CONFIG_DEFAULT_QUANTUM_MS 100u
#endif
#define K_QUANTUM_DEFAULT 0xFFFFFFFFu

/* 1 = K_ASSERT checks; 0 compiles every check out. */
#ifndef K_CONFIG_ASSERT
#define K_CONFIG_ASSERT 1
#endif

/* Canary words at the low end of every stack, checked on each context switch. */
#ifndef K_CONFIG_STACK_CANARY_WORDS
#define K_CONFIG_STACK_CANARY_WORDS 4u
#endif
#define K_STACK_CANARY 0xC0DEC0DEu
/* The rest of a new stack is filled with this, so unused depth can be measured. */
#define K_STACK_FILL 0x5A5A5A5Au

/* Longest tickless idle sleep; the arch may clamp it further (SysTick is 24 bit). */
#ifndef K_CONFIG_MAX_IDLE_TICKS
#define K_CONFIG_MAX_IDLE_TICKS 10000u
#endif

/*
 * Nested interrupts. 1: a port that supports it (riscv32 with rtrig-soc's
 * prioritised interrupt block; Cortex-M nests through the NVIC either way) runs an
 * interrupt's handler with interrupts enabled once the entry state is saved, so a
 * higher-priority interrupt preempts it; the kernel masks only around its own data.
 * 0: handlers run masked from trap entry to return (the riscv32 port before).
 */
/* Test-only: a linear-time ready search (1) in place of the O(1) one, so the suite's
 * thread-switch scaling check can be seen to fail (docs/suite.md). */
#ifndef K_CONFIG_SCHED_LINEAR
#define K_CONFIG_SCHED_LINEAR 0
#endif

#ifndef K_CONFIG_NESTING
#define K_CONFIG_NESTING 1
#endif

/*
 * The idle thread's stack. With nesting, interrupts taken from idle stack their
 * frames on it: tick (128-byte frame and ~64 bytes of C) plus a device interrupt
 * (128 and ~80) and the idle loop's own ~32 fit 512 bytes (docs/kernel.md).
 */
#ifndef K_CONFIG_IDLE_STACK_WORDS
#define K_CONFIG_IDLE_STACK_WORDS 128u
#endif

#if defined(__GNUC__)
#define K_NORETURN __attribute__((noreturn))
#else
#define K_NORETURN
#endif

/*
 * Code that runs once or never on a measured path (start-up, creation, panic,
 * console). A port whose instruction cache is small puts it apart (rtrig-soc's
 * link.ld: section .coldtext, after everything else) so that the hot paths fit
 * the cache together and never evict each other.
 */
#ifndef K_COLD
#if defined(__GNUC__) && defined(K_COLD_SECTION)
#define K_COLD __attribute__((section(K_COLD_SECTION), noinline))
#else
#define K_COLD
#endif
#endif

/*
 * Kernel code off the measured interrupt, tick and switch paths but not rare
 * (waking every waiter of a manual-reset event, a contended mutex's hand-over):
 * rtrig-soc's link.ld puts it after the hot code, before the cold code.
 */
#ifndef K_WARM
#if defined(__GNUC__) && defined(K_WARM_SECTION)
#define K_WARM __attribute__((section(K_WARM_SECTION), noinline))
#else
#define K_WARM
#endif
#endif

/*
 * The hottest code: the switch, the yield, blocking and the IST hand-off. A port
 * whose instruction cache is smaller than a program's hot code places it first and
 * in one piece (riscv32: with the trap entry, arch_port.h), so these paths do not
 * evict each other whatever the program adds after them; a program can mark its own
 * code on those paths K_HOT too.
 */
#ifndef K_HOT
#define K_HOT
#endif

/*
 * Small helpers on the interrupt and switch paths (list links, the interrupt
 * mask, the ready bitmap): always inlined, also at -Os, where a call, its
 * register saves and its return cost more than the helper's body.
 */
#ifndef K_INLINE
#if defined(__GNUC__)
#define K_INLINE inline __attribute__((always_inline))
#else
#define K_INLINE inline
#endif
#endif

/*
 * The rare side of a branch on a hot path (a wake-up with no waiter, a waiter with a
 * timeout, a decision left to a search): a hint to lay the common side out first, so
 * that it runs straight on (a taken branch costs the SoC's CPU cycles a not-taken
 * one does not).
 */
#if defined(__GNUC__)
#define K_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define K_UNLIKELY(x) (x)
#endif

#endif /* K_CONFIG_H */

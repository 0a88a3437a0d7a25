/*
 * Trace hooks. Each one compiles to nothing unless the program provides a
 * header (passed as -DK_TRACE_HEADER='"file.h"') that defines it. The rig test
 * programs turn them into marker GPIO writes so the rig can time kernel paths
 * from outside, with no instrumentation cost when unused.
 */
#ifndef K_TRACE_H
#define K_TRACE_H

#ifdef K_TRACE_HEADER
#include K_TRACE_HEADER
#endif

#ifndef TRACE_ISR_ENTER
#define TRACE_ISR_ENTER() ((void)0)
#endif
#ifndef TRACE_ISR_EXIT
#define TRACE_ISR_EXIT() ((void)0)
#endif
#ifndef TRACE_TICK_ENTER
#define TRACE_TICK_ENTER() ((void)0)
#endif
#ifndef TRACE_TICK_EXIT
#define TRACE_TICK_EXIT() ((void)0)
#endif
/* Called inside the context switch with interrupts masked. */
#ifndef TRACE_SWITCH
#define TRACE_SWITCH(from, to) ((void)0)
#endif
#ifndef TRACE_IDLE_ENTER
#define TRACE_IDLE_ENTER() ((void)0)
#endif
#ifndef TRACE_IDLE_EXIT
#define TRACE_IDLE_EXIT() ((void)0)
#endif

#endif /* K_TRACE_H */
